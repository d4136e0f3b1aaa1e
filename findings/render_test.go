package findings_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/findings/report"
	"github.com/inspect-dev/inspect/findings/rules"
	goldenfile "github.com/inspect-dev/inspect/internal/golden"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/inspect-dev/inspect/findings"
)

type renderer struct {
	ext   string
	write func(*bytes.Buffer, *findings.Report) error
}

var renderers = []renderer{
	{"txt", func(b *bytes.Buffer, r *findings.Report) error { return report.WriteText(b, r) }},
	{"md", func(b *bytes.Buffer, r *findings.Report) error { return report.WriteMarkdown(b, r) }},
	{"json", func(b *bytes.Buffer, r *findings.Report) error { return report.WriteJSON(b, r) }},
	{"sarif", func(b *bytes.Buffer, r *findings.Report) error { return report.WriteSARIF(b, r, nil) }},
	{"junit.xml", func(b *bytes.Buffer, r *findings.Report) error { return report.WriteJUnit(b, r) }},
}

// TestRender_Golden renders every corpus fixture's audit in every format,
// twice (byte-stable), and compares with the goldens.
func TestRender_Golden(t *testing.T) {
	for _, name := range corpus(t) {
		t.Run(name, func(t *testing.T) {
			rep := recordFixture(t, name).audit(t)
			for _, r := range renderers {
				var a, b bytes.Buffer
				if err := r.write(&a, rep); err != nil {
					t.Fatalf("%s: %v", r.ext, err)
				}
				if err := r.write(&b, rep); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a.Bytes(), b.Bytes()) {
					t.Errorf("%s output differs between two renders", r.ext)
				}
				golden(t, filepath.Join("golden", name+"."+r.ext), a.Bytes())
			}
		})
	}
}

// TestWriteSARIF_Schema validates the SARIF of every corpus fixture against
// the official SARIF 2.1.0 schema, and checks what GitHub needs: a location
// on every result and a partial fingerprint.
func TestWriteSARIF_Schema(t *testing.T) {
	c := jsonschema.NewCompiler()
	sch, err := c.Compile(filepath.Join("testdata", "sarif-2.1.0.json"))
	if err != nil {
		t.Fatalf("compile schema: %v", err)
	}
	for _, name := range corpus(t) {
		t.Run(name, func(t *testing.T) {
			rep := recordFixture(t, name).audit(t)
			var b bytes.Buffer
			if err := report.WriteSARIF(&b, rep, nil); err != nil {
				t.Fatal(err)
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(doc); err != nil {
				t.Fatalf("SARIF does not validate: %v", err)
			}
			var log struct {
				Runs []struct {
					Tool struct {
						Driver struct {
							Rules []struct {
								ID   string `json:"id"`
								Help struct {
									Text string `json:"text"`
								} `json:"help"`
							} `json:"rules"`
						} `json:"driver"`
					} `json:"tool"`
					Results []struct {
						RuleID              string            `json:"ruleId"`
						Locations           []json.RawMessage `json:"locations"`
						PartialFingerprints map[string]string `json:"partialFingerprints"`
					} `json:"results"`
				} `json:"runs"`
			}
			if err := json.Unmarshal(b.Bytes(), &log); err != nil {
				t.Fatal(err)
			}
			if got := len(log.Runs[0].Tool.Driver.Rules); got != len(rules.All) {
				t.Errorf("%d rule descriptors, want %d", got, len(rules.All))
			}
			for _, r := range log.Runs[0].Tool.Driver.Rules {
				if !strings.Contains(r.Help.Text, "Fix:") {
					t.Errorf("rule %s help text lacks the fix: %q", r.ID, r.Help.Text)
				}
			}
			if len(log.Runs[0].Results) != len(rep.Findings) {
				t.Errorf("%d results, want %d", len(log.Runs[0].Results), len(rep.Findings))
			}
			for _, res := range log.Runs[0].Results {
				if len(res.Locations) == 0 {
					t.Errorf("result %s has no location", res.RuleID)
				}
				if res.PartialFingerprints[findings.FingerprintKey] == "" {
					t.Errorf("result %s has no partial fingerprint", res.RuleID)
				}
			}
		})
	}
}

// TestWriteJUnit_Parses checks the JUnit XML is well formed with one case
// per rule and one failure per rule that found something.
func TestWriteJUnit_Parses(t *testing.T) {
	rep := recordFixture(t, "audit-fork-uneven").audit(t)
	var b bytes.Buffer
	if err := report.WriteJUnit(&b, rep); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("JUnit is not XML: %v", err)
	}
	if doc.Tests != len(rules.All) || doc.Failures != 1 {
		t.Errorf("tests=%d failures=%d, want %d and 1", doc.Tests, doc.Failures, len(rules.All))
	}
}

