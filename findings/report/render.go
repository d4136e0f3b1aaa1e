// Package report writes a findings.Report (the audit of one run) for
// people and tools: plain text for a pipe or a log, GitHub-flavoured
// Markdown, the JSON document of docs/audit-json.md, SARIF 2.1.0 for code
// scanning and JUnit XML for CI; and the rules' documentation (--rules,
// --explain) as text, Markdown and JSON. It holds no rule's knowledge:
// what it writes comes from the Report and the rules' Doc. Untrusted text
// (agent names, messages, arguments) never turns into structure in the
// Markdown.
package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jstemmer/go-junit-report/v2/junit"
	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
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

// NodeRanges writes evidence node ids for people: three or more
// consecutive nodes as one range ("n4–n603"), the others one by one,
// joined with sep. Ids that are not n<seq> are written as they are. The
// data formats (JSON, SARIF) keep the full list.
func NodeRanges(ids []string, sep string) string {
	var parts []string
	for i := 0; i < len(ids); {
		a, ok := nodeSeq(ids[i])
		j := i + 1
		for ok && j < len(ids) {
			if b, ok2 := nodeSeq(ids[j]); !ok2 || b != a+int64(j-i) {
				break
			}
			j++
		}
		if j-i >= 3 {
			parts = append(parts, ids[i]+"–"+ids[j-1])
		} else {
			parts = append(parts, ids[i:j]...)
		}
		i = j
	}
	return strings.Join(parts, sep)
}

// nodeSeq reads n<seq>.
func nodeSeq(id string) (int64, bool) {
	if !strings.HasPrefix(id, "n") {
		return 0, false
	}
	v, err := strconv.ParseInt(id[1:], 10, 64)
	return v, err == nil
}

