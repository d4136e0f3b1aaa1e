package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/fleet"
)

// FleetOptions are the inputs of `inspect fleet`.
type FleetOptions struct {
	Runs       RunsOptions // the run filters, as inspect runs has them
	Format     string
	FailOnRate []string // RULE=PCT
	Examples   int
	Set        []string
}

var fleetFormats = []string{"text", "markdown", "json"}

// NewCmdFleet builds `inspect fleet`. runF replaces the action in tests.
func NewCmdFleet(f *Factory, runF func(*FleetOptions) error) *cobra.Command {
	opts := &FleetOptions{Runs: RunsOptions{F: f, Now: time.Now}}
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Audit many runs at once: which mistakes recur, where, at what cost",
		Long: `Audit every run the filters select, one run at a time (the memory of one
run, whatever their number), and sum the findings up per rule × agent ×
source: how many runs each affected and their share of the runs audited,
the total price and the median price of an affected run (time, tokens,
money with a price table in .inspect.yaml), example runs with their
evidence nodes, and the change against the previous window of the same
length (with --since: the runs started in the span just before it).

The filters are those of inspect runs: --status, --source, --agent,
--since, --until, --grep, --tag, --limit. Findings the team's ignore:
entries suppress are not counted.

--fail-on-rate RULE=PCT (repeatable) exits 1 when the share of runs with a
finding of RULE is PCT percent or more, for CI. --format json prints
{"runs": N, "rules": [{"rule", "agent", "source", "runs", "share", …}]},
documented in docs/fleet-json.md.

Exit codes: 0 audited; 1 a rate at or over --fail-on-rate; 2 bad flags;
3 the database is unreadable.`,
		Example: `  inspect fleet --since 7d
  inspect fleet --source otlp --since 7d --format markdown
  inspect fleet --since 24h --fail-on-rate fanout.missed=20
  inspect import --from jaeger http://localhost:16686 --service agents && inspect fleet --source otlp`,
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return fleetRun(cmd, opts)
		},
	}
	fl := cmd.Flags()
	o := &opts.Runs
	fl.StringVar(&opts.Format, "format", "text", "output `FORMAT`: "+strings.Join(fleetFormats, ", "))
	fl.StringArrayVar(&opts.FailOnRate, "fail-on-rate", nil, "exit 1 when rule `RULE=PCT` is found in PCT% of the runs or more; repeatable")
	fl.IntVar(&opts.Examples, "examples", fleet.DefaultExamples, "example runs per row (`N`)")
	fl.StringArrayVar(&opts.Set, "set", nil, "set an audit threshold, `NAME=VALUE` (as inspect audit --set)")
	fl.IntVar(&o.Limit, "limit", 0, "audit at most `N` runs, newest first (0 = all)")
	fl.StringSliceVar(&o.Status, "status", nil, "only runs with this `STATUS` (ok, error, exhausted, cancelled, interrupted, running; comma-separated)")
	fl.StringVar(&o.Source, "source", "", "only runs from this `FORMAT` (inspect, claude-code, codex, otlp, …)")
	fl.StringVar(&o.Agent, "agent", "", "only runs in which agent `NAME` took part")
	fl.StringVar(&o.Since, "since", "", "only runs started at or after `WHEN` (2025-05-01, an RFC 3339 time, or an age: 7d, 36h); also sets the previous window")
	fl.StringVar(&o.Until, "until", "", "only runs started before `WHEN` (default now)")
	fl.StringVar(&o.Grep, "grep", "", "only runs whose id, project, tasks or tags contain `TEXT` (any case)")
	fl.StringArrayVar(&o.Tags, "tag", nil, "only runs tagged `KEY=VALUE` (or KEY, any value); repeatable")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(runStatuses, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(fleetFormats, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// rateGate is one --fail-on-rate.
type rateGate struct {
	rule string
	pct  float64
}

func parseRateGates(list []string) ([]rateGate, error) {
	known := map[string]bool{}
	var ids []string
	for _, r := range rules.All {
		known[r.ID] = true
		ids = append(ids, r.ID)
	}
	var out []rateGate
	for _, kv := range list {
		rule, v, ok := strings.Cut(kv, "=")
		pct, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), "%"), 64)
		if !ok || err != nil || pct < 0 || pct > 100 {
			return nil, Usagef("--fail-on-rate %q: give RULE=PCT, a percentage from 0 to 100 (fanout.missed=20)", kv)
		}
		if !known[rule] {
			return nil, Usagef("--fail-on-rate: no rule %q; the rules are: %s", rule, strings.Join(ids, ", "))
		}
		out = append(out, rateGate{rule, pct})
	}
	return out, nil
}

func fleetRun(cmd *cobra.Command, opts *FleetOptions) error {
	ctx := cmd.Context()
	io := opts.Runs.F.IO
	if !auditContains(fleetFormats, opts.Format) {
		return Usagef("unknown --format %q; use one of: %s", opts.Format, strings.Join(fleetFormats, ", "))
	}
	if opts.Runs.Limit < 0 || opts.Examples < 0 {
		return Usagef("--limit and --examples must be 0 or more")
	}
	gates, err := parseRateGates(opts.FailOnRate)
	if err != nil {
		return err
	}
	filter, err := opts.Runs.filter()
	if err != nil {
		return err
	}
	until := filter.Until
	if until.IsZero() {
		until = opts.Runs.Now()
	}
	if !filter.Since.IsZero() && !filter.Since.Before(until) {
		return Usagef("--since must be before --until")
	}
	p, err := policy(opts.Runs.F, opts.Set)
	if err != nil {
		return err
	}
	if err := dbExists(opts.Runs.F.DBPath); err != nil {
		return err
	}
	q := analysis.FleetQuery{Examples: opts.Examples, Filter: analysis.RunFilter{Statuses: filter.Statuses, Source: filter.Source,
		Agent: filter.Agent, Since: filter.Since, Until: filter.Until, Grep: filter.Grep, Tags: filter.Tags, Limit: filter.Limit}}
	progress := io.ErrTTY
	if progress {
		q.Progress = func(done, total int) { fmt.Fprintf(io.ErrOut, "\r\x1b[Kauditing run %d of %d", done+1, total) }
	}
	a := analyzer(opts.Runs.F, p)
	a.Now = opts.Runs.Now
	agg, err := a.Fleet(ctx, q)
	if progress {
		fmt.Fprint(io.ErrOut, "\r\x1b[K")
	}
	if err != nil {
		return err
	}
	rep := agg.Report()
	switch opts.Format {
	case "json":
		err = fleet.WriteJSON(io.Data(), rep)
	case "markdown":
		err = fleet.WriteMarkdown(io.Out, rep)
	default:
		err = fleet.WriteText(io.Out, rep)
	}
	if err != nil {
		return err
	}
	var over []string
	for _, g := range gates {
		if rate := 100 * agg.Rate(g.rule); rate >= g.pct && rep.Runs > 0 {
			over = append(over, fmt.Sprintf("%s in %.1f%% of %d runs (--fail-on-rate %s=%g)", g.rule, rate, rep.Runs, g.rule, g.pct))
		}
	}
	sort.Strings(over)
	if len(over) > 0 {
		return &ThresholdError{Reason: "rates at or over the threshold: " + strings.Join(over, "; ")}
	}
	return nil
}
