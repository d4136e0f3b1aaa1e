package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/internal/secret"
	"github.com/inspect-dev/inspect/internal/termsafe"
	"github.com/inspect-dev/inspect/otel"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime"
	"github.com/inspect-dev/inspect/runtime/openaicompat"
	"github.com/inspect-dev/inspect/runtime/project"
)

// RunOptions are the inputs of `inspect run`.
type RunOptions struct {
	F *Factory
	// Project is the project folder.
	Project string
	// Tasks are the user turns (--task, repeatable); empty = the script's.
	Tasks []string
	// Script is a script.yaml for the scripted model; empty = a real model.
	Script string
	// Realtime makes the scripted model really wait its latencies.
	Realtime bool
	// Check only loads the project and prints its errors and warnings.
	Check bool
	// Timeout bounds each attempt of a model call (a real provider).
	Timeout time.Duration
	// OTLPEndpoint streams the run as OpenTelemetry spans to this OTLP/HTTP
	// endpoint ("" = OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, then
	// OTEL_EXPORTER_OTLP_ENDPOINT, else none).
	OTLPEndpoint string
	// Now and RunID are injected by tests; zero values = wall clock, fresh id.
	Now   func() time.Time
	RunID string
}

// NewCmdRun builds `inspect run`. runF replaces the action in tests.
func NewCmdRun(f *Factory, runF func(*RunOptions) error) *cobra.Command {
	opts := &RunOptions{F: f}
	cmd := &cobra.Command{
		Use:   "run PROJECT",
		Short: "Run a multi-agent project and record every step",
		Long: `Run the project in folder PROJECT (its agents.yaml, role files and workspace)
and record every model call, tool call, hand-off, fork and join in the runs
database. Progress goes to stderr, one line per model call: conversation
(trunk or branch path), agent, step and what the model called. The final
answer goes to stdout, and the run id and the next commands to stderr.

The model is the scripted one when --script is given (deterministic replies
from a script.yaml, in virtual time unless --realtime), otherwise any
OpenAI-compatible server: OPENAI_API_KEY, and OPENAI_BASE_URL for vLLM,
Ollama, llama.cpp server or another provider. Each agent uses its own
model: from agents.yaml. A model call that gets a 429, a 5xx or no answer
within --timeout (default 2m) is sent again up to 3 times, after 1s, 2s and
4s or the wait the provider's Retry-After asks (at most 1m); each wait is a
progress line. Ctrl-C stops the run and records it as cancelled.

--check loads the project and prints every error and warning (file, line,
key) without running it.

Exit codes: 0 the run ended ok; 2 an invalid project, a bad flag, no task,
or a run that failed on a problem in the script (an unusable reply, a
conversation with no reply left: fix the script.yaml line the error names);
3 the run failed (the trunk's model call failed after retries, or a
scripted error: reply) or was cancelled, or the database is unusable.`,
		Example: `  inspect run ./myproject --task "Compare Q3 revenue across EU, US and APAC"
  inspect run ./myproject --script ./myproject/script.yaml
  inspect run ./myproject --task "First question" --task "A follow-up"
  inspect run ./myproject --check`,
		Args: rangeArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Project = args[0]
			if runF != nil {
				return runF(opts)
			}
			return runRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.Tasks, "task", nil, "a user turn, `TEXT` (repeat for several turns; default: the script's task)")
	cmd.Flags().StringVar(&opts.Script, "script", "", "answer with the scripted model from `FILE` (a script.yaml)")
	cmd.Flags().BoolVar(&opts.Realtime, "realtime", false, "scripted model: really wait each latency and run branches concurrently")
	cmd.Flags().BoolVar(&opts.Check, "check", false, "print the project's load errors and warnings without running it")
	cmd.Flags().StringVar(&opts.OTLPEndpoint, "otlp-endpoint", "", "stream the run as OpenTelemetry spans to the OTLP/HTTP endpoint `URL` as it is recorded (default $OTEL_EXPORTER_OTLP_ENDPOINT; docs/otel.md)")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", openaicompat.DefaultTimeout, "how long one attempt of a model call may take, a `DURATION` such as 30s or 2m; a 429, a 5xx or a timeout is retried 3 times, each wait printed")
	return cmd
}