// headline is the run line every human format starts with.
func headline(r *findings.Report) string {
	return fmt.Sprintf("run %s · %s · %s · %s · tokens in %d, out %d · %s", r.Run, orDash(r.Project), r.Status,
		graph.FormatDuration(findings.Price{ElapsedMS: r.ElapsedMS}.Elapsed()), r.TokensIn, r.TokensOut, plural(r.LLMCalls, "model call", "model calls"))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func countLine(r *findings.Report) string {
	active := r.Active()
	if len(active) == 0 && len(r.Findings) == 0 {
		return "No topology mistakes found."
	}
	line := "No topology mistakes that count."
	if len(active) > 0 {
		var parts []string
		if n := r.Count(findings.Error); n > 0 {
			parts = append(parts, plural(n, "error", "errors"))
		}
		if n := len(active) - r.Count(findings.Error); n > 0 {
			parts = append(parts, plural(n, "warning", "warnings"))
		}
		line = fmt.Sprintf("%s: %s.", plural(len(active), "finding", "findings"), strings.Join(parts, ", "))
	}
	if s := suppressedLine(r); s != "" {
		line += " Not counted for --fail-on: " + s + "."
	}
	return line
}

// suppressedLine is "1 accepted by an ignore entry, 2 in the baseline",
// or "".
func suppressedLine(r *findings.Report) string {
	var ignored, baseline int
	for _, f := range r.Findings {
		switch {
		case f.Suppressed == nil:
		case f.Suppressed.Kind == findings.SuppressedBaseline:
			baseline++
		default:
			ignored++
		}
	}
	var parts []string
	if ignored > 0 {
		parts = append(parts, fmt.Sprintf("%d accepted by an ignore entry", ignored))
	}
	if baseline > 0 {
		parts = append(parts, fmt.Sprintf("%d in the baseline", baseline))
	}
	return strings.Join(parts, ", ")
}

// WriteText writes the report as plain text for a pipe or a log: for each
// finding what happened, what it cost, where the fix goes and what the next
// run should show; the findings an ignore entry accepted or the baseline
// had after those that count; then every rule's check.
func WriteText(w io.Writer, r *findings.Report) error {
	ew := &errWriter{w: w}
	ew.printf("inspect audit · %s\n", headline(r))
	if r.Notice != "" {
		ew.printf("notice: %s\n", r.Notice)
	}
	for _, warn := range r.Warnings {
		ew.printf("warning: %s\n", warn)
	}
	if c := r.CostLine(); c != "" {
		ew.printf("cost: %s\n", c)
	}
	if r.Policy != "" {
		ew.printf("policy: %s\n", r.Policy)
	}
	if r.Baseline != "" {
		ew.printf("baseline: %s\n", r.Baseline)
	}
	ew.printf("grades: %s\n\n%s\n", r.GradeLine(), countLine(r))
	writeFindings(r, ew, "\nnot counted (accepted or in the baseline):\n", writeTextFinding)
	ew.printf("\nchecks:\n")
	for _, c := range r.Checks {
		ew.printf("  %s\n", c)
	}
	ew.printf("\ngrade scale: %s\n", strings.Join(strings.Fields(findings.GradeScale), " "))
	return ew.err
}

// writeFindings writes the findings that count, then header and the ones
// that do not (accepted, or in the baseline), numbered on.
func writeFindings(r *findings.Report, ew *errWriter, header string, write func(*errWriter, int, *findings.Finding)) {
	n := 0
	for _, f := range r.Active() {
		n++
		write(ew, n, &f)
	}
	if sup := r.Suppressed(); len(sup) > 0 {
		ew.printf("%s", header)
		for _, f := range sup {
			n++
			write(ew, n, &f)
		}
	}
}

func writeTextFinding(ew *errWriter, i int, f *findings.Finding) {
	sev := strings.ToUpper(f.Severity.String())
	if f.Suppressed != nil {
		sev = strings.ToUpper(f.Suppressed.Kind) + " " + f.Severity.String()
	}
	ew.printf("\n%d. %s %s: %s (%s, agent %s)\n", i, sev, f.Rule, f.Name, f.Area, f.Agent)
	if f.Suppressed != nil {
		ew.printf("   why:   %s\n", f.Suppressed)
	}
	ew.printf("   what:  %s\n", f.Message)
	ew.printf("   nodes: %s\n", NodeRanges(f.Nodes, " "))
	ew.printf("   cost:  %s\n", f.CostSummary())
	if f.Price.Basis != "" {
		ew.printf("          %s\n", f.Price.Basis)
	}
	ew.printf("   fix:   %s\n", f.Fix.Line())
	for _, l := range f.Fix.Also {
		ew.printf("          also %s\n", l)
	}
	ew.printf("   next:  %s\n", f.Next)
	ew.printf("   id:    %s\n", f.Fingerprint)
	for j, c := range f.Causes {
		label := "       "
		if j == 0 {
			label = "causes:"
		}
		ew.printf("   %s %s: %s (%s)\n", label, c.Check, c.Result, c.Detail)
	}
}

// mdLocation writes a fix location in Markdown: a file and line as code, a
// label naming instructions no file holds ("the instructions of agent X")
// as words. Untrusted text (agent names, arguments, answers) goes through
// termsafe's Markdown and Code, the escaper diff and the prompt-cache
// report share.
func mdLocation(l findings.Location) string {
	if l.Path == "" && l.Label != "" {
		return termsafe.Markdown(l.Label)
	}
	return termsafe.Code(l.String())
}

// WriteMarkdown writes the report as GitHub-flavoured markdown (what the
// CLI renders with glamour on a terminal, and what CI pastes into a step
// summary).
func WriteMarkdown(w io.Writer, r *findings.Report) error {
	ew := &errWriter{w: w}
	ew.printf("# inspect audit\n\n%s\n\n", termsafe.Markdown(headline(r)))
	if r.Notice != "" {
		ew.printf("> **Notice:** %s\n\n", termsafe.Markdown(r.Notice))
	}
	for _, warn := range r.Warnings {
		ew.printf("> **Warning:** %s\n\n", termsafe.Markdown(warn))
	}
	if r.Money != nil {
		ew.printf("**Cost:** %s\n\n", termsafe.Markdown(r.Money.Summary()))
		if len(r.Money.Agents) > 0 {
			ew.printf("| agent | model calls | tokens in | cached | cache write | tokens out | cost |\n| --- | --- | --- | --- | --- | --- | --- |\n")
			for _, a := range r.Money.Agents {
				cost := r.Money.Format(a.Amount.Amount)
				if a.Unpriced > 0 {
					cost += fmt.Sprintf(" (%d unpriced)", a.Unpriced)
				}
				ew.printf("| %s | %d | %d | %d | %d | %d | %s |\n", termsafe.Markdown(orDash(a.Agent)), a.Calls, a.TokensIn, a.Cached, a.CacheWrite, a.TokensOut, cost)
			}
			ew.printf("\n")
		}
	}
	if r.Policy != "" {
		ew.printf("Policy: %s\n\n", termsafe.Code(r.Policy))
	}
	if r.Baseline != "" {
		ew.printf("Baseline: %s\n\n", termsafe.Code(r.Baseline))
	}
	ew.printf("| area | grade | score |\n| --- | --- | --- |\n")
	for _, a := range findings.Areas() {
		if r.Grades[a] == findings.NA {
			ew.printf("| %s | %s | — |\n", a, findings.NA) // nothing examined: no score
			continue
		}
		ew.printf("| %s | %s | %d |\n", a, r.Grades[a], r.Scores[a])
	}
	ew.printf("\n%s\n", countLine(r))
	writeFindings(r, ew, "\n## Not counted (accepted or in the baseline)\n", writeMarkdownFinding)
	ew.printf("\n## Checks\n\n| rule | result | examined |\n| --- | --- | --- |\n")
	for _, c := range r.Checks {
		ew.printf("| `%s` | %s | %s |\n", c.Rule, c.Status, termsafe.Markdown(c.Detail))
	}
	ew.printf("\n<details><summary>Grade scale</summary>\n\n%s\n\n</details>\n", strings.Join(strings.Fields(findings.GradeScale), " "))
	return ew.err
}

func writeMarkdownFinding(ew *errWriter, i int, f *findings.Finding) {
	sev := strings.ToUpper(f.Severity.String())
	if f.Suppressed != nil {
		sev = strings.ToUpper(f.Suppressed.Kind) + " " + f.Severity.String()
	}
	ew.printf("\n## %d. %s `%s` — %s\n\n", i, sev, f.Rule, termsafe.Markdown(f.Name))
	ew.printf("%s · agent **%s** · nodes %s · id `%s`\n\n", f.Area, termsafe.Markdown(f.Agent), NodeRanges(f.Nodes, ", "), f.Fingerprint)
	if f.Suppressed != nil {
		ew.printf("- **Not counted:** %s\n", termsafe.Markdown(f.Suppressed.String()))
	}
	ew.printf("- **What happened:** %s\n", termsafe.Markdown(f.Message))
	ew.printf("- **Cost:** %s", termsafe.Markdown(f.CostSummary()))
	if f.Price.Basis != "" {
		ew.printf(" — %s", termsafe.Markdown(f.Price.Basis))
	}
	ew.printf("\n- **Fix:** %s — %s", mdLocation(f.Fix.Location), termsafe.Markdown(f.Fix.Said()))
	for _, l := range f.Fix.Also {
		ew.printf("; also %s", mdLocation(l))
	}
	ew.printf("\n- **Next run should show:** %s\n", termsafe.Markdown(f.Next))
	if len(f.Causes) > 0 {
		ew.printf("- **Causes checked:**\n")
		for _, c := range f.Causes {
			ew.printf("  - %s: **%s** — %s\n", termsafe.Markdown(c.Check), c.Result, termsafe.Markdown(c.Detail))
		}
	}
}

// WriteJSON writes the report as the JSON document of docs/audit-json.md.
func WriteJSON(w io.Writer, r *findings.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// sarifSchema is the $schema inspect's SARIF names.
const sarifSchema = "https://json.schemastore.org/sarif-2.1.0.json"

func sarifLevel(s findings.Severity) string {
	if s == findings.Error {
		return sarif.LevelError
	}
	return sarif.LevelWarning
}

// The uriBaseIds of inspect's SARIF: every artifact URI is relative to one
// of them, and the run's originalUriBaseIds says where each one is.
const (
	// SARIFRootBase is the folder SARIFPaths.Root names (the repository
	// root, `--sarif-root`): URIs hold the project's path in it
	// (myproject/agents.yaml), as code scanning wants.
	SARIFRootBase = "SRCROOT"
	// SARIFProjectBase is the project folder itself, used when the
	// project's place under a root is not known: URIs are agents.yaml,
	// agents/analyst.md.
	SARIFProjectBase = "PROJECTROOT"
)

// SARIFPaths says where the files a SARIF log names are, so a project in a
// repository subfolder points at the right files.
type SARIFPaths struct {
	// ProjectDir is the absolute path of the project folder the run was
	// recorded from ("" = not known: an imported or older run).
	ProjectDir string
	// Root is the absolute path of the folder URIs are relative to: the
	// repository root ("" = none; URIs are then relative to the project).
	Root string
}

// Rel is the project folder's slash path inside Root ("" for Root itself),
// and whether it is inside Root at all.
func (p SARIFPaths) Rel() (string, bool) {
	if p.Root == "" || p.ProjectDir == "" {
		return "", false
	}
	rel, err := filepath.Rel(p.Root, p.ProjectDir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	if rel == "." {
		rel = ""
	}
	return filepath.ToSlash(rel), true
}

// sarifPaths turns project-relative paths into artifact locations.
type sarifPaths struct {
	base   string // SARIFRootBase or SARIFProjectBase
	prefix string // the project's path under the root, with a trailing /
	bases  map[string]sarif.ArtifactLocation
}

func newSARIFPaths(p SARIFPaths) *sarifPaths {
	fileURI := func(dir string) string {
		return (&url.URL{Scheme: "file", Path: strings.TrimSuffix(filepath.ToSlash(dir), "/") + "/"}).String()
	}
	if rel, ok := p.Rel(); ok {
		prefix := ""
		if rel != "" {
			prefix = rel + "/"
		}
		root := sarif.NewArtifactLocation().WithURI(fileURI(p.Root)).
			WithDescription(sarif.NewTextMessage("the repository root (inspect audit --sarif-root)"))
		return &sarifPaths{base: SARIFRootBase, prefix: prefix, bases: map[string]sarif.ArtifactLocation{SARIFRootBase: *root}}
	}
	proj := sarif.NewArtifactLocation().WithDescription(sarif.NewTextMessage("the project folder (the one holding agents.yaml)"))
	if p.ProjectDir != "" {
		proj.WithURI(fileURI(p.ProjectDir))
	}
	return &sarifPaths{base: SARIFProjectBase, bases: map[string]sarif.ArtifactLocation{SARIFProjectBase: *proj}}
}

func (sp *sarifPaths) loc(l findings.Location) *sarif.Location {
	if l.Path == "" && l.Source != "" && filepath.IsAbs(l.Source) {
		// an imported run's instructions no project file holds: the
		// imported file itself
		art := sarif.NewArtifactLocation().WithURI((&url.URL{Scheme: "file", Path: filepath.ToSlash(l.Source)}).String())
		loc := sarif.NewLocationWithPhysicalLocation(sarif.NewPhysicalLocation().WithArtifactLocation(art))
		if l.Label != "" {
			loc.WithMessage(sarif.NewTextMessage(l.Label))
		}
		return loc
	}
	path := l.Path
	if path == "" {
		path = findings.AgentsFile
	}
	art := sarif.NewArtifactLocation().WithURI((&url.URL{Path: sp.prefix + path}).String()).WithURIBaseID(sp.base)
	phys := sarif.NewPhysicalLocation().WithArtifactLocation(art)
	if l.Line > 0 {
		phys.WithRegion(sarif.NewRegion().WithStartLine(l.Line))
	}
	return sarif.NewLocationWithPhysicalLocation(phys)
}

// SARIFOptions adjusts the log WriteSARIFWith builds; the zero value is
// what WriteSARIF writes for `inspect audit`.
type SARIFOptions struct {
	// Paths places the artifact URIs (see SARIFPaths); the zero value
	// makes them relative to the project folder.
	Paths SARIFPaths
	// Rules get one descriptor each; nil means the rules the audit ran
	// (Report.Rules).
	Rules []*findings.Rule
	// AutomationID is the run's automationDetails.id; "" means
	// "inspect-audit/<run>".
	AutomationID string
	// Properties are added to the run's properties (run, project, grades).
	Properties map[string]any
	// BaselineStates, when not nil, has one SARIF baselineState per finding
	// of the report, in order: "new", "unchanged", "updated" or "absent".
	BaselineStates []string
}

// WriteSARIF writes the report as SARIF 2.1.0: one rule descriptor per rule
// in rules (nil = the rules the audit ran) with its help text, one result per finding located in
// agents.yaml or a prompt file (never without a location), and a stable
// partialFingerprints entry. Artifact URIs are relative to the project
// folder (agents.yaml, agents/analyst.md, uriBaseId PROJECTROOT);
// WriteSARIFWith with SARIFOptions.Paths places them in a repository.
func WriteSARIF(w io.Writer, r *findings.Report, rules []*findings.Rule) error {
	return WriteSARIFWith(w, r, SARIFOptions{Rules: rules})
}

// WriteSARIFWith writes the report as WriteSARIF does, adjusted by o:
// `inspect diff` sets its automation id, the base run and each result's
// baselineState.
func WriteSARIFWith(w io.Writer, r *findings.Report, o SARIFOptions) error {
	log, err := buildSARIF(r, o)
	if err != nil {
		return err
	}
	if err := log.PrettyWrite(w); err != nil {
		return err
	}
	_, err = io.WriteString(w, "\n")
	return err
}

func buildSARIF(r *findings.Report, o SARIFOptions) (*sarif.Report, error) {
	rules := o.Rules
	if rules == nil {
		rules = r.Rules
	}
	if o.BaselineStates != nil && len(o.BaselineStates) != len(r.Findings) {
		return nil, fmt.Errorf("%d SARIF baseline states for %d findings", len(o.BaselineStates), len(r.Findings))
	}
	run := sarif.NewRunWithInformationURI("inspect", "https://github.com/inspect-dev/inspect")
	paths := newSARIFPaths(o.Paths)
	run.WithOriginalUriBaseIds(paths.bases)
	index := map[string]int{}
	for i, rule := range rules {
		index[rule.ID] = i
		markdown := fmt.Sprintf("**%s** (%s)\n\n**Detects:** %s\n\n**Price:** %s\n\n**Fix:** %s\n\n**Next run should show:** %s",
			rule.Doc.Title, rule.Area, rule.Detect(r.Options), rule.Doc.Price, rule.Doc.Fix, rule.Doc.Next)
		run.AddRule(rule.ID).
			WithName(rule.Doc.Title).
			WithShortDescription(sarif.NewMultiformatMessageString().WithText(rule.Doc.Title)).
			WithFullDescription(sarif.NewMultiformatMessageString().WithText(rule.Detect(r.Options))).
			WithHelp(sarif.NewMultiformatMessageString().WithText(rule.Explain(r.Options)).WithMarkdown(markdown)).
			WithDefaultConfiguration(sarif.NewReportingConfiguration().WithLevel(sarifLevel(rule.Severity)).WithEnabled(!ruleOff(r.Options, rule.ID))).
			WithProperties(sarif.NewPropertyBag().Add("area", string(rule.Area)).WithTags([]string{"topology", string(rule.Area)}))
	}
	id := o.AutomationID
	if id == "" {
		id = "inspect-audit/" + r.Run
	}
	run.WithAutomationDetails(sarif.NewRunAutomationDetails().WithID(id))
	props := sarif.NewPropertyBag().Add("run", r.Run).Add("project", r.Project).Add("grades", r.Grades)
	if r.Money != nil {
		props.Add("cost", r.Money)
	}
	if len(r.Warnings) > 0 {
		props.Add("warnings", r.Warnings)
	}
	if r.Baseline != "" {
		props.Add("baseline", r.Baseline)
	}
	if r.Notice != "" {
		props.Add("notice", r.Notice)
	}
	for k, v := range o.Properties {
		props.Add(k, v)
	}
	run.WithProperties(props)
	for n, f := range r.Findings {
		i, ok := index[f.Rule]
		if !ok {
			return nil, fmt.Errorf("finding of rule %s, which is not among the SARIF rules", f.Rule)
		}
		msg := fmt.Sprintf("%s. Cost: %s. Fix: %s. Next run should show: %s.", f.Message, f.CostSummary(), f.Fix.Text, f.Next)
		// WithPartialFingerprints, not AddPartialFingerprint: in go-sarif
		// v3.3.1 the latter writes to a nil map and panics.
		res := sarif.NewRuleResult(f.Rule).
			WithRuleIndex(i).
			WithLevel(sarifLevel(f.Severity)).
			WithMessage(sarif.NewTextMessage(msg)).
			AddLocation(paths.loc(f.Fix.Location)).
			WithPartialFingerprints(map[string]string{findings.FingerprintKey: f.Fingerprint}).
			WithProperties(sarif.NewPropertyBag().Add("agent", f.Agent).Add("nodes", f.Nodes).Add("price", f.Price).Add("area", string(f.Area)))
		for _, l := range f.Fix.Also {
			res.AddLocation(paths.loc(l))
		}
		if f.Money != nil {
			res.Properties.Add("money", f.Money)
		}
		switch {
		case o.BaselineStates != nil:
			res.WithBaselineState(o.BaselineStates[n])
		case r.Baseline != "" && f.Suppressed != nil && f.Suppressed.Kind == findings.SuppressedBaseline:
			res.WithBaselineState("unchanged")
		case r.Baseline != "":
			res.WithBaselineState("new")
		}
		if s := f.Suppressed; s != nil && s.Kind == findings.SuppressedIgnore {
			// An ignore entry lives in the team's config, outside the
			// files the result points at: an external suppression.
			sup := sarif.NewSuppression().WithKind("external").WithStatus("accepted").WithJustification(s.Reason)
			bag := sarif.NewPropertyBag().Add("source", s.Source)
			if s.Expires != "" {
				bag.Add("expires", s.Expires)
			}
			res.AddSuppression(sup.WithProperties(bag))
		}
		run.AddResult(res)
	}
	log := sarif.NewReport().AddRun(run)
	log.Schema = sarifSchema
	return log, nil
}

// ruleOff reports whether rule id was turned off in o.
func ruleOff(o *findings.Options, id string) bool {
	_, off := o.Off(id)
	return off
}

// JUnitText makes s safe for the character data of a JUnit report:
// junit.Result and junit.Output write it as CDATA, which encoding/xml
// does not check, so characters XML cannot carry become U+FFFD (as
// encoding/xml does for attributes).
func JUnitText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == 0x09 || r == 0x0A || r == 0x0D || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF {
			return r
		}
		return '\uFFFD'
	}, s)
}

