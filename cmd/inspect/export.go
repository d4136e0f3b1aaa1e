package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/otel"
	"github.com/inspect-dev/inspect/store"
)

// ExportOptions are the inputs of `inspect export`.
type ExportOptions struct {
	F      *Factory
	Run    string   // run reference (default latest)
	Runs   []string // every run reference given (db: all of them)
	Format string   // otlp or db; "" = db when Output ends in .db, else otlp
	Output string   // file; "-" or "" = stdout (otlp only)
}

// NewCmdExport builds `inspect export`. runF replaces the action in tests.
func NewCmdExport(f *Factory, runF func(*ExportOptions) error) *cobra.Command {
	opts := &ExportOptions{F: f}
	cmd := &cobra.Command{
		Use:   "export [RUN...]",
		Short: "Write runs to a new database file, or a run as an OpenTelemetry trace (OTLP/JSON)",
		Long: `With -o FILE.db (or --format db), write the runs named (default latest) to a
new inspect database holding just those runs, with their project snapshots,
exact requests, asks and tags: to share them, or to commit as a CI baseline
(inspect diff baseline.db:latest latest). inspect import FILE.db merges such
a file into another database. A run still being recorded is left out.

With --format otlp, write run RUN (default latest) as one OpenTelemetry trace in OTLP/JSON, one
ExportTraceServiceRequest a line as the Collector's file exporter writes: an
invoke_agent span per conversation, a chat span per model call, execute_tool
per tool call, a fork as an execute_tool span holding its branches, and
user turns, final answers, hand-offs and joins as spans with inspect.*
attributes; GenAI attributes throughout (docs/otel.md). The trace id comes
from the run id, so exporting a run twice gives the same trace, and
inspect import of the file gives back the same graph and audit.

To send runs to a trace backend as they happen, use inspect run
--otlp-endpoint instead.

Exit codes: 0 written; 2 an unknown run, a bad flag or an unwritable output.`,
		Example: `  inspect export 7f3a 9c01 -o shared.db
  inspect export latest -o baseline.db          # a CI baseline to commit
  inspect export --format otlp -o run.otlp.jsonl
  inspect export 7f3a --format otlp -o - | gzip > run.otlp.jsonl.gz`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Run, opts.Runs = "latest", args
			if len(args) > 0 {
				opts.Run = args[0]
			}
			if opts.Format == "" {
				opts.Format = "otlp"
				if strings.HasSuffix(opts.Output, ".db") {
					opts.Format = "db"
				}
			}
			if opts.Format == "otlp" && len(args) > 1 {
				return Usagef("--format otlp writes one run as one trace; give one RUN, or -o FILE.db for several")
			}
			if runF != nil {
				return runF(opts)
			}
			return exportRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "", "output `FORMAT`: db (a new inspect database) or otlp (OTLP/JSON lines); default db for -o FILE.db, else otlp")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "-", "write to `FILE` (- = stdout, otlp only)")
	return cmd
}

func exportRun(ctx context.Context, opts *ExportOptions) error {
	switch opts.Format {
	case "db":
		return exportDB(ctx, opts)
	case "otlp":
	default:
		return Usagef("unknown --format %q; use db (a new inspect database, -o FILE.db) or otlp", opts.Format)
	}
	db, id, err := openRun(ctx, opts.F, opts.Run)
	if err != nil {
		return err
	}
	w := opts.F.IO.Data()
	var file *os.File
	if opts.Output != "-" && opts.Output != "" {
		if file, err = os.Create(opts.Output); err != nil {
			return Usagef("cannot write %s: %v; give a writable path with -o", opts.Output, err)
		}
		w = file
	}
	err = otel.Export(ctx, db, id, otel.NewFileExporter(w))
	if file != nil {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return err
	}
	if file != nil {
		fmt.Fprintf(opts.F.IO.ErrOut, "wrote run %s as trace %s to %s\n", id, otel.TraceID(id), opts.Output)
	}
	return nil
}

// exportDB writes the runs named to a new database file: built under a
// temporary name beside it and renamed when complete, so a failed export
// leaves no half-written file.
func exportDB(ctx context.Context, opts *ExportOptions) error {
	out := opts.Output
	if out == "" || out == "-" {
		return Usagef("--format db writes a database file; give its name with -o FILE.db")
	}
	if _, err := os.Stat(out); err == nil {
		return Usagef("%s already exists; inspect export writes a new file (inspect import %s merges into an existing one)", out, shellQuote(out))
	}
	refs := opts.Runs
	if len(refs) == 0 {
		refs = []string{"latest"}
	}
	if err := dbExists(opts.F.DBPath); err != nil {
		return err
	}
	src, err := opts.F.ReadStore(ctx, opts.F.DBPath)
	if err != nil {
		return err
	}
	var ids []string
	seen := map[string]bool{}
	for _, ref := range refs {
		id, err := src.ResolveRun(ctx, ref)
		if err != nil {
			return &inDBError{Path: opts.F.DBPath, Err: err}
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	dir := filepath.Dir(out)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return Usagef("cannot write %s: no folder %s", out, dir)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(out)+".*.tmp")
	if err != nil {
		return Usagef("cannot write %s: %v", out, err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	os.Remove(tmpPath) // store.Open makes it a database
	cleanup := func() {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(tmpPath + suffix)
		}
	}
	dst, err := store.Open(ctx, tmpPath)
	if err != nil {
		cleanup()
		return err
	}
	copied, err := store.CopyRuns(ctx, dst, src, ids)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmpPath, out)
	}
	if err != nil {
		cleanup()
		return err
	}
	n := 0
	for _, c := range copied {
		if c.Skipped != "" {
			fmt.Fprintf(opts.F.IO.ErrOut, "left run %s out: %s\n", c.ID, c.Skipped)
			continue
		}
		n++
		fmt.Fprintf(opts.F.IO.Out, "exported run %s · %d nodes\n", c.ID, c.Nodes)
	}
	fmt.Fprintf(opts.F.IO.ErrOut, "wrote %d %s to %s\n", n, plural(n, "run", "runs"), out)
	fmt.Fprintf(opts.F.IO.ErrOut, "next: %s\n", hint(out, "runs"))
	return nil
}