func runRun(ctx context.Context, opts *RunOptions) error {
	ios := opts.F.IO
	p, err := runtime.Check(opts.Project)
	if opts.Check {
		return printCheck(ios.Out, opts.Project, p, err)
	}
	if err != nil {
		return projectError(err)
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(ios.ErrOut, "%s\n", w)
	}
	if opts.Realtime && opts.Script == "" {
		return Usagef("--realtime only applies to the scripted model; add --script S.yaml")
	}
	if opts.Timeout <= 0 {
		return Usagef("--timeout must be positive, got %s", opts.Timeout)
	}
	base := opts.F.Getenv("OPENAI_BASE_URL")
	if base == "" {
		base = openaicompat.DefaultBaseURL
	}
	mode := "OpenAI-compatible model at " + secret.URL(base)
	if opts.Script != "" {
		mode = "scripted model, virtual time"
		if opts.Realtime {
			mode = "scripted model, real time"
		}
	}
	stream, err := otlpStream(opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(ios.ErrOut, "running %s (%s)\n", p.Name, mode)
	if line := workspaceLine(p, opts.Script != ""); line != "" {
		fmt.Fprintln(ios.ErrOut, line)
	}
	cfg := runtime.Config{
		Project:  opts.Project,
		Script:   opts.Script,
		Tasks:    opts.Tasks,
		OpenDB:   opts.F.Store, // only once the input is known to be runnable: a refused run leaves no database
		Now:      opts.Now,
		RunID:    opts.RunID,
		Realtime: opts.Realtime,
		Progress: ios.ErrOut,
		Getenv:   opts.F.Getenv,
		OpenAI:   openaicompat.Config{Timeout: opts.Timeout},
	}
	if stream != nil {
		cfg.Observer = stream
	}
	res, err := runtime.Run(ctx, cfg)
	if err != nil {
		return projectError(err)
	}
	if stream != nil {
		if err := stream.Err(); err != nil {
			fmt.Fprintf(ios.ErrOut, "warning: %v; the run is recorded all the same (inspect export --format otlp writes it to a file)\n", err)
		} else {
			fmt.Fprintf(ios.ErrOut, "spans: trace %s sent to %s\n", otel.TraceID(res.RunID), secret.URL(stream.URL))
		}
	}
	return reportRun(ios, res, opts.F.DBPath, true, res.FirstLLM, opts.Script != "")
}

// workspaceLine says, when an agent of p may write files (write_file),
// which folder they land in — for real, the scripted model included — so
// a run does not change the project's files unannounced; "" when no agent
// writes.
func workspaceLine(p *project.Project, scripted bool) string {
	var writers []string
	for _, a := range p.Agents {
		for _, t := range a.Tools {
			if t == project.ToolWriteFile {
				writers = append(writers, a.Name)
				break
			}
		}
	}
	if len(writers) == 0 {
		return ""
	}
	ws := p.Workspace
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, ws); err == nil && !strings.HasPrefix(rel, "..") {
			ws = rel
		}
	}
	also := ""
	if scripted {
		also = ", with the scripted model too"
	}
	return fmt.Sprintf("workspace: %s (write_file of %s writes real files there%s)", termsafe.String(ws), termsafe.String(strings.Join(writers, ", ")), also)
}

// otlpStream is the span stream --otlp-endpoint (or the environment) asks
// for, or nil.
func otlpStream(opts *RunOptions) (*otel.Stream, error) {
	ep, from := opts.OTLPEndpoint, "--otlp-endpoint"
	if ep == "" {
		if ep = opts.F.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); ep != "" {
			from = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
		} else if ep = opts.F.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); ep != "" {
			from = "OTEL_EXPORTER_OTLP_ENDPOINT"
		}
	}
	if ep == "" {
		return nil, nil
	}
	u, err := otel.TracesURL(ep)
	if err != nil {
		return nil, Usagef("%s: %v", from, err)
	}
	return &otel.Stream{URL: u, Service: opts.F.Getenv("OTEL_SERVICE_NAME")}, nil
}

