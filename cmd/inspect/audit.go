package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/report"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/internal/mdterm"
	"github.com/inspect-dev/inspect/internal/regfile"
)

// auditFormats are the values of `inspect audit --format`.
var auditFormats = []string{"text", "markdown", "json", "sarif", "junit"}

// AuditOptions are the inputs of `inspect audit`.
type AuditOptions struct {
	F *Factory
	// Run is the run reference ([FILE.db:]RUN; latest by default).
	Run string
	// Format is one of auditFormats.
	Format string
	// FailOn is "", "warning" or "error": exit 1 when a finding is at least that.
	FailOn string
	// Rules lists the rules instead of auditing.
	Rules bool
	// Explain prints one rule's documentation instead of auditing.
	Explain string
	// Set holds threshold overrides, NAME=VALUE.
	Set []string
	// SARIFRoot is the folder SARIF paths are relative to (the repository
	// root); "" = the current folder.
	SARIFRoot string
	// Baseline is an earlier audit's JSON or SARIF file: its findings are
	// listed as baseline and do not count for --fail-on.
	Baseline string
}

// NewCmdAudit builds `inspect audit`. runF replaces the action in tests.
func NewCmdAudit(f *Factory, runF func(*AuditOptions) error) *cobra.Command {
	opts := &AuditOptions{F: f}
	cmd := &cobra.Command{
		Use:   "audit [RUN]",
		Short: "Find a run's topology mistakes, with what each cost, where its fix goes and grades",
		Long:  auditLong(),
		Example: `  inspect audit                          # the latest run, as text
  inspect audit 7f3a --format markdown >> "$GITHUB_STEP_SUMMARY"
  inspect audit --format sarif > audit.sarif   # for GitHub code scanning
  inspect audit --fail-on error          # exit 1 when an error-level finding is found
  inspect audit --set uneven-ratio=3 --set uneven-min-gap=10s
  inspect audit --format json > base.json    # later: only what is new fails CI
  inspect audit --baseline base.json --fail-on warning
  inspect audit --rules
  inspect audit --explain fanout.missed`,
		Args:              rangeArgs(0, 1),
		ValidArgsFunction: runArgsCompletion(f, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Run = "latest"
			if len(args) == 1 {
				opts.Run = args[0]
				if opts.Rules || opts.Explain != "" {
					return Usagef("--rules and --explain print the rules' documentation and audit no run; drop %q, or drop the flag to audit it", args[0])
				}
			}
			if runF != nil {
				return runF(opts)
			}
			return auditRun(cmd, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "text", "output `FORMAT`: "+strings.Join(auditFormats, ", ")+" (--explain: text or json)")
	cmd.Flags().StringVar(&opts.FailOn, "fail-on", "", "exit 1 when a finding is at least this `SEVERITY`: warning or error")
	cmd.Flags().BoolVar(&opts.Rules, "rules", false, "list the rules with their docs and exit")
	cmd.Flags().StringVar(&opts.Explain, "explain", "", "print the documentation of rule `ID` and exit")
	cmd.Flags().StringVar(&opts.SARIFRoot, "sarif-root", "", "with --format sarif: the repository root `DIR` file paths are relative to (default: the current folder)")
	cmd.Flags().StringArrayVar(&opts.Set, "set", nil, "set a threshold, `NAME=VALUE` (repeatable; see the list above; wins over .inspect.yaml)")
	cmd.Flags().StringVar(&opts.Baseline, "baseline", "", "an earlier audit's JSON or SARIF `FILE`: the findings it had are listed as baseline and not counted for --fail-on")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(auditFormats, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions([]string{"warning", "error"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("explain", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var ids []string
		for _, r := range rules.All {
			ids = append(ids, r.ID+"\t"+r.Doc.Title)
		}
		return ids, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// auditLong is the help text: the rules, thresholds and grade scale all come
// from the findings package, so help, --explain and the docs never drift.
func auditLong() string {
	var b strings.Builder
	b.WriteString(`Audit a recorded run for topology mistakes: for each finding, what
went wrong (with its evidence nodes), what it cost (time, tokens, conversation
starts, computed from the recording), where the fix goes (a line of
agents.yaml or of a prompt file, from the run's stored project), and what the
next run should show. Every rule also reports what it examined when it found
nothing. Cache effects are never reported as measured unless the provider
reported cached tokens.

Rules:
`)
	for _, r := range rules.All {
		fmt.Fprintf(&b, "  %-29s %s (%s, %s)\n", r.ID, r.Doc.Title, r.Area, r.Severity)
	}
	b.WriteString("\nThresholds (--set NAME=VALUE):\n")
	for _, s := range findings.OptionSpecs(rules.All) {
		fmt.Fprintf(&b, "  %-21s default %-5s %s (%s)\n", s.Name, s.Default(), s.Doc, s.Rules)
	}
	b.WriteString("\nGrades:\n")
	for _, l := range strings.Split(findings.GradeScale, "\n") {
		b.WriteString("  " + l + "\n")
	}
	b.WriteString(`
Formats: text (rendered with glamour on a terminal, plain otherwise),
markdown, json (documented in docs/audit-json.md), sarif (2.1.0, for code
scanning: file paths from the repository root, --sarif-root DIR, default
the current folder, so a project in a subfolder points at its own files),
junit (one test case per rule).

Policy: the nearest .inspect.yaml from the working folder up to the
repository root or home, never above (or --config FILE; write one with
inspect init), named in the audit, sets thresholds, turns rules off,
prices model calls (the run's cost, per agent and per finding, in money)
and accepts findings (ignore: entries with a reason and an optional
expiry); --set wins over the file, and --explain and --rules say where each
value in force came from. Findings an ignore entry accepts, or that
--baseline FILE (an earlier audit's JSON or SARIF) already had, are listed
as such in every format and not counted for --fail-on. See docs/config.md.

Exit codes: 0 done (findings below --fail-on, if given); 1 a finding at or
above --fail-on; 2 bad flags, an unknown run or a config with problems; 3
the database is unreadable.`)
	return b.String()
}

func auditRun(cmd *cobra.Command, opts *AuditOptions) error {
	io := opts.F.IO
	if !auditContains(auditFormats, opts.Format) {
		return Usagef("unknown --format %q; use one of: %s", opts.Format, strings.Join(auditFormats, ", "))
	}
	var failOn findings.Severity
	if opts.FailOn != "" {
		s, err := findings.ParseSeverity(opts.FailOn)
		if err != nil {
			return Usagef("unknown --fail-on %q; use warning or error", opts.FailOn)
		}
		failOn = s
	}
	p, err := policy(opts.F, opts.Set)
	if err != nil {
		return err
	}
	o := p.Options
	if opts.Explain != "" {
		r := findings.Lookup(rules.All, opts.Explain)
		if r == nil {
			var ids []string
			for _, r := range rules.All {
				ids = append(ids, r.ID)
			}
			return Usagef("no rule %q; the rules are: %s", opts.Explain, strings.Join(ids, ", "))
		}
		switch opts.Format {
		case "json":
			return report.WriteExplainJSON(io.Data(), r, o)
		case "text", "markdown":
			return report.WriteExplain(io.Out, r, o)
		}
		return Usagef("--explain prints text or json, not --format %s", opts.Format)
	}
	if opts.Rules {
		switch opts.Format {
		case "markdown":
			return report.WriteRulesMarkdown(io.Out, rules.All, o)
		case "json":
			return report.WriteRulesJSON(io.Data(), rules.All, o)
		case "text":
			return report.WriteRulesText(io.Out, rules.All, o)
		}
		return Usagef("--rules prints text, markdown or json, not --format %s", opts.Format)
	}

	ctx := cmd.Context()
	run, err := openAnalysed(ctx, opts.F, p, opts.Run, analysis.LoadBrief)
	if err != nil {
		return err
	}
	g := run.Graph
	baseline, err := readBaseline(opts.Baseline)
	if err != nil {
		return err
	}
	rep, err := run.Audit(ctx, baseline)
	if err != nil {
		return err
	}
	switch opts.Format {
	case "text":
		if style, ok := io.markdownStyle(opts.F.Getenv); ok {
			err = writeGlamour(io, rep, style)
		} else {
			err = report.WriteText(io.Out, rep)
		}
	case "markdown":
		err = report.WriteMarkdown(io.Out, rep)
	case "json":
		err = report.WriteJSON(io.Data(), rep) // data formats escape control characters themselves
	case "sarif":
		var paths report.SARIFPaths
		if paths, err = sarifPaths(g, opts.SARIFRoot); err != nil {
			return err
		}
		err = report.WriteSARIFWith(io.Data(), rep, report.SARIFOptions{Paths: paths})
	case "junit":
		err = report.WriteJUnit(io.Data(), rep)
	}
	if err != nil {
		return err
	}
	if failOn != 0 {
		if n := rep.Count(failOn); n > 0 {
			return &ThresholdError{Reason: fmt.Sprintf("run %s has %d finding(s) at or above %s (--fail-on %s)%s", rep.Run, n, failOn, opts.FailOn, notCounted(rep))}
		}
	}
	return nil
}

// notCounted says how many findings --fail-on left out, or "".
func notCounted(rep *findings.Report) string {
	if n := len(rep.Suppressed()); n > 0 {
		return fmt.Sprintf("; %d more accepted or in the baseline, not counted", n)
	}
	return ""
}

// readBaseline reads --baseline FILE; nil when none is given.
func readBaseline(path string) (*findings.Baseline, error) {
	if path == "" {
		return nil, nil
	}
	f, err := regfile.Open(path) // a FIFO is refused, not waited on
	if err != nil {
		return nil, Usagef("--baseline %s: %v; give the JSON or SARIF an earlier `inspect audit --format json|sarif` wrote", path, err)
	}
	defer f.Close()
	b, err := findings.ReadBaseline(f, path)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	return b, nil
}

// writeGlamour renders the markdown report for a terminal in a glamour
// style (IOStreams.markdownStyle), wrapped to the terminal's width.
func writeGlamour(io *IOStreams, rep *findings.Report, style string) error {
	var md bytes.Buffer
	if err := report.WriteMarkdown(&md, rep); err != nil {
		return err
	}
	r, err := mdterm.New(style, io.Width)
	if err != nil {
		return report.WriteText(io.Out, rep)
	}
	out, err := mdterm.Render(r, md.String(), io.Width)
	if err != nil {
		return report.WriteText(io.Out, rep)
	}
	_, err = fmt.Fprint(io.Raw, out) // glamour's styles; its input is sanitized
	return err
}

// sarifPaths places a run's files for SARIF: its recorded project folder
// under root (--sarif-root; "" = the current folder, where CI runs from
// the repository root). A root given explicitly must hold the project.
func sarifPaths(g *graph.Run, root string) (report.SARIFPaths, error) {
	explicit := root != ""
	if !explicit {
		root = "."
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return report.SARIFPaths{}, err
	}
	if fi, err := os.Stat(abs); explicit && (err != nil || !fi.IsDir()) {
		return report.SARIFPaths{}, Usagef("--sarif-root %s is not a folder; give the repository root", root)
	}
	p := report.SARIFPaths{ProjectDir: g.Options.ProjectDir, Root: abs}
	if _, ok := p.Rel(); explicit && !ok {
		if p.ProjectDir == "" {
			return p, Usagef("run %s does not say where its project folder was (an imported run, or one recorded by an older inspect), so --sarif-root cannot place its files; drop --sarif-root for paths relative to the project folder", g.ID)
		}
		return p, Usagef("run %s's project folder %s is not inside --sarif-root %s; give the repository root that holds it", g.ID, p.ProjectDir, root)
	}
	return p, nil
}

func auditContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
