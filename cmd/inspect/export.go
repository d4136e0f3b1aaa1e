package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/otel"
)

// ExportOptions are the inputs of `inspect export`.
type ExportOptions struct {
	F      *Factory
	Run    string // run reference (default latest)
	Format string // otlp
	Output string // file; "-" or "" = stdout
}

// NewCmdExport builds `inspect export`. runF replaces the action in tests.
func NewCmdExport(f *Factory, runF func(*ExportOptions) error) *cobra.Command {
	opts := &ExportOptions{F: f}
	cmd := &cobra.Command{
		Use:   "export [RUN]",
		Short: "Write a recorded run as an OpenTelemetry trace (OTLP/JSON)",
		Long: `Write run RUN (default latest) as one OpenTelemetry trace in OTLP/JSON, one
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
		Example: `  inspect export --format otlp -o run.otlp.jsonl
  inspect export 7f3a --format otlp -o - | gzip > run.otlp.jsonl.gz`,
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Run = "latest"
			if len(args) == 1 {
				opts.Run = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return exportRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "otlp", "output `FORMAT`: otlp (OTLP/JSON lines)")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "-", "write to `FILE` (- = stdout)")
	return cmd
}

func exportRun(ctx context.Context, opts *ExportOptions) error {
	if opts.Format != "otlp" {
		return Usagef("unknown --format %q; the export format is otlp", opts.Format)
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
