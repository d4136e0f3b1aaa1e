package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/cache/report"
	"github.com/inspect-dev/inspect/graphjson"
	"github.com/inspect-dev/inspect/mermaid"
	"github.com/inspect-dev/inspect/mermaid/render"
)

// graphFormats are the values of `inspect graph --format`, in help order.
var graphFormats = []string{"mermaid", "dot", "svg", "png", "json"}

// GraphOptions are the inputs of `inspect graph`.
type GraphOptions struct {
	F      *Factory
	RunRef string // [FILE.db:]RUN; "latest" by default
	Format string // one of graphFormats
	Output string // -o FILE; "" = stdout
	Full   bool   // draw every node, no collapsing

	FormatSet bool // --format was given (else -o's extension may choose it)
}

// NewCmdGraph builds `inspect graph`. runF replaces the action in tests.
func NewCmdGraph(f *Factory, runF func(*GraphOptions) error) *cobra.Command {
	opts := &GraphOptions{F: f}
	cmd := &cobra.Command{
		Use:   "graph [RUN]",
		Short: "Draw a run as Mermaid, DOT, SVG, PNG or JSON",
		Long: `Draw a recorded run (default: the latest) as a Mermaid flowchart: header
comments with the run, its agents, tokens, which join waited for which
branches and the tool counts, then one box per node — n<seq> as every inspect
command names it — with each fork's branches as subgraphs, the slowest branch
of each fork marked and failed nodes and branches in the error style. The
calls one response made at once, in an imported run of a stack that runs
them so (Claude Code, Codex, Kimi, the Agents SDK, OpenTelemetry apps), are
drawn side by side in a subgraph p<seq> from their response; past five, the
first four and one box for the rest with their count.

A large run is collapsed to stay under GitHub's Mermaid limits (500 edges,
50,000 characters): repeated calls fold into one box ("read_file x12"), deep
and large branches into a summary, and the middle of a very long conversation
into a gap; a %% line says what was collapsed. --full draws every node.

--format dot prints Graphviz DOT (branches as clusters); svg and png render
that DOT with Graphviz and need -o FILE or a redirected stdout. --format json
prints the whole graph (never collapsed) in the schema of docs/graph-json.md.
Without --format, the extension of -o FILE chooses it (.mmd, .dot, .svg,
.png, .json; any other is Mermaid); a --format that disagrees with the
extension is refused.

Open one node in full with: inspect show n<seq>.`,
		Example: `  inspect graph                          # Mermaid of the latest run
  inspect graph 7f3a > run.mmd
  inspect graph -o run.png                 # the extension chooses the format
  inspect graph --format svg > run.svg
  inspect graph --format json | jq '.forks[].slowest'
  inspect graph --full base.db:latest`,
		Args:              rangeArgs(0, 1),
		ValidArgsFunction: runArgsCompletion(f, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.RunRef = runArg(args)
			opts.FormatSet = cmd.Flags().Changed("format")
			if runF != nil {
				return runF(opts)
			}
			return graphRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Format, "format", "f", "mermaid", "output `FORMAT`: "+strings.Join(graphFormats, ", "))
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "write to `FILE` instead of stdout; its extension (.mmd, .dot, .svg, .png, .json) chooses the format when --format is not given")
	cmd.Flags().BoolVar(&opts.Full, "full", false, "draw every node: no collapsing (the chart may exceed GitHub's limits)")
	_ = cmd.RegisterFlagCompletionFunc("format", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return graphFormats, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// graphExts maps an -o file's extension to the format it holds.
var graphExts = map[string]string{
	".mmd": "mermaid", ".mermaid": "mermaid", ".dot": "dot", ".gv": "dot",
	".svg": "svg", ".png": "png", ".json": "json",
}

// validate checks the options. Without --format (FormatSet false), -o FILE's extension chooses the format (run.png is a PNG);
// with it, an extension that names another format is refused rather than
// writing Mermaid text into run.png.
func (o *GraphOptions) validate() error {
	if ext := strings.ToLower(filepath.Ext(o.Output)); o.Output != "" && o.Output != "-" {
		if f, ok := graphExts[ext]; ok && f != o.Format {
			if o.FormatSet {
				return Usagef("-o %s holds %s but --format is %s; drop --format (the extension chooses it), or name the file for the format (run%s)", o.Output, f, o.Format, formatExt(o.Format))
			}
			o.Format = f
		}
		if err := outputDir(o.Output); err != nil {
			return err
		}
	}
	known := false
	for _, f := range graphFormats {
		known = known || f == o.Format
	}
	if !known {
		return Usagef("--format %q is not one of %s", o.Format, strings.Join(graphFormats, ", "))
	}
	if (o.Format == "svg" || o.Format == "png") && o.Output == "" && o.F.IO.OutTTY {
		return Usagef("--format %s writes an image: give -o FILE or redirect stdout (inspect graph --format %s -o run.%s)", o.Format, o.Format, o.Format)
	}
	return nil
}

// formatExt is the usual extension of a graph format.
func formatExt(format string) string {
	if format == "mermaid" {
		return ".mmd"
	}
	return "." + format
}

// outputDir refuses an -o path whose folder is not there (an input error,
// exit 2) before anything is rendered.
func outputDir(path string) error {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return Usagef("-o %s: there is no folder %s; create it or write elsewhere", path, dir)
	case !fi.IsDir():
		return Usagef("-o %s: %s is not a folder", path, dir)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return Usagef("-o %s is a folder; give a file name (e.g. %s)", path, filepath.Join(path, "run.mmd"))
	}
	return nil
}

func graphRun(ctx context.Context, opts *GraphOptions) error {
	if err := opts.validate(); err != nil {
		return err
	}
	run, rep, err := graphCache(ctx, opts.F, opts.RunRef)
	if err != nil {
		return err
	}
	g := run.Graph
	cfg := &mermaid.Config{Full: opts.Full, Notes: report.Notes(rep)}
	var buf bytes.Buffer
	switch opts.Format {
	case "mermaid":
		err = cfg.Fprint(&buf, g)
	case "json":
		err = graphjson.Fprint(&buf, g)
	case "dot":
		err = cfg.FprintDOT(&buf, g)
	case "svg", "png":
		var dot bytes.Buffer
		if err = cfg.FprintDOT(&dot, g); err != nil {
			break
		}
		if opts.Format == "svg" {
			err = render.SVG(ctx, dot.Bytes(), &buf)
		} else {
			err = render.PNG(ctx, dot.Bytes(), &buf)
		}
	default:
		panic("internal error: unhandled format " + opts.Format)
	}
	if err != nil {
		return err
	}
	return writeOutput(opts.F, opts.Output, buf.Bytes(), opts.Format == "mermaid" || opts.Format == "dot")
}

// writeOutput writes b to path, or to stdout when path is "" or "-":
// through the terminal sanitizer when it is text for people.
func writeOutput(f *Factory, path string, b []byte, human bool) error {
	if path == "" || path == "-" {
		w := f.IO.Data()
		if human {
			w = f.IO.Out
		}
		_, err := w.Write(b)
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ENOTDIR) {
			// a path the user can fix: input, not a failure of inspect
			return Usagef("cannot write -o %s (%v); give a path in a folder you can write to", path, errors.Unwrap(err))
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
