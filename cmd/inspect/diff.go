package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/diff"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/report"
)

// diffFormats are the values of `inspect diff --format`.
var diffFormats = []string{"markdown", "json", "junit", "sarif"}

// DiffOptions are the inputs of `inspect diff`.
type DiffOptions struct {
	F *Factory
	// Base and New are run references ([FILE.db:]RUN).
	Base, New string
	// Format is one of diffFormats.
	Format string
	// MaxIncrease holds --max-increase values, KEY=VALUE[,KEY=VALUE].
	MaxIncrease []string
	// FailOn is "", "warning" or "error": exit 1 when a new finding is at least that.
	FailOn string
	// SARIFRoot is the folder SARIF paths are relative to; "" = the current folder.
	SARIFRoot string
}

// NewCmdDiff builds `inspect diff`. runF replaces the action in tests.
func NewCmdDiff(f *Factory, runF func(*DiffOptions) error) *cobra.Command {
	opts := &DiffOptions{F: f}
	cmd := &cobra.Command{
		Use:   "diff BASE NEW",
		Short: "Compare two runs for CI: new and fixed findings, totals with deltas, thresholds",
		Long: `Compare run NEW with run BASE. Each side is a run reference,
[FILE.db:]RUN: "latest", an id or a unique prefix, optionally in another
database file, so a baseline database committed in a repository can be
compared with a fresh run ("baseline.db:latest", or just "baseline.db").

The report lists:
  - findings new, fixed and unchanged, matched by rule, agent and the shape of
    the evidence (the audit's fingerprint), never by node numbers;
  - for each fixed finding, whether the new run shows what the finding said
    the next run should show: shown, not shown, or not checked;
  - totals with deltas: tokens in/out/cached, elapsed, model calls, tool
    calls, forks, branches, hand-offs, overall and per agent (per agent,
    elapsed is the agent's busy time);
  - with a price table in .inspect.yaml, what each run cost in money, overall
    and per agent, and each finding's price in money;
  - the new run's collapsed Mermaid chart (markdown).

Both runs are audited under the team's policy (.inspect.yaml or --config
FILE): its thresholds, rules turned off and ignore entries; a new finding
an ignore entry accepts is listed as such and not counted for --fail-on.

--max-increase takes comma-separated KEY=VALUE limits (repeatable). Keys:
tokens (in + out), tokens_in, tokens_out, elapsed, llm_calls, tool_calls.
A value is a percentage of the base ("10%") or an absolute increase: a
count, or a duration for elapsed ("30s").

Formats: markdown (for $GITHUB_STEP_SUMMARY or a pull-request comment), json
(documented in docs/diff-json.md), junit (a test case per new finding and
per limit), sarif (2.1.0; results with baselineState new, unchanged or
absent). See docs/ci.md for a GitHub Actions workflow.

Exit codes: 0 done (no limit exceeded, no new finding at or above
--fail-on); 1 a limit exceeded or such a new finding; 2 bad flags or an
unknown run or database file; 3 a database is unreadable.`,
		Example: `  inspect diff 7f3a latest                   # two runs of the default database
  inspect diff baseline.db:latest latest --format markdown >> "$GITHUB_STEP_SUMMARY"
  inspect diff a.db:latest b.db:latest --format json
  inspect diff baseline.db latest --max-increase tokens=10%,elapsed=20% --fail-on warning
  inspect diff baseline.db latest --max-increase elapsed=30s --format junit > diff.xml
  inspect diff baseline.db latest --format sarif > diff.sarif`,
		Args:              rangeArgs(2, 2),
		ValidArgsFunction: runArgsCompletion(f, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Base, opts.New = args[0], args[1]
			if runF != nil {
				return runF(opts)
			}
			return diffRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "markdown", "output `FORMAT`: "+strings.Join(diffFormats, ", "))
	cmd.Flags().StringArrayVar(&opts.MaxIncrease, "max-increase", nil, "exit 1 when a total grows more than `KEY=VALUE` allows; comma-separated, repeatable (tokens=10%,elapsed=20%)")
	cmd.Flags().StringVar(&opts.SARIFRoot, "sarif-root", "", "with --format sarif: the repository root `DIR` file paths are relative to (default: the current folder)")
	cmd.Flags().StringVar(&opts.FailOn, "fail-on", "", "exit 1 when a new finding is at least this `SEVERITY`: warning or error")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(diffFormats, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions([]string{"warning", "error"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func diffRun(ctx context.Context, opts *DiffOptions) error {
	if !auditContains(diffFormats, opts.Format) {
		return Usagef("unknown --format %q; use one of: %s", opts.Format, strings.Join(diffFormats, ", "))
	}
	cfg := &diff.Config{}
	if opts.FailOn != "" {
		s, err := findings.ParseSeverity(opts.FailOn)
		if err != nil {
			return Usagef("unknown --fail-on %q; use warning or error", opts.FailOn)
		}
		cfg.FailOn = s
	}
	for _, v := range opts.MaxIncrease {
		ls, err := diff.ParseLimits(v)
		if err != nil {
			return Usagef("--max-increase %s: %v", v, err)
		}
		cfg.MaxIncrease = append(cfg.MaxIncrease, ls...)
	}
	p, err := policy(opts.F, nil)
	if err != nil {
		return err
	}
	base, err := diffSide(ctx, opts.F, p, opts.Base)
	if err != nil {
		return err
	}
	new, err := diffSide(ctx, opts.F, p, opts.New)
	if err != nil {
		return err
	}
	rep, err := analysis.Diff(ctx, cfg, base, new)
	if err != nil {
		return err
	}
	out := opts.F.IO.Data() // data formats escape control characters themselves
	switch opts.Format {
	case "markdown":
		err = diff.WriteMarkdown(opts.F.IO.Out, rep)
	case "json":
		err = diff.WriteJSON(out, rep)
	case "junit":
		err = diff.WriteJUnit(out, rep, cfg.FailOn)
	case "sarif":
		var paths report.SARIFPaths
		if paths, err = sarifPaths(new.Graph, opts.SARIFRoot); err != nil {
			return err
		}
		err = diff.WriteSARIF(out, rep, paths)
	}
	if err != nil {
		return err
	}
	if rep.Failed {
		return &ThresholdError{Reason: "diff " + rep.Base.Run + " → " + rep.New.Run + ": " + strings.Join(rep.Reasons, "; ")}
	}
	return nil
}

// diffSide opens one side of a comparison. A database file named in the
// reference must exist: opening would create an empty one.
func diffSide(ctx context.Context, f *Factory, p *analysis.Policy, ref string) (*analysis.Run, error) {
	if r := ParseRunRef(ref); r.DB != "" {
		if _, err := os.Stat(r.DB); errors.Is(err, fs.ErrNotExist) {
			return nil, Usagef("%s: no database file %q; give an existing FILE.db:RUN (e.g. baseline.db:latest)", ref, r.DB)
		}
	}
	return openAnalysed(ctx, f, p, ref, analysis.LoadBrief)
}
