package main

import (
	"bytes"
	"context"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/web"
)

// ReportOptions are the inputs of `inspect report`.
type ReportOptions struct {
	F      *Factory
	RunRef string // [FILE.db:]RUN; "latest" by default
	Output string // -o FILE; "" or "-" = stdout
}

// NewCmdReport builds `inspect report`. runF replaces the action in tests.
func NewCmdReport(f *Factory, runF func(*ReportOptions) error) *cobra.Command {
	opts := &ReportOptions{F: f}
	cmd := &cobra.Command{
		Use:   "report [RUN]",
		Short: "Write a run's page as one self-contained HTML file (for CI artifacts)",
		Long: `Write the page ` + "`inspect serve`" + ` shows for a run (default: the latest) as one
HTML file: the graph with pan and zoom, the timeline with the critical path,
the findings (select one to mark its nodes), grades and cache figures, and
every node the findings name in full (request folded, response, usage; a
tool's arguments and result; at most 16 KiB of a body, saying what it cut). It
needs nothing else: no server, no network (it opens from file://, and its
policy forbids any fetch), so it can be attached to a CI run or mailed.`,
		Example: `  inspect report -o report.html
  inspect report 7f3a -o artifacts/run.html
  inspect report base.db:latest > base.html`,
		Args:              rangeArgs(0, 1),
		ValidArgsFunction: runArgsCompletion(f, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.RunRef = runArg(args)
			if runF != nil {
				return runF(opts)
			}
			return reportRunCmd(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "write to `FILE` instead of stdout")
	return cmd
}

func reportRunCmd(ctx context.Context, opts *ReportOptions) error {
	if opts.Output == "" && opts.F.IO.OutTTY {
		return Usagef("a report is an HTML file: give -o FILE (inspect report -o report.html) or redirect stdout")
	}
	if opts.Output != "" && opts.Output != "-" {
		if err := outputDir(opts.Output); err != nil {
			return err
		}
	}
	src, id, err := analyzer(opts.F, nil).Resolve(ctx, opts.RunRef)
	if err != nil {
		return refError(err)
	}
	p, err := policy(opts.F, nil)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := web.New(src, web.Options{Policy: p}).WriteReport(ctx, &buf, id); err != nil {
		return err
	}
	return writeOutput(opts.F, opts.Output, buf.Bytes(), false)
}
