package findings

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/inspect-dev/inspect/graph"
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

// headline is the run line every human format starts with.
func (r *Report) headline() string {
	return fmt.Sprintf("run %s · %s · %s · %s · tokens in %d, out %d · %s", r.Run, orDash(r.Project), r.Status,
		graph.FormatDuration(Price{ElapsedMS: r.ElapsedMS}.Elapsed()), r.TokensIn, r.TokensOut, plural(r.LLMCalls, "model call", "model calls"))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (r *Report) countLine() string {
	if len(r.Findings) == 0 {
		return "No topology mistakes found."
	}
	var parts []string
	if n := r.Count(Error); n > 0 {
		parts = append(parts, plural(n, "error", "errors"))
	}
	if n := len(r.Findings) - r.Count(Error); n > 0 {
		parts = append(parts, plural(n, "warning", "warnings"))
	}
	return fmt.Sprintf("%s: %s.", plural(len(r.Findings), "finding", "findings"), strings.Join(parts, ", "))
}

// WriteText writes the report as plain text for a pipe or a log: for each
// finding what happened, what it cost, where the fix goes and what the next
// run should show; then every rule's check.
func WriteText(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	ew.printf("inspect audit · %s\n", r.headline())
	ew.printf("grades: %s\n\n%s\n", r.GradeLine(), r.countLine())
	for i, f := range r.Findings {
		ew.printf("\n%d. %s %s: %s (%s, agent %s)\n", i+1, strings.ToUpper(f.Severity.String()), f.Rule, f.Name, f.Area, f.Agent)
		ew.printf("   what:  %s\n", f.Message)
		ew.printf("   nodes: %s\n", strings.Join(f.Nodes, " "))
		ew.printf("   cost:  %s\n", f.Price.Summary())
		if f.Price.Basis != "" {
			ew.printf("          %s\n", f.Price.Basis)
		}
		ew.printf("   fix:   %s: %s\n", f.Fix.Location, f.Fix.Text)
		for _, l := range f.Fix.Also {
			ew.printf("          also %s\n", l)
		}
		ew.printf("   next:  %s\n", f.Next)
		for j, c := range f.Causes {
			label := "       "
			if j == 0 {
				label = "causes:"
			}
			ew.printf("   %s %s: %s (%s)\n", label, c.Check, c.Result, c.Detail)
		}
	}
	ew.printf("\nchecks:\n")
	for _, c := range r.Checks {
		ew.printf("  %s\n", c)
	}
	ew.printf("\ngrade scale: %s\n", strings.Join(strings.Fields(GradeScale), " "))
	return ew.err
}

// mdEscape keeps untrusted text (agent names, arguments, answers) from
// turning into markdown structure.
func mdEscape(s string) string {
	r := strings.NewReplacer("\\", "\\\\", "`", "\\`", "*", "\\*", "_", "\\_", "[", "\\[", "]", "\\]",
		"<", "&lt;", ">", "&gt;", "|", "\\|", "#", "\\#", "\n", " ")
	return r.Replace(s)
}

// WriteMarkdown writes the report as GitHub-flavoured markdown (what the
// CLI renders with glamour on a terminal, and what CI pastes into a step
// summary).
func WriteMarkdown(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	ew.printf("# inspect audit\n\n%s\n\n", mdEscape(r.headline()))
	ew.printf("| area | grade | score |\n| --- | --- | --- |\n")
	for _, a := range Areas() {
		ew.printf("| %s | %s | %d |\n", a, r.Grades[a], r.Scores[a])
	}
	ew.printf("\n%s\n", r.countLine())
	for i, f := range r.Findings {
		ew.printf("\n## %d. %s `%s` — %s\n\n", i+1, strings.ToUpper(f.Severity.String()), f.Rule, mdEscape(f.Name))
		ew.printf("%s · agent **%s** · nodes %s\n\n", f.Area, mdEscape(f.Agent), strings.Join(f.Nodes, ", "))
		ew.printf("- **What happened:** %s\n", mdEscape(f.Message))
		ew.printf("- **Cost:** %s", mdEscape(f.Price.Summary()))
		if f.Price.Basis != "" {
			ew.printf(" — %s", mdEscape(f.Price.Basis))
		}
		ew.printf("\n- **Fix:** `%s` — %s", f.Fix.Location, mdEscape(f.Fix.Text))
		for _, l := range f.Fix.Also {
			ew.printf("; also `%s`", l)
		}
		ew.printf("\n- **Next run should show:** %s\n", mdEscape(f.Next))
		if len(f.Causes) > 0 {
			ew.printf("- **Causes checked:**\n")
			for _, c := range f.Causes {
				ew.printf("  - %s: **%s** — %s\n", mdEscape(c.Check), c.Result, mdEscape(c.Detail))
			}
		}
	}
	ew.printf("\n## Checks\n\n| rule | result | examined |\n| --- | --- | --- |\n")
	for _, c := range r.Checks {
		ew.printf("| `%s` | %s | %s |\n", c.Rule, c.Status, mdEscape(c.Detail))
	}
	ew.printf("\n<details><summary>Grade scale</summary>\n\n%s\n\n</details>\n", strings.Join(strings.Fields(GradeScale), " "))
	return ew.err
}

// WriteJSON writes the report as the JSON document of docs/audit-json.md.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// SARIF 2.1.0 types: only what inspect writes.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool              sarifTool        `json:"tool"`
	AutomationDetails *sarifAutomation `json:"automationDetails,omitempty"`
	Results           []sarifResult    `json:"results"`
	Properties        map[string]any   `json:"properties,omitempty"`
}

