package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// RunsOptions are the inputs of `inspect runs`.
type RunsOptions struct {
	F     *Factory
	JSON  bool
	Limit int
}

// NewCmdRuns builds `inspect runs`. runF replaces the action in tests.
func NewCmdRuns(f *Factory, runF func(*RunsOptions) error) *cobra.Command {
	opts := &RunsOptions{F: f}
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List recorded runs, newest first",
		Long: `List the runs in the database, newest first: id, start time, status,
agents, elapsed time and tokens. A run that is still marked running but whose
process has died reads "interrupted".

--json prints an array of objects with the fields id, status, started, ended,
elapsed_ms, agents, tokens_in, tokens_out, llm_calls, nodes, tasks, project.`,
		Example: `  inspect runs
  inspect runs --limit 5
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
	return cmd
}

// runJSON is one element of `inspect runs --json`; its field names are a
// documented interface.
type runJSON struct {
	ID        string   `json:"id"`
	Status    string   `json:"status"`
	Started   string   `json:"started"`
	Ended     *string  `json:"ended"`
	ElapsedMS int64    `json:"elapsed_ms"`
	Agents    []string `json:"agents"`
	TokensIn  int64    `json:"tokens_in"`
	TokensOut int64    `json:"tokens_out"`
	LLMCalls  int64    `json:"llm_calls"`
	Nodes     int64    `json:"nodes"`
	Tasks     []string `json:"tasks"`
	Project   string   `json:"project"`
	Source    string   `json:"source"`
}

func runsRun(cmd *cobra.Command, opts *RunsOptions) error {
	ctx := cmd.Context()
	if opts.Limit < 0 {
		return Usagef("--limit must be 0 or more, got %d", opts.Limit)
	}
	out := opts.F.IO.Out
	var runs []store.RunSummary
	path := opts.F.DBPath
	if dbExists(path) == nil { // a missing file lists no runs, and is not created
		db, err := opts.F.ReadStore(ctx, path)
		if err != nil {
			return err
		}
		if runs, err = db.Runs(ctx, opts.Limit); err != nil {
			return err
		}
	}
	now := time.Now()
	if opts.JSON {
		list := make([]runJSON, 0, len(runs))
		for _, r := range runs {
			j := runJSON{ID: r.ID, Status: string(r.Status), Started: r.Started.UTC().Format(time.RFC3339Nano),
				ElapsedMS: liveElapsed(&r, now).Milliseconds(), Agents: nonNil(r.Agents), TokensIn: r.TokensIn, TokensOut: r.TokensOut,
				LLMCalls: r.LLMCalls, Nodes: r.Nodes, Tasks: nonNil(r.Tasks), Project: r.Project, Source: r.Source}
			if !r.Ended.IsZero() {
				e := r.Ended.UTC().Format(time.RFC3339Nano)
				j.Ended = &e
			}
			list = append(list, j)
		}
		enc := json.NewEncoder(opts.F.IO.Data())
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	if len(runs) == 0 {
		fmt.Fprintf(out, "No runs in %s yet. Try `%s`, or `inspect run PROJECT --task ...`.\n", path, hint(path, "demo"))
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTARTED\tSTATUS\tAGENTS\tELAPSED\tTOKENS IN/OUT\tTASK")
	for _, r := range runs {
		elapsed := graph.FormatDuration(liveElapsed(&r, now))
		task := ""
		if len(r.Tasks) > 0 {
			task = truncate(r.Tasks[0], 40)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n", r.ID, r.Started.Local().Format("2006-01-02 15:04:05"),
			r.Status, strings.Join(r.Agents, ","), elapsed, r.TokensIn, r.TokensOut, task)
	}
	return tw.Flush()
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

// truncate shortens s to n runes with an ellipsis, on one line.
func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
