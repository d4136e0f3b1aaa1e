// Package diff compares two recorded runs for CI (DESIGN §10, `inspect
// diff BASE NEW`): which findings are new, fixed or unchanged, how the
// totals moved (tokens, elapsed, model and tool calls, forks, branches,
// hand-offs — overall and per agent), whether each fixed finding's
// expectation ("what the next run should show") is visible in the new run
// (the verdict of the finding's rule's own check, findings.Expect: diff
// holds no rule's knowledge), and whether the change crosses the thresholds a CI job set
// (--max-increase, --fail-on).
//
// Data flows one way: the package takes two *graph.Run and their
// *findings.Report and knows no SQL. Findings are matched by their
// Fingerprint (rule, agent and evidence shape), never by node numbers,
// which change between runs. The renderers (markdown, JSON, JUnit, SARIF)
// write a *Report to an io.Writer; the JSON schema is docs/diff-json.md.
package diff

import (
	"bytes"
	"fmt"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/mermaid"
	"github.com/inspect-dev/inspect/record"
)

// Change statuses of a finding between the base and the new run.
const (
	StatusNew       = "new"       // in the new run only
	StatusFixed     = "fixed"     // in the base run only
	StatusUnchanged = "unchanged" // in both
)

// Expectation results: whether the new run shows what a fixed finding said
// the next run should show (findings' verdicts).
const (
	Shown      = findings.Shown
	NotShown   = findings.NotShown
	NotChecked = findings.NotChecked
)

// Side is one run of a comparison: its graph and its audit.
type Side struct {
	// Ref is the run reference as the user wrote it ("base.db:latest"),
	// for display; empty means the run id.
	Ref string
	// Run is the run's graph.
	Run *graph.Run
	// Report is the run's audit.
	Report *findings.Report
}

// Config is how a comparison runs. The zero value compares with no
// thresholds.
type Config struct {
	// MaxIncrease are the --max-increase limits; a total that grows past
	// one fails the comparison.
	MaxIncrease []Limit
	// FailOn fails the comparison when a new finding has at least this
	// severity; 0 never fails on findings.
	FailOn findings.Severity
	// NoMermaid leaves Report.Mermaid empty (the markdown then has no chart).
	NoMermaid bool
}

// RunInfo identifies one side of a comparison.
type RunInfo struct {
	// Ref is the run reference as given; Run the run id.
	Ref string `json:"ref"`
	Run string `json:"run"`
	// Project and Status are the run's.
	Project string `json:"project"`
	Status  string `json:"status"`
	// Grades are the audit's letters per area.
	Grades map[findings.Area]string `json:"grades"`
}

// Expectation says whether the new run shows what a fixed finding said the
// next run should show: the verdict of the finding's rule's own check
// (findings.Rule.Expect), so diff holds no rule's knowledge.
type Expectation struct {
	// Next is the finding's "next run should show" text.
	Next string `json:"next"`
	// Result is Shown, NotShown or NotChecked.
	Result string `json:"result"`
	// Detail says what was looked at in the new run.
	Detail string `json:"detail"`
}

// FindingChange is one finding with its change status. New and unchanged
// findings are the new run's (nodes of the new run); fixed ones are the
// base run's.
type FindingChange struct {
	findings.Finding
	// Status is StatusNew, StatusFixed or StatusUnchanged.
	Status string `json:"status"`
	// BaseNodes are the evidence nodes in the base run, for unchanged findings.
	BaseNodes []string `json:"base_nodes,omitempty"`
	// Expectation is set on fixed findings.
	Expectation *Expectation `json:"expectation,omitempty"`
}

// Findings groups the finding changes. Each list keeps the audit's order.
type Findings struct {
	New       []FindingChange `json:"new"`
	Fixed     []FindingChange `json:"fixed"`
	Unchanged []FindingChange `json:"unchanged"`
}

// Report is the comparison of two runs.
type Report struct {
	// Base and New identify the two runs.
	Base RunInfo `json:"base"`
	New  RunInfo `json:"new"`
	// Summary is the one-line verdict.
	Summary string `json:"summary"`
	// Totals are the run-wide metrics with their deltas, in Metrics order.
	Totals []Delta `json:"totals"`
	// Money is what the two runs' model calls cost, when both audits had
	// a price table; nil otherwise.
	Money *MoneyDelta `json:"money,omitempty"`
	// Agents are the per-agent metrics: agents of the base run in order of
	// appearance, then agents only the new run has.
	Agents []AgentDelta `json:"agents"`
	// Findings are new, fixed and unchanged findings.
	Findings Findings `json:"findings"`
	// Thresholds are the checks of --max-increase, in the order given.
	Thresholds []ThresholdResult `json:"thresholds"`
	// FailOn is the --fail-on severity ("" when not set).
	FailOn string `json:"fail_on"`
	// Failed is true when a threshold or --fail-on failed the comparison.
	Failed bool `json:"failed"`
	// Reasons say why Failed is true, one sentence each.
	Reasons []string `json:"reasons"`
	// Mermaid is the new run's collapsed Mermaid chart (not in JSON).
	Mermaid string `json:"-"`
	// Rules are the rules the new run's audit ran (SARIF's rule
	// descriptors); not in JSON.
	Rules []*findings.Rule `json:"-"`
}

// Compare compares base with new using the zero Config.
func Compare(base, new Side) (*Report, error) {
	return (&Config{}).Compare(base, new)
}