// reportRun prints a finished run: its answer on stdout (when answer is
// set), the summary and next steps on stderr, one pasteable command a line:
// graph, audit, and ask of node askSeq (none when 0; --dry-run for a
// scripted run, whose model is not one to ask).
// A run that did not end ok is an error: a *UsageError (exit 2) when the
// input alone failed it — a problem in the script, a key the provider
// refused, a model it does not serve — since the user fixes that by
// editing the script, the key or agents.yaml.
func reportRun(ios *IOStreams, res *runtime.Result, dbPath string, answer bool, askSeq int64, scripted bool) error {
	if answer && res.Answer != "" {
		fmt.Fprintln(ios.Out, res.Answer)
	}
	calls := "model calls"
	if res.LLMCalls == 1 {
		calls = "model call"
	}
	fmt.Fprintf(ios.ErrOut, "\nrun %s · %s · %s · %d %s · %d nodes\n",
		res.RunID, res.Status, graph.FormatDuration(res.Elapsed()), res.LLMCalls, calls, res.Nodes)
	fmt.Fprintf(ios.ErrOut, "next: %s\n", hint(dbPath, "graph", res.RunID))
	fmt.Fprintf(ios.ErrOut, "next: %s\n", hint(dbPath, "audit", res.RunID))
	fmt.Fprintf(ios.ErrOut, "next: %s\n", hint(dbPath, "cache", res.RunID))
	if askSeq > 0 {
		ask := []string{res.RunID, fmt.Sprintf("n%d", askSeq)}
		if scripted {
			ask = append(ask, "--dry-run")
		}
		fmt.Fprintf(ios.ErrOut, "next: %s\n", hint(dbPath, "ask", ask...))
	}
	switch res.Status {
	case record.StatusOK:
		return nil
	case record.StatusCancelled:
		return fmt.Errorf("run %s was cancelled; what finished is recorded: %w", res.RunID, context.Canceled)
	}
	err := fmt.Errorf("run %s ended in %s: %s", res.RunID, res.Status, res.Error)
	switch {
	case res.ScriptError:
		// the script is input: fixing the line it names fixes the run
		return &UsageError{Err: err}
	case res.ModelStatus == http.StatusUnauthorized || res.ModelStatus == http.StatusForbidden:
		return Usagef("%v: the provider refused the key in OPENAI_API_KEY; check it belongs to this provider (or set OPENAI_BASE_URL to the provider it belongs to)", err)
	case res.ModelStatus == http.StatusNotFound:
		return Usagef("%v: the provider does not serve a model this project names; fix `model:` in agents.yaml (or point OPENAI_BASE_URL at a provider that serves it)", err)
	}
	return err
}

// projectError maps the runtime's input errors to usage errors (exit 2).
func projectError(err error) error {
	var le *project.LoadError
	var ie *runtime.InputError
	if errors.As(err, &le) || errors.As(err, &ie) {
		return &UsageError{Err: err}
	}
	return err
}

// printCheck writes the result of --check: every diagnostic, then a verdict.
func printCheck(w io.Writer, dir string, p *project.Project, err error) error {
	var le *project.LoadError
	switch {
	case errors.As(err, &le):
		for _, d := range le.Diagnostics {
			fmt.Fprintln(w, d)
		}
		n := 0
		for _, d := range le.Diagnostics {
			if d.Severity == project.SeverityError {
				n++
			}
		}
		if n == 1 {
			return Usagef("project %s has 1 error; fix it and run again", dir)
		}
		return Usagef("project %s has %d errors; fix them and run again", dir, n)
	case err != nil:
		return err
	}
	for _, d := range p.Warnings {
		fmt.Fprintln(w, d)
	}
	var forks []string
	for _, a := range p.Agents {
		if a.Fork != nil {
			forks = append(forks, a.Name)
		}
	}
	fmt.Fprintf(w, "%s: ok · %d agent(s): %s · %d warning(s)", dir, len(p.Agents), strings.Join(p.AgentNames(), ", "), len(p.Warnings))
	if len(forks) > 0 {
		fmt.Fprintf(w, " · can fork: %s (maxForkDepth %d)", strings.Join(forks, ", "), p.MaxForkDepth)
	}
	fmt.Fprintln(w)
	return nil
}