type sarifAutomation struct {
	ID string `json:"id"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri,omitempty"`
	Version        string      `json:"version,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	ShortDescription     sarifText      `json:"shortDescription"`
	FullDescription      sarifText      `json:"fullDescription"`
	Help                 sarifHelp      `json:"help"`
	DefaultConfiguration sarifConfig    `json:"defaultConfiguration"`
	Properties           map[string]any `json:"properties,omitempty"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifHelp struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Level               string            `json:"level"`
	Message             sarifText         `json:"message"`
	Locations           []sarifLocation   `json:"locations"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Properties          map[string]any    `json:"properties,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

// FingerprintKey is the partialFingerprints key inspect writes in SARIF.
const FingerprintKey = "inspectFinding/v1"

func sarifLevel(s Severity) string {
	if s == Error {
		return "error"
	}
	return "warning"
}

func sarifLoc(l Location) sarifLocation {
	path := l.Path
	if path == "" {
		path = AgentsFile
	}
	loc := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifact{URI: path}}}
	if l.Line > 0 {
		loc.PhysicalLocation.Region = &sarifRegion{StartLine: l.Line}
	}
	return loc
}

// WriteSARIF writes the report as SARIF 2.1.0: one rule descriptor per rule
// in rules (nil = All) with its help text, one result per finding located in
// agents.yaml or a prompt file (never without a location), and a stable
// partialFingerprints entry. Artifact URIs are relative to the project
// folder (agents.yaml, agents/analyst.md).
func WriteSARIF(w io.Writer, r *Report, rules []*Rule) error {
	if rules == nil {
		rules = All
	}
	index := map[string]int{}
	driver := sarifDriver{Name: "inspect", InformationURI: "https://github.com/inspect-dev/inspect", Rules: []sarifRule{}}
	for i, rule := range rules {
		index[rule.ID] = i
		driver.Rules = append(driver.Rules, sarifRule{
			ID:               rule.ID,
			Name:             rule.Doc.Title,
			ShortDescription: sarifText{Text: rule.Doc.Title},
			FullDescription:  sarifText{Text: rule.Doc.Detect},
			Help: sarifHelp{Text: rule.Explain(),
				Markdown: fmt.Sprintf("**%s** (%s)\n\n**Detects:** %s\n\n**Price:** %s\n\n**Fix:** %s\n\n**Next run should show:** %s",
					rule.Doc.Title, rule.Area, rule.Doc.Detect, rule.Doc.Price, rule.Doc.Fix, rule.Doc.Next)},
			DefaultConfiguration: sarifConfig{Level: sarifLevel(rule.Severity)},
			Properties:           map[string]any{"area": string(rule.Area), "tags": []string{"topology", string(rule.Area)}},
		})
	}
	run := sarifRun{
		Tool:              sarifTool{Driver: driver},
		AutomationDetails: &sarifAutomation{ID: "inspect-audit/" + r.Run},
		Results:           []sarifResult{},
		Properties:        map[string]any{"run": r.Run, "project": r.Project, "grades": r.Grades},
	}
	for _, f := range r.Findings {
		i, ok := index[f.Rule]
		if !ok {
			return fmt.Errorf("finding of rule %s, which is not among the SARIF rules", f.Rule)
		}
		msg := fmt.Sprintf("%s. Cost: %s. Fix: %s. Next run should show: %s.", f.Message, f.Price.Summary(), f.Fix.Text, f.Next)
		locs := []sarifLocation{sarifLoc(f.Fix.Location)}
		for _, l := range f.Fix.Also {
			locs = append(locs, sarifLoc(l))
		}
		run.Results = append(run.Results, sarifResult{
			RuleID: f.Rule, RuleIndex: i, Level: sarifLevel(f.Severity),
			Message:             sarifText{Text: msg},
			Locations:           locs,
			PartialFingerprints: map[string]string{FingerprintKey: f.Fingerprint},
			Properties:          map[string]any{"agent": f.Agent, "nodes": f.Nodes, "price": f.Price, "area": string(f.Area)},
		})
	}
	log := sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(log)
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Name    string       `xml:"name,attr"`
	Tests   int          `xml:"tests,attr"`
	Fails   int          `xml:"failures,attr"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name  string      `xml:"name,attr"`
	Tests int         `xml:"tests,attr"`
	Fails int         `xml:"failures,attr"`
	Skip  int         `xml:"skipped,attr"`
	Cases []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes the report as JUnit XML: one test case per rule, failed
// with every finding of that rule, skipped when not applicable.
func WriteJUnit(w io.Writer, r *Report) error {
	suite := junitSuite{Name: "inspect audit " + r.Run}
	byRule := map[string][]Finding{}
	for _, f := range r.Findings {
		byRule[f.Rule] = append(byRule[f.Rule], f)
	}
	for _, c := range r.Checks {
		tc := junitCase{Name: c.Rule, Classname: "inspect.audit", SystemOut: c.String()}
		switch fs := byRule[c.Rule]; {
		case len(fs) > 0:
			var b strings.Builder
			for _, f := range fs {
				fmt.Fprintf(&b, "%s (agent %s, nodes %s)\ncost: %s\nfix: %s: %s\nnext: %s\n\n", f.Message, f.Agent,
					strings.Join(f.Nodes, " "), f.Price.Summary(), f.Fix.Location, f.Fix.Text, f.Next)
			}
			tc.Failure = &junitFailure{Message: fmt.Sprintf("%s: %s", fs[0].Name, plural(len(fs), "finding", "findings")), Type: fs[0].Severity.String(), Text: strings.TrimSpace(b.String())}
			suite.Fails++
		case c.Status == StatusNotApplicable:
			tc.Skipped = &junitSkipped{Message: c.Detail}
			suite.Skip++
		}
		suite.Cases = append(suite.Cases, tc)
	}
	suite.Tests = len(suite.Cases)
	doc := junitSuites{Name: "inspect audit", Tests: suite.Tests, Fails: suite.Fails, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// WriteRulesMarkdown writes the rules as a markdown table (id, area,
// severity, what it detects, its price, where the fix goes): the README and
// docs/audit.md table, and `inspect audit --rules --format markdown`.
func WriteRulesMarkdown(w io.Writer, rules []*Rule) error {
	ew := &errWriter{w: w}
	ew.printf("| id | name | area | severity | detects | price | fix | next run |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rules {
		ew.printf("| `%s` | %s | %s | %s | %s | %s | %s | %s |\n", r.ID, r.Doc.Title, r.Area, r.Severity,
			strings.ReplaceAll(r.Doc.Detect, "|", "\\|"), strings.ReplaceAll(r.Doc.Price, "|", "\\|"),
			strings.ReplaceAll(r.Doc.Fix, "|", "\\|"), strings.ReplaceAll(r.Doc.Next, "|", "\\|"))
	}
	return ew.err
}

// WriteRulesText writes one paragraph per rule: id, title, area, severity
// and what it detects (`inspect audit --rules`).
func WriteRulesText(w io.Writer, rules []*Rule) error {
	ew := &errWriter{w: w}
	for _, r := range rules {
		ew.printf("%-30s %s (%s, %s)\n%-30s %s\n\n", r.ID, r.Doc.Title, r.Area, r.Severity, "", r.Doc.Detect)
	}
	ew.printf("`inspect audit --explain ID` prints a rule's price, fix and expected next run.\n")
	return ew.err
}