// WriteJUnitXML writes doc with an XML declaration: the JUnit document of
// `inspect audit` and `inspect diff`.
func WriteJUnitXML(w io.Writer, doc *junit.Testsuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	return doc.WriteXML(w)
}

// WriteJUnit writes the report as JUnit XML: one test case per rule, failed
// with every finding of that rule, skipped when not applicable.
func WriteJUnit(w io.Writer, r *findings.Report) error {
	// The audit is not timed; a suite's time attribute is required.
	suite := junit.Testsuite{Name: "inspect audit " + r.Run, Time: "0.000"}
	if r.Notice != "" {
		suite.AddProperty("notice", JUnitText(r.Notice))
	}
	for _, warn := range r.Warnings {
		suite.AddProperty("warning", JUnitText(warn))
	}
	if r.Money != nil {
		suite.AddProperty("cost", JUnitText(r.CostLine()))
	}
	byRule := map[string][]findings.Finding{}
	notCounted := map[string][]findings.Finding{}
	for _, f := range r.Findings {
		if f.Suppressed != nil {
			notCounted[f.Rule] = append(notCounted[f.Rule], f)
		} else {
			byRule[f.Rule] = append(byRule[f.Rule], f)
		}
	}
	for _, c := range r.Checks {
		out := c.String()
		for _, f := range notCounted[c.Rule] {
			out += fmt.Sprintf("\nnot counted, %s: %s (agent %s, nodes %s)", f.Suppressed, f.Message, f.Agent, NodeRanges(f.Nodes, " "))
		}
		tc := junit.Testcase{Name: c.Rule, Classname: "inspect.audit", SystemOut: &junit.Output{Data: JUnitText(out)}}
		switch fs := byRule[c.Rule]; {
		case len(fs) > 0:
			var b strings.Builder
			for _, f := range fs {
				fmt.Fprintf(&b, "%s (agent %s, nodes %s)\ncost: %s\nfix: %s\nnext: %s\n\n", f.Message, f.Agent,
					NodeRanges(f.Nodes, " "), f.CostSummary(), f.Fix.Line(), f.Next)
			}
			tc.Failure = &junit.Result{Message: fmt.Sprintf("%s: %s", fs[0].Name, plural(len(fs), "finding", "findings")),
				Type: fs[0].Severity.String(), Data: JUnitText(strings.TrimSpace(b.String()))}
		case c.Status == findings.StatusNotApplicable, c.Status == findings.StatusOff:
			tc.Skipped = &junit.Result{Message: c.Detail}
		}
		suite.AddTestcase(tc)
	}
	doc := junit.Testsuites{Name: "inspect audit"}
	doc.AddSuite(suite)
	return WriteJUnitXML(w, &doc)
}