// Compare compares base with new: it matches their findings by
// fingerprint, computes totals and deltas, checks fixed findings'
// expectations in the new graph and applies the thresholds.
func (c *Config) Compare(base, new Side) (*Report, error) {
	if base.Run == nil || new.Run == nil || base.Report == nil || new.Report == nil {
		return nil, fmt.Errorf("diff: both sides need a run graph and its audit")
	}
	r := &Report{
		Base: info(base), New: info(new),
		Findings:   matchFindings(base.Report.Findings, new.Report.Findings),
		Thresholds: []ThresholdResult{},
		Reasons:    []string{},
		Rules:      new.Report.Rules,
	}
	if c.FailOn != 0 {
		r.FailOn = c.FailOn.String()
	}
	bt, nt := totalsOf(base.Run, ""), totalsOf(new.Run, "")
	r.Totals = deltas(bt, nt)
	r.Agents = agentDeltas(base.Run, new.Run)
	r.Money = moneyDelta(base.Report.Money, new.Report.Money)
	if r.Money != nil {
		for i := range r.Agents {
			a := &r.Agents[i]
			a.Money = agentMoney(base.Report.Money, new.Report.Money, a.Agent)
		}
	}
	for i := range r.Findings.Fixed {
		fc := &r.Findings.Fixed[i]
		v := findings.Expect(base.Report.Rules, fc.Finding, new.Run)
		fc.Expectation = &Expectation{Next: fc.Next, Result: v.Result, Detail: v.Detail}
	}
	for _, l := range c.MaxIncrease {
		tr := l.check(bt, nt)
		r.Thresholds = append(r.Thresholds, tr)
		if !tr.Passed {
			r.Reasons = append(r.Reasons, tr.Message)
		}
	}
	if c.FailOn != 0 {
		n := 0
		for _, f := range r.Findings.New {
			if f.Severity >= c.FailOn && f.Suppressed == nil {
				n++
			}
		}
		if n > 0 {
			r.Reasons = append(r.Reasons, fmt.Sprintf("%s at or above %s (--fail-on %s)", plural(n, "new finding", "new findings"), c.FailOn, c.FailOn))
		}
	}
	if ns := new.Run.Status; ns != record.StatusOK && base.Run.Status == record.StatusOK {
		// A run that broke sends fewer tokens and finds nothing: never read it as an improvement.
		why := fmt.Sprintf("the new run ended %s", ns)
		if new.Run.Error != "" {
			why += ": " + new.Run.Error
		}
		r.Reasons = append([]string{why + " (the base run was ok)"}, r.Reasons...)
	}
	r.Failed = len(r.Reasons) > 0
	r.Summary = summary(r)
	if !c.NoMermaid {
		var buf bytes.Buffer
		if err := mermaid.Fprint(&buf, new.Run); err != nil {
			return nil, fmt.Errorf("diff: draw run %s: %w", new.Run.ID, err)
		}
		r.Mermaid = buf.String()
	}
	return r, nil
}

func info(s Side) RunInfo {
	ref := s.Ref
	if ref == "" {
		ref = s.Run.ID
	}
	return RunInfo{Ref: ref, Run: s.Run.ID, Project: s.Report.Project, Status: s.Report.Status, Grades: s.Report.Grades}
}

// matchFindings pairs findings by fingerprint, in order: the k-th base
// finding with a fingerprint matches the k-th new one with it.
func matchFindings(base, new []findings.Finding) Findings {
	out := Findings{New: []FindingChange{}, Fixed: []FindingChange{}, Unchanged: []FindingChange{}}
	pending := map[string][]int{} // fingerprint → unmatched base indexes
	for i, f := range base {
		pending[f.Fingerprint] = append(pending[f.Fingerprint], i)
	}
	matched := make([]bool, len(base))
	for _, f := range new {
		if idx := pending[f.Fingerprint]; len(idx) > 0 {
			pending[f.Fingerprint] = idx[1:]
			matched[idx[0]] = true
			out.Unchanged = append(out.Unchanged, FindingChange{Finding: f, Status: StatusUnchanged, BaseNodes: base[idx[0]].Nodes})
			continue
		}
		out.New = append(out.New, FindingChange{Finding: f, Status: StatusNew})
	}
	for i, f := range base {
		if !matched[i] {
			out.Fixed = append(out.Fixed, FindingChange{Finding: f, Status: StatusFixed})
		}
	}
	return out
}

func summary(r *Report) string {
	f := r.Findings
	s := fmt.Sprintf("%s, %s, %s", plural(len(f.New), "new finding", "new findings"),
		plural(len(f.Fixed), "fixed", "fixed"), plural(len(f.Unchanged), "unchanged", "unchanged"))
	if len(f.New) == 0 && len(f.Fixed) == 0 && len(f.Unchanged) == 0 {
		s = "no findings in either run"
	}
	for _, d := range r.Totals {
		if d.Metric == MetricTokensIn || d.Metric == MetricElapsed {
			s += "; " + d.Metric.Label() + " " + d.Short()
		}
	}
	switch {
	case r.Failed:
		return "FAIL: " + s
	case !changed(r):
		return "No changes: " + s
	}
	return "OK: " + s
}

// changed reports whether anything moved between the runs.
func changed(r *Report) bool {
	if len(r.Findings.New) > 0 || len(r.Findings.Fixed) > 0 {
		return true
	}
	for _, d := range r.Totals {
		if d.Change != 0 {
			return true
		}
	}
	return false
}

// Changed reports whether the runs differ in findings or totals.
func (r *Report) Changed() bool { return changed(r) }

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
