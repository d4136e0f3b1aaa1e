package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/inspect-dev/inspect/internal/termsafe"
	"github.com/inspect-dev/inspect/otel"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// ExportOptions are the inputs of `inspect export`.
type ExportOptions struct {
	F        *Factory
	Runs     []string    // the run references given (none: latest, or the filters' runs)
	All      bool        // --all: every run (the filters narrow it)
	Filter   RunsOptions // the run filters, as inspect runs has them
	Format   string      // otlp or db; "" = db when Output ends in .db, else otlp
	Output   string      // file; "-" or "" = stdout (otlp only)
	Endpoint string      // --otlp-endpoint: send the traces there instead of writing them
}

// NewCmdExport builds `inspect export`. runF replaces the action in tests.
func NewCmdExport(f *Factory, runF func(*ExportOptions) error) *cobra.Command {
	opts := &ExportOptions{F: f, Filter: RunsOptions{F: f, Now: time.Now}}
	cmd := &cobra.Command{
		Use:   "export [RUN...]",
		Short: "Write runs to a new database file, or as OpenTelemetry traces (OTLP) to a file or a trace backend",
		Long: `Which runs: the RUNs given (default latest), or with --all or a filter
(--status, --source, --agent, --since, --until, --grep, --tag, --limit, as
inspect runs has them) every run that matches. A run still being recorded
is left out.

With -o FILE.db (or --format db), write the runs to a new inspect database
holding just those runs, with their project snapshots, exact requests, asks
and tags: to share them, or to commit as a CI baseline (inspect diff
baseline.db:latest latest). inspect import FILE.db merges such a file into
another database.

With --format otlp, write each run as one OpenTelemetry trace in OTLP/JSON,
one ExportTraceServiceRequest a line as the Collector's file exporter
writes, or send them with --otlp-endpoint URL to a trace backend's OTLP/HTTP
receiver (Jaeger, Tempo, a Collector: a base URL gets /v1/traces), one run
at a time: an invoke_agent span per conversation, a chat span per model
call, execute_tool per tool call, a fork as an execute_tool span holding its
branches, and user turns, final answers, hand-offs and joins as spans with
inspect.* attributes; GenAI attributes throughout (docs/otel.md). The
service name is inspect, or OTEL_SERVICE_NAME. The trace id comes from the
run id, so exporting a run twice gives the same trace, and inspect import
of the file (or import --from jaeger) gives back the same graphs, audits
and fleet view.

To send runs to a trace backend as they happen, use inspect run
--otlp-endpoint instead.

Exit codes: 0 written; 2 an unknown run, no run matching, a bad flag or an
unwritable output; 3 the endpoint failed (the runs sent before stay sent;
exporting again sends the same traces).`,
		Example: `  inspect export 7f3a 9c01 -o shared.db
  inspect export latest -o baseline.db          # a CI baseline to commit
  inspect export --format otlp -o run.otlp.jsonl
  inspect export --all --format otlp -o runs.otlp.jsonl
  inspect export --since 7d --format otlp --otlp-endpoint http://localhost:4318   # to Jaeger
  inspect export 7f3a --format otlp -o - | gzip > run.otlp.jsonl.gz`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Runs = args
			if opts.Format == "" {
				opts.Format = "otlp"
				if strings.HasSuffix(opts.Output, ".db") {
					opts.Format = "db"
				}
			}
			if opts.Endpoint != "" && cmd.Flags().Changed("output") {
				return Usagef("--otlp-endpoint sends the traces; give it or -o FILE, not both")
			}
			if opts.Endpoint != "" && opts.Format != "otlp" {
				return Usagef("--otlp-endpoint sends OTLP traces: it goes with --format otlp")
			}
			if runF != nil {
				return runF(opts)
			}
			return exportRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	o := &opts.Filter
	fl.StringVar(&opts.Format, "format", "", "output `FORMAT`: db (a new inspect database) or otlp (OTLP/JSON lines); default db for -o FILE.db, else otlp")
	fl.StringVarP(&opts.Output, "output", "o", "-", "write to `FILE` (- = stdout, otlp only)")
	fl.StringVar(&opts.Endpoint, "otlp-endpoint", "", "--format otlp: send the traces to the OTLP/HTTP receiver at `URL` (http://localhost:4318) instead of a file")
	fl.BoolVar(&opts.All, "all", false, "export every run (the filters narrow it)")
	fl.IntVar(&o.Limit, "limit", 0, "at most `N` runs, newest first (0 = all)")
	fl.StringSliceVar(&o.Status, "status", nil, "only runs with this `STATUS` (ok, error, exhausted, cancelled, interrupted; comma-separated)")
	fl.StringVar(&o.Source, "source", "", "only runs from this `FORMAT` (inspect, claude-code, codex, otlp, …)")
	fl.StringVar(&o.Agent, "agent", "", "only runs in which agent `NAME` took part")
	fl.StringVar(&o.Since, "since", "", "only runs started at or after `WHEN` (2025-05-01, an RFC 3339 time, or an age: 7d, 36h)")
	fl.StringVar(&o.Until, "until", "", "only runs started before `WHEN`")
	fl.StringVar(&o.Grep, "grep", "", "only runs whose id, project, tasks or tags contain `TEXT` (any case)")
	fl.StringArrayVar(&o.Tags, "tag", nil, "only runs tagged `KEY=VALUE` (or KEY, any value); repeatable")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(runStatuses, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func exportRun(ctx context.Context, opts *ExportOptions) error {
	switch opts.Format {
	case "db", "otlp":
	default:
		return Usagef("unknown --format %q; use db (a new inspect database, -o FILE.db) or otlp", opts.Format)
	}
	if opts.Format == "db" && (opts.Output == "" || opts.Output == "-") {
		return Usagef("--format db writes a database file; give its name with -o FILE.db")
	}
	var tracesURL string
	if opts.Endpoint != "" {
		u, err := otel.TracesURL(opts.Endpoint)
		if err != nil {
			return Usagef("--otlp-endpoint: %v", err)
		}
		tracesURL = u
	}
	if err := dbExists(opts.F.DBPath); err != nil {
		return err
	}
	src, err := opts.F.ReadStore(ctx, opts.F.DBPath)
	if err != nil {
		return err
	}
	ids, err := exportIDs(ctx, opts, src)
	if err != nil {
		return err
	}
	if opts.Format == "db" {
		return exportDB(ctx, opts, src, ids)
	}
	return exportOTLP(ctx, opts, src, ids, tracesURL)
}

// exportIDs are the runs to export, oldest first: the references given,
// or the runs the filters (or --all) select, those still recording left
// out and said so; else the latest.
func exportIDs(ctx context.Context, opts *ExportOptions, src *store.DB) ([]string, error) {
	filter, err := opts.Filter.filter()
	if err != nil {
		return nil, err
	}
	if opts.Filter.Limit < 0 {
		return nil, Usagef("--limit must be 0 or more, got %d", opts.Filter.Limit)
	}
	selecting := opts.All || filter.Filtered() || filter.Limit > 0
	if len(opts.Runs) > 0 && selecting {
		return nil, Usagef("give RUNs or --all and filters, not both")
	}
	if !selecting {
		refs := opts.Runs
		if len(refs) == 0 {
			refs = []string{"latest"}
		}
		var ids []string
		seen := map[string]bool{}
		for _, ref := range refs {
			id, err := src.ResolveRun(ctx, ref)
			if err != nil {
				return nil, &inDBError{Path: opts.F.DBPath, Err: err}
			}
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		return ids, nil
	}
	runs, err := src.ListRuns(ctx, filter)
	if err != nil {
		return nil, err
	}
	var ids []string
	for i := len(runs) - 1; i >= 0; i-- {
		if runs[i].Status == record.StatusRunning {
			fmt.Fprintf(opts.F.IO.ErrOut, "left run %s out: still being recorded\n", runs[i].ID)
			continue
		}
		ids = append(ids, runs[i].ID)
	}
	if len(ids) == 0 {
		return nil, Usagef("no run in %s matches; `%s` lists them", opts.F.DBPath, hint(opts.F.DBPath, "runs"))
	}
	return ids, nil
}

// exportOTLP writes (or sends to tracesURL) each run as its trace.
func exportOTLP(ctx context.Context, opts *ExportOptions, src *store.DB, ids []string, tracesURL string) error {
	errOut := opts.F.IO.ErrOut
	o := otel.Options{Service: opts.F.Getenv("OTEL_SERVICE_NAME"), Sync: true}
	var exp sdktrace.SpanExporter
	var file *os.File
	where := opts.Output
	switch {
	case tracesURL != "":
		e, err := otel.HTTPExporter(ctx, tracesURL)
		if err != nil {
			return Usagef("--otlp-endpoint: %v", err)
		}
		exp, o.Sync, o.Blocking, where = e, false, true, tracesURL
	case opts.Output != "-" && opts.Output != "":
		f, err := os.Create(opts.Output)
		if err != nil {
			return Usagef("cannot write %s: %v; give a writable path with -o", opts.Output, err)
		}
		file = f
		exp = otel.NewFileExporter(f)
	default:
		exp = otel.NewFileExporter(opts.F.IO.Data())
	}
	progress := opts.F.IO.ErrTTY && len(ids) > 1
	n := 0
	err := otel.ExportRuns(ctx, src, ids, exp, o, func(string) {
		n++
		if progress {
			fmt.Fprintf(errOut, "\r\x1b[Kexported run %d of %d", n, len(ids))
		}
	})
	if progress {
		fmt.Fprint(errOut, "\r\x1b[K")
	}
	if file != nil {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		if tracesURL != "" {
			return fmt.Errorf("send to %s: %w (%d of %d runs sent before it; exporting them again sends the same traces)", tracesURL, err, n, len(ids))
		}
		return err
	}
	if where == "-" || where == "" {
		return nil
	}
	verb := "wrote"
	if tracesURL != "" {
		verb = "sent"
	}
	if len(ids) == 1 {
		fmt.Fprintf(errOut, "%s run %s as trace %s to %s\n", verb, ids[0], otel.TraceID(ids[0]), where)
		return nil
	}
	service := o.Service
	if service == "" {
		service = otel.DefaultService
	}
	fmt.Fprintf(errOut, "%s %d runs as %d traces (service %s) to %s\n", verb, len(ids), len(ids), termsafe.String(service), where)
	return nil
}

// exportDB writes the runs named to a new database file: built under a
// temporary name beside it and renamed when complete, so a failed export
// leaves no half-written file.
func exportDB(ctx context.Context, opts *ExportOptions, src *store.DB, ids []string) error {
	out := opts.Output
	if _, err := os.Stat(out); err == nil {
		return Usagef("%s already exists; inspect export writes a new file (inspect import %s merges into an existing one)", out, shellQuote(out))
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