// WriteRulesMarkdown writes the rules as a markdown table (id, area,
// severity, what it detects with the thresholds in o (nil: the defaults),
// its price, where the fix goes): the docs/audit.md table, and
// `inspect audit --rules --format markdown`.
func WriteRulesMarkdown(w io.Writer, rules []*findings.Rule, o *findings.Options) error {
	ew := &errWriter{w: w}
	ew.printf("| id | name | area | severity | detects | price | fix | next run |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rules {
		ew.printf("| `%s` | %s | %s | %s | %s | %s | %s | %s |\n", r.ID, r.Doc.Title, r.Area, r.Severity,
			strings.ReplaceAll(r.Detect(o), "|", "\\|"), strings.ReplaceAll(r.Doc.Price, "|", "\\|"),
			strings.ReplaceAll(r.Doc.Fix, "|", "\\|"), strings.ReplaceAll(r.Doc.Next, "|", "\\|"))
	}
	return ew.err
}

// WriteRulesText writes one paragraph per rule: id, title, area, severity
// and what it detects with the thresholds in o (`inspect audit --rules`).
func WriteRulesText(w io.Writer, rules []*findings.Rule, o *findings.Options) error {
	ew := &errWriter{w: w}
	for _, r := range rules {
		ew.printf("%-30s %s (%s, %s)\n%-30s %s\n", r.ID, r.Doc.Title, r.Area, r.Severity, "", r.Detect(o))
		if src, off := o.Off(r.ID); off {
			ew.printf("%-30s off (%s)\n", "", src)
		}
		var ts []string
		for _, t := range ruleThresholds(r, o) {
			ts = append(ts, fmt.Sprintf("%s = %s (%s)", t.Name, t.Value, thresholdOrigin(t)))
		}
		if len(ts) > 0 {
			ew.printf("%-30s thresholds: %s\n", "", strings.Join(ts, ", "))
		}
		ew.printf("\n")
	}
	ew.printf("`inspect audit --explain ID` prints a rule's price, fix and expected next run.\n")
	return ew.err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