// TestWriteJUnit_Untrusted checks text XML cannot carry (control
// characters from an agent's output, a CDATA end) in a failure or a
// system-out leaves the JUnit well formed.
func TestWriteJUnit_Untrusted(t *testing.T) {
	rep := recordFixture(t, "audit-fork-uneven").audit(t)
	rep.Findings[0].Message = "bad \x00\x1b[31m]]> text"
	for i := range rep.Checks {
		rep.Checks[i].Detail = "detail \x07]]>"
	}
	var b bytes.Buffer
	if err := report.WriteJUnit(&b, rep); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []struct {
			Failure   string `xml:"failure"`
			SystemOut string `xml:"system-out"`
		} `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("JUnit is not XML: %v\n%s", err, b.String())
	}
	var failure string
	for _, c := range doc.Cases {
		failure += c.Failure
		if !strings.Contains(c.SystemOut, "detail \uFFFD]]>") {
			t.Errorf("system-out = %q", c.SystemOut)
		}
	}
	if !strings.Contains(failure, "bad \uFFFD\uFFFD[31m]]> text") {
		t.Errorf("failure = %q", failure)
	}
}

// TestWriteSARIFWith_BaselineStates checks the options inspect diff uses:
// one baselineState per finding in order, the automation id and the extra
// run property, and a count that does not match the findings is an error.
func TestWriteSARIFWith_BaselineStates(t *testing.T) {
	rep := recordFixture(t, "audit-fanout-missed").audit(t)
	if len(rep.Findings) == 0 {
		t.Fatal("no findings")
	}
	states := make([]string, len(rep.Findings))
	for i := range states {
		states[i] = []string{"new", "unchanged", "absent"}[i%3]
	}
	var b bytes.Buffer
	err := report.WriteSARIFWith(&b, rep, report.SARIFOptions{AutomationID: "inspect-diff/x", Properties: map[string]any{"baseRun": "y"}, BaselineStates: states})
	if err != nil {
		t.Fatal(err)
	}
	var log struct {
		Runs []struct {
			AutomationDetails struct {
				ID string `json:"id"`
			} `json:"automationDetails"`
			Properties map[string]any `json:"properties"`
			Results    []struct {
				BaselineState string `json:"baselineState"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	run := log.Runs[0]
	if run.AutomationDetails.ID != "inspect-diff/x" || run.Properties["baseRun"] != "y" || run.Properties["run"] != rep.Run {
		t.Errorf("automation id %q, properties %v", run.AutomationDetails.ID, run.Properties)
	}
	for i, res := range run.Results {
		if res.BaselineState != states[i] {
			t.Errorf("result %d baselineState %q, want %q", i, res.BaselineState, states[i])
		}
	}
	if err := report.WriteSARIFWith(&b, rep, report.SARIFOptions{BaselineStates: append(states, "new")}); err == nil {
		t.Error("one baseline state too many is not an error")
	}
	b.Reset()
	if err := report.WriteSARIF(&b, rep, nil); err != nil || strings.Contains(b.String(), "baselineState") {
		t.Errorf("audit SARIF has a baselineState (%v)", err)
	}
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, name, got, *update)
}

// TestFix_SaidNamesTheLocationOnce: a fix whose text opens by naming its
// location again ("In CLAUDE.md, tell …") is printed after the location
// without it ("CLAUDE.md: Tell …"); a text that names another place, or
// none, is left whole.
func TestFix_SaidNamesTheLocationOnce(t *testing.T) {
	tests := []struct {
		fix  findings.Fix
		line string
	}{
		{findings.Fix{Location: findings.Location{Path: "CLAUDE.md"}, Text: "In CLAUDE.md, tell the main agent to ask for \"x\""},
			`CLAUDE.md: Tell the main agent to ask for "x"`},
		{findings.Fix{Location: findings.Location{Label: "agent analyst's instructions (in code)"}, Text: "In agent analyst's instructions (in code), tell it to make several calls"},
			"agent analyst's instructions (in code): Tell it to make several calls"},
		{findings.Fix{Location: findings.Location{Path: "agents/analyst.md", Line: 3}, Text: "In agents/analyst.md, tell analyst to stop"},
			"agents/analyst.md:3: Tell analyst to stop"},
		// another file named first: the text stays whole
		{findings.Fix{Location: findings.Location{Path: "CLAUDE.md"}, Text: "In .claude/agents/reviewer.md, tell the reviewer"},
			"CLAUDE.md: In .claude/agents/reviewer.md, tell the reviewer"},
		{findings.Fix{Location: findings.Location{Path: "CLAUDE.md"}, Text: "general-purpose is a built-in agent type of Claude Code"},
			"CLAUDE.md: general-purpose is a built-in agent type of Claude Code"},
		// the location and nothing after it: whole
		{findings.Fix{Location: findings.Location{Path: "CLAUDE.md"}, Text: "In CLAUDE.md, "}, "CLAUDE.md: In CLAUDE.md, "},
	}
	for _, tt := range tests {
		if got := tt.fix.Line(); got != tt.line {
			t.Errorf("Line() = %q, want %q", got, tt.line)
		}
	}
	// JSON keeps the text whole, with the location beside it
	b, err := json.Marshal(tests[0].fix)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"text":"In CLAUDE.md, tell the main agent`) {
		t.Errorf("JSON fix text changed: %s", b)
	}
}
