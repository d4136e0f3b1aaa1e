package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/jstemmer/go-junit-report/v2/junit"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/report"
	"github.com/inspect-dev/inspect/internal/termsafe"
)

// errWriter remembers the first write error and stops writing after it.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err != nil {
		return
	}
	_, e.err = fmt.Fprintf(e.w, format, args...)
}

func gradeLine(g map[findings.Area]string) string {
	var parts []string
	for _, a := range findings.Areas() {
		if l := g[a]; l != "" {
			parts = append(parts, fmt.Sprintf("%s %s", a, l))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func (d Delta) cell(v int64) string {
	if d.Metric == MetricTokensCached && !d.Reported {
		return "not reported"
	}
	return d.Metric.format(v)
}

func (d Delta) changeCell() string {
	if d.Metric == MetricTokensCached && !d.Reported {
		return "-"
	}
	return d.Short()
}

// WriteMarkdown writes the comparison as GitHub-flavoured markdown, ready
// for $GITHUB_STEP_SUMMARY or a pull-request comment: the verdict, the
// totals with deltas, the thresholds, new, fixed and unchanged findings
// (with price and fix location), the per-agent totals, and the new run's
// collapsed Mermaid chart.
func WriteMarkdown(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	ew.printf("# inspect diff\n\n**%s**\n\n", termsafe.Markdown(r.Summary))
	for _, s := range []struct {
		label string
		info  RunInfo
	}{{"base", r.Base}, {"new", r.New}} {
		ew.printf("- %s: %s", s.label, termsafe.Code(s.info.Run))
		if s.info.Ref != s.info.Run {
			ew.printf(" (%s)", termsafe.Markdown(s.info.Ref))
		}
		ew.printf(" · %s · %s · grades %s\n", termsafe.Markdown(orDash(s.info.Project)), s.info.Status, gradeLine(s.info.Grades))
	}
	ew.printf("\n| total | base | new | change |\n| --- | ---: | ---: | ---: |\n")
	for _, d := range r.Totals {
		ew.printf("| %s | %s | %s | %s |\n", d.Metric.Label(), d.cell(d.Base), d.cell(d.New), d.changeCell())
	}
	if m := r.Money; m != nil {
		ew.printf("| cost | %s | %s | %s |\n", m.cell(m.Base), m.cell(m.New), m.Short())
	}
	if len(r.Thresholds) > 0 {
		ew.printf("\n## Thresholds\n\n| limit | base | new | increase | result |\n| --- | ---: | ---: | ---: | --- |\n")
		for _, t := range r.Thresholds {
			m := Metric(t.Key)
			if t.Key == "elapsed" {
				m = MetricElapsed
			}
			d := Delta{Metric: m, Change: t.Increase, Percent: t.Percent}
			res := "✅ within"
			if !t.Passed {
				res = "❌ over"
			}
			ew.printf("| `%s` | %s | %s | %s | %s |\n", t.Limit, m.format(t.Base), m.format(t.New), d.Short(), res)
		}
	}
	if r.Failed {
		ew.printf("\n**Failed:**\n\n")
		for _, reason := range r.Reasons {
			ew.printf("- %s\n", termsafe.Markdown(reason))
		}
	}
	writeMDFindings(ew, "New findings", r.Findings.New)
	writeMDFindings(ew, "Fixed findings", r.Findings.Fixed)
	writeMDFindings(ew, "Unchanged findings", r.Findings.Unchanged)
	if len(r.Agents) > 0 {
		ew.printf("\n<details><summary>Per agent</summary>\n\n| agent |")
		for _, m := range Metrics() {
			ew.printf(" %s |", m.Label())
		}
		cols := len(Metrics())
		if r.Money != nil {
			ew.printf(" cost |")
			cols++
		}
		ew.printf("\n| --- |%s\n", strings.Repeat(" ---: |", cols))
		for _, a := range r.Agents {
			name := termsafe.Markdown(a.Agent)
			if st := a.State(); st != "" {
				name += " (" + st + ")"
			}
			ew.printf("| %s |", name)
			for _, d := range a.Totals {
				ew.printf(" %s |", d.Cell())
			}
			if r.Money != nil {
				ew.printf(" %s |", a.Money.Cell())
			}
			ew.printf("\n")
		}
		ew.printf("\nPer agent, elapsed is busy time: the agent's model and tool calls.\n\n</details>\n")
	}
	if r.Mermaid != "" {
		ew.printf("\n## New run\n\n```mermaid\n%s", r.Mermaid)
		if !strings.HasSuffix(r.Mermaid, "\n") {
			ew.printf("\n")
		}
		ew.printf("```\n")
	}
	return ew.err
}

func writeMDFindings(ew *errWriter, title string, list []FindingChange) {
	if len(list) == 0 {
		return
	}
	ew.printf("\n## %s (%d)\n\n", title, len(list))
	for _, f := range list {
		ew.printf("- **%s** `%s` — %s · agent **%s** · nodes %s\n", strings.ToUpper(f.Severity.String()), f.Rule,
			termsafe.Markdown(f.Name), termsafe.Markdown(f.Agent), report.NodeRanges(f.Nodes, ", "))
		if f.Status == StatusUnchanged && len(f.BaseNodes) > 0 {
			ew.printf("  (base: %s)\n", strings.Join(f.BaseNodes, ", "))
		}
		ew.printf("  - %s\n", termsafe.Markdown(f.Message))
		if f.Suppressed != nil {
			ew.printf("  - **Not counted:** %s\n", termsafe.Markdown(f.Suppressed.String()))
		}
		ew.printf("  - **Cost:** %s\n", termsafe.Markdown(f.CostSummary()))
		ew.printf("  - **Fix:** %s — %s\n", termsafe.Code(f.Fix.Location.String()), termsafe.Markdown(f.Fix.Said()))
		if e := f.Expectation; e != nil {
			ew.printf("  - **Next run should show:** %s — **%s**: %s\n", termsafe.Markdown(e.Next), e.Result, termsafe.Markdown(e.Detail))
		}
	}
}

// WriteJSON writes the comparison as the JSON document of docs/diff-json.md.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteJUnit writes the comparison as JUnit XML: one test case per new
// finding (failed when it is at or above --fail-on), one per --max-increase
// limit (failed when over), and a passing "no new findings" case when there
// are none. Failures match the exit code.
func WriteJUnit(w io.Writer, r *Report, failOn findings.Severity) error {
	// The comparison is not timed; a suite's time attribute is required.
	suite := junit.Testsuite{Name: fmt.Sprintf("inspect diff %s..%s", r.Base.Run, r.New.Run), Time: "0.000"}
	for _, f := range r.Findings.New {
		tc := junit.Testcase{Name: fmt.Sprintf("new %s (agent %s)", f.Rule, f.Agent), Classname: "inspect.diff.findings"}
		text := report.JUnitText(fmt.Sprintf("%s (nodes %s)\ncost: %s\nfix: %s\nnext: %s", f.Message, report.NodeRanges(f.Nodes, " "),
			f.CostSummary(), f.Fix.Line(), f.Next))
		if f.Suppressed != nil {
			text += report.JUnitText("\nnot counted, " + f.Suppressed.String())
		}
		if failOn != 0 && f.Severity >= failOn && f.Suppressed == nil {
			tc.Failure = &junit.Result{Message: fmt.Sprintf("new %s: %s", f.Severity, f.Name), Type: f.Severity.String(), Data: text}
		} else {
			tc.SystemOut = &junit.Output{Data: text}
		}
		suite.AddTestcase(tc)
	}
	if len(r.Findings.New) == 0 {
		suite.AddTestcase(junit.Testcase{Name: "no new findings", Classname: "inspect.diff.findings",
			SystemOut: &junit.Output{Data: fmt.Sprintf("%d fixed, %d unchanged", len(r.Findings.Fixed), len(r.Findings.Unchanged))}})
	}
	for _, t := range r.Thresholds {
		tc := junit.Testcase{Name: "max-increase " + t.Limit, Classname: "inspect.diff.thresholds"}
		if t.Passed {
			tc.SystemOut = &junit.Output{Data: report.JUnitText(t.Message)}
		} else {
			tc.Failure = &junit.Result{Message: t.Message, Type: "threshold", Data: report.JUnitText(t.Message)}
		}
		suite.AddTestcase(tc)
	}
	doc := junit.Testsuites{Name: "inspect diff"}
	doc.AddSuite(suite)
	return report.WriteJUnitXML(w, &doc)
}

// WriteSARIF writes the comparison as SARIF 2.1.0 through
// report.WriteSARIFWith, so rules, locations and fingerprints are the
// audit's: new and unchanged findings of the new run, and fixed findings of
// the base run, each result with baselineState new, unchanged or absent.
// paths places the artifact URIs, as for the new run's audit.
func WriteSARIF(w io.Writer, r *Report, paths report.SARIFPaths) error {
	rep := &findings.Report{Run: r.New.Run, Project: r.New.Project, Status: r.New.Status, Grades: r.New.Grades, Rules: r.Rules}
	var states []string
	for _, group := range []struct {
		list  []FindingChange
		state string
	}{{r.Findings.New, "new"}, {r.Findings.Unchanged, "unchanged"}, {r.Findings.Fixed, "absent"}} {
		for _, f := range group.list {
			rep.Findings = append(rep.Findings, f.Finding)
			states = append(states, group.state)
		}
	}
	return report.WriteSARIFWith(w, rep, report.SARIFOptions{
		Paths:          paths,
		AutomationID:   "inspect-diff/" + r.New.Run,
		Properties:     map[string]any{"baseRun": r.Base.Run},
		BaselineStates: states,
	})
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
