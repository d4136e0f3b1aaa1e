package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/internal/termtable"
	"github.com/inspect-dev/inspect/internal/when"
	"github.com/inspect-dev/inspect/mcpserver"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// RunsOptions are the inputs of `inspect runs`.
type RunsOptions struct {
	F     *Factory
	JSON  bool
	Limit int
	// The filters: statuses (comma-separated or repeated), source format,
	// agent, start time bounds, text, tags (KEY=VALUE or KEY).
	Status       []string
	Source       string
	Agent        string
	Since, Until string
	Grep         string
	Tags         []string
	// Now is the time ages count back from (injected for tests).
	Now func() time.Time
}

// NewCmdRuns builds `inspect runs`. runF replaces the action in tests.
func NewCmdRuns(f *Factory, runF func(*RunsOptions) error) *cobra.Command {
	opts := &RunsOptions{F: f, Now: time.Now}
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List recorded runs, newest first",
		Long: `List the runs in the database, newest first: id, start time, status,
agents, elapsed time and tokens. A run that is still marked running but whose
process has died reads "interrupted", and so does an imported session whose
file ends before its conversation finished.

The filters combine: --status (ok, error, exhausted, cancelled, interrupted,
running; comma-separated or repeated), --source (inspect, or an import
format such as claude-code), --agent NAME, --since and --until (a date
2025-05-01, a time 2025-05-01T14:00:00Z, or an age such as 7d or 36h),
--grep TEXT (in the id, project, tasks and tags, any case), --tag KEY=VALUE
or --tag KEY (repeatable; inspect tag sets them), --limit N.

--json prints an array of objects with the fields id, status, started, ended,
elapsed_ms, agents, tokens_in, tokens_out, llm_calls, nodes, tasks, project,
source, tags.`,
		Example: `  inspect runs
  inspect runs --limit 5
  inspect runs --status error,exhausted --since 7d
  inspect runs --source claude-code --agent researcher
  inspect runs --grep revenue --tag pr=482
  inspect runs --json | jq -r '.[0].id'`,
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runsRun(cmd, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON for scripts")
	cmd.Flags().IntVar(&opts.Limit, "limit", 0, "show at most `N` runs (0 = all)")
	cmd.Flags().StringSliceVar(&opts.Status, "status", nil, "only runs with this `STATUS` (ok, error, exhausted, cancelled, interrupted, running; comma-separated)")
	cmd.Flags().StringVar(&opts.Source, "source", "", "only runs from this `FORMAT` (inspect, claude-code, codex, otlp, …)")
	cmd.Flags().StringVar(&opts.Agent, "agent", "", "only runs in which agent `NAME` took part")
	cmd.Flags().StringVar(&opts.Since, "since", "", "only runs started at or after `WHEN` (2025-05-01, an RFC 3339 time, or an age: 7d, 36h)")
	cmd.Flags().StringVar(&opts.Until, "until", "", "only runs started before `WHEN`")
	cmd.Flags().StringVar(&opts.Grep, "grep", "", "only runs whose id, project, tasks or tags contain `TEXT` (any case)")
	cmd.Flags().StringArrayVar(&opts.Tags, "tag", nil, "only runs tagged `KEY=VALUE` (or KEY, any value); repeatable")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(runStatuses, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// runJSON is one element of `inspect runs --json` and of the MCP
// list_runs tool's runs; its field names are a documented interface.
type runJSON = mcpserver.RunSummary

// runSummaryJSON is run r as runJSON, its elapsed time live at now.
func runSummaryJSON(r *store.RunSummary, now time.Time) runJSON {
	j := runJSON{ID: r.ID, Status: string(r.Status), Started: r.Started.UTC().Format(time.RFC3339Nano),
		ElapsedMS: liveElapsed(r, now).Milliseconds(), Agents: nonNil(r.Agents), TokensIn: r.TokensIn, TokensOut: r.TokensOut,
		LLMCalls: r.LLMCalls, Nodes: r.Nodes, Tasks: nonNil(r.Tasks), Project: r.Project, Source: r.Source, Tags: r.Tags}
	if j.Tags == nil {
		j.Tags = map[string]string{}
	}
	if !r.Ended.IsZero() {
		e := r.Ended.UTC().Format(time.RFC3339Nano)
		j.Ended = &e
	}
	return j
}

// runStatuses are the values of --status.
var runStatuses = []string{"ok", "error", "exhausted", "cancelled", "interrupted", "running"}

// filter turns the flags into a store.RunFilter.
func (o *RunsOptions) filter() (store.RunFilter, error) {
	f := store.RunFilter{Source: o.Source, Agent: o.Agent, Grep: o.Grep, Limit: o.Limit}
	for _, s := range o.Status {
		s = strings.TrimSpace(s)
		if !auditContains(runStatuses, s) {
			return f, Usagef("unknown --status %q; use one of: %s", s, strings.Join(runStatuses, ", "))
		}
		f.Statuses = append(f.Statuses, record.Status(s))
	}
	now := o.Now()
	for _, b := range []struct {
		flag, v string
		t       *time.Time
	}{{"--since", o.Since, &f.Since}, {"--until", o.Until, &f.Until}} {
		if b.v == "" {
			continue
		}
		t, err := when.Parse(b.v, now)
		if err != nil {
			return f, Usagef("%s: %v", b.flag, err)
		}
		*b.t = t
	}
	for _, kv := range o.Tags {
		k, v, _ := strings.Cut(kv, "=")
		if err := store.CheckTag(k, v); err != nil {
			return f, Usagef("--tag %s: %v", kv, err)
		}
		if f.Tags == nil {
			f.Tags = map[string]string{}
		}
		f.Tags[k] = v
	}
	return f, nil
}

func runsRun(cmd *cobra.Command, opts *RunsOptions) error {
	ctx := cmd.Context()
	if opts.Limit < 0 {
		return Usagef("--limit must be 0 or more, got %d", opts.Limit)
	}
	filter, err := opts.filter()
	if err != nil {
		return err
	}
	out := opts.F.IO.Out
	var runs []store.RunSummary
	path := opts.F.DBPath
	if dbExists(path) == nil { // a missing file lists no runs, and is not created
		db, err := opts.F.ReadStore(ctx, path)
		if err != nil {
			return err
		}
		if runs, err = db.ListRuns(ctx, filter); err != nil {
			return err
		}
	}
	now := time.Now()
	if opts.JSON {
		list := make([]runJSON, 0, len(runs))
		for i := range runs {
			list = append(list, runSummaryJSON(&runs[i], now))
		}
		enc := json.NewEncoder(opts.F.IO.Data())
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	if len(runs) == 0 && filter.Filtered() {
		fmt.Fprintf(out, "No run in %s matches; `%s` lists them all.\n", path, hint(path, "runs"))
		return nil
	}
	if len(runs) == 0 {
		fmt.Fprintf(out, "No runs in %s yet. Try `%s`, or `inspect run PROJECT --task ...`.\n", path, hint(path, "demo"))
		return nil
	}
	tab := termtable.New("ID", "STARTED", "STATUS", "AGENTS", "ELAPSED", "TOKENS IN/OUT", "TASK")
	for _, r := range runs {
		task := ""
		if len(r.Tasks) > 0 {
			task = termtable.Truncate(r.Tasks[0], 40)
		}
		tab.Row(r.ID, r.Started.Local().Format("2006-01-02 15:04:05"), string(r.Status), strings.Join(r.Agents, ","),
			graph.FormatDuration(liveElapsed(&r, now)), fmt.Sprintf("%d/%d", r.TokensIn, r.TokensOut), task)
	}
	return tab.Fprint(out)
}

// liveElapsed is a run's elapsed time; for a run still running, up to now
// (it is live), as `inspect graph` counts it.
func liveElapsed(r *store.RunSummary, now time.Time) time.Duration {
	e := r.Elapsed()
	if r.Status == record.StatusRunning && now.Sub(r.Started) > e {
		e = now.Sub(r.Started)
	}
	return e
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
