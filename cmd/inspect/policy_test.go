package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/report"
	"github.com/inspect-dev/inspect/record"
)

// writePolicy writes .inspect.yaml into the factory's working folder.
func writePolicy(t *testing.T, f *Factory, text string) string {
	t.Helper()
	wd, _ := f.Getwd()
	p := filepath.Join(wd, ".inspect.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// inspectRun runs argv as a new process would, on f's database, working
// folder and environment, and returns stdout, stderr and the exit code.
func inspectRun(t *testing.T, f *Factory, args ...string) (string, string, int) {
	t.Helper()
	out, errOut := new(bytes.Buffer), new(bytes.Buffer)
	g := NewFactory(&IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut, NoColor: true, Width: 80}, f.Getenv)
	g.DBPath, g.Getwd = f.DBPath, f.Getwd
	code := run(context.Background(), g, args)
	return out.String(), errOut.String(), code
}

// TestConfig_Precedence: the nearest .inspect.yaml sets thresholds and
// turns rules off, --set wins over it, --config names another file, and
// --explain and --rules say where each value came from.
// TestAudit_NamesPolicy: an audit says which policy file it applied, in
// text, markdown and JSON — the one found from a subfolder of the
// repository and the one --config names — and says nothing of a policy
// when no file applies (the goldens of such audits are unchanged).
func TestAudit_NamesPolicy(t *testing.T) {
	f, _, _ := auditTestFactory(t, "audit-fork-uneven")
	out, _, _ := inspectRun(t, f, "audit")
	js, _, _ := inspectRun(t, f, "audit", "--format", "json")
	if strings.Contains(out, "policy:") || strings.Contains(js, `"policy"`) {
		t.Errorf("no policy file, yet the audit names one:\n%s\n%s", out, js)
	}
	wd, _ := f.Getwd()
	writePolicy(t, f, "thresholds:\n  uneven-ratio: 7\n")
	sub := filepath.Join(wd, "a")
	for _, d := range []string{sub, filepath.Join(wd, ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	g, _, _ := testFactory(t)
	g.DBPath, g.Getwd = f.DBPath, func() (string, error) { return sub, nil }
	want := filepath.Join("..", ".inspect.yaml")
	out, _, _ = inspectRun(t, g, "audit")
	if !strings.Contains(out, "\npolicy: "+want+"\n") {
		t.Errorf("text audit does not name %s:\n%s", want, out)
	}
	md, _, _ := inspectRun(t, g, "audit", "--format", "markdown")
	if !strings.Contains(md, "Policy: `"+want+"`") {
		t.Errorf("markdown audit does not name %s:\n%s", want, md)
	}
	js, _, _ = inspectRun(t, g, "audit", "--format", "json")
	var doc struct {
		Policy string `json:"policy"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil || doc.Policy != want {
		t.Errorf("json policy = %q, %v; want %q", doc.Policy, err, want)
	}
	other := filepath.Join(t.TempDir(), "ci.yaml")
	if err := os.WriteFile(other, []byte("thresholds:\n  uneven-ratio: 2.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	js, _, _ = inspectRun(t, g, "audit", "--format", "json", "--config", other)
	rel, _ := filepath.Rel(sub, other) // named as every message names the file
	if err := json.Unmarshal([]byte(js), &doc); err != nil || doc.Policy != rel {
		t.Errorf("json policy under --config = %q, %v; want %q", doc.Policy, err, rel)
	}
}

func TestConfig_Precedence(t *testing.T) {
	f, _, _ := auditTestFactory(t, "audit-fork-uneven")
	writePolicy(t, f, "thresholds:\n  uneven-ratio: 7\nrules:\n  handoff.loop: off\n")

	// the file raises the bar: apac's 13s against a 2.25s median is under 7×
	out, errOut, code := inspectRun(t, f, "audit", "--fail-on", "warning")
	if code != ExitOK || !strings.Contains(out, "fork.uneven: clear") || !strings.Contains(out, "handoff.loop: off (turned off in .inspect.yaml:4)") {
		t.Errorf("audit under the file: exit %d\n%s%s", code, out, errOut)
	}
	// the flag wins
	out, _, code = inspectRun(t, f, "audit", "--set", "uneven-ratio=2", "--fail-on", "warning")
	if code != ExitFindings || !strings.Contains(out, "fork.uneven: found") {
		t.Errorf("--set over the file: exit %d, want 1\n%s", code, out)
	}
	// --explain and --rules name each value's source
	out, _, _ = inspectRun(t, f, "audit", "--explain", "fork.uneven", "--set", "uneven-min-gap=1s")
	for _, want := range []string{"uneven-ratio = 7 (.inspect.yaml:2; default 2)", "uneven-min-gap = 1s (--set; default 5s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("--explain lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = inspectRun(t, f, "audit", "--explain", "handoff.loop")
	if !strings.Contains(out, "This rule is off (.inspect.yaml:4)") {
		t.Errorf("--explain of a rule turned off:\n%s", out)
	}
	out, _, _ = inspectRun(t, f, "audit", "--rules", "--format", "json")
	var rules []report.RuleJSON
	if err := json.Unmarshal([]byte(out), &rules); err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		switch r.ID {
		case "fork.uneven":
			if r.Thresholds[0].Source != ".inspect.yaml:2" || r.Thresholds[0].Value != "7" || r.Thresholds[1].Source != "default" {
				t.Errorf("--rules json fork.uneven thresholds = %+v", r.Thresholds)
			}
		case "handoff.loop":
			if r.Off != ".inspect.yaml:4" {
				t.Errorf("--rules json handoff.loop off = %q", r.Off)
			}
		default:
			if r.Off != "" {
				t.Errorf("%s reads off (%s)", r.ID, r.Off)
			}
		}
	}
	out, _, _ = inspectRun(t, f, "audit", "--rules")
	if !strings.Contains(out, "uneven-ratio = 7 (.inspect.yaml:2; default 2)") || !strings.Contains(out, "off (.inspect.yaml:4)") {
		t.Errorf("--rules text lacks the sources:\n%s", out)
	}

	out, _, _ = inspectRun(t, f, "audit", "--format", "sarif")
	validSARIF(t, out)
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Rules []struct {
						ID                   string `json:"id"`
						DefaultConfiguration struct {
							Enabled bool `json:"enabled"`
						} `json:"defaultConfiguration"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatal(err)
	}
	for _, r := range log.Runs[0].Tool.Driver.Rules {
		if r.DefaultConfiguration.Enabled == (r.ID == "handoff.loop") {
			t.Errorf("SARIF rule %s enabled = %v", r.ID, r.DefaultConfiguration.Enabled)
		}
	}

	// found from a subfolder of the repository, named relative to it
	wd, _ := f.Getwd()
	sub := filepath.Join(wd, "a", "b")
	for _, d := range []string{sub, filepath.Join(wd, ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f2, _, _ := testFactory(t)
	f2.DBPath, f2.Getwd = f.DBPath, func() (string, error) { return sub, nil }
	out, _, _ = inspectRun(t, f2, "audit", "--explain", "fork.uneven")
	if !strings.Contains(out, "uneven-ratio = 7 ("+filepath.Join("..", "..", ".inspect.yaml")+":2; default 2)") {
		t.Errorf("from a subfolder:\n%s", out)
	}

	// --config names another file, and the nearest one is not read
	other := filepath.Join(t.TempDir(), "ci.yaml")
	if err := os.WriteFile(other, []byte("thresholds:\n  uneven-ratio: 2.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f3, _, _ := testFactory(t)
	f3.DBPath, f3.Getwd = f.DBPath, f.Getwd
	out, _, _ = inspectRun(t, f3, "--config", other, "audit", "--explain", "fork.uneven", "--format", "json")
	var one report.RuleJSON
	if err := json.Unmarshal([]byte(out), &one); err != nil || one.Thresholds[0].Value != "2.5" || !strings.HasSuffix(one.Thresholds[0].Source, "ci.yaml:2") || one.Off != "" {
		t.Errorf("--config: %+v (%v)", one, err)
	}
}

// TestConfig_Errors: a file with problems stops every command that reads
// it with exit 2 and FILE:LINE: KEY for each problem; a missing --config
// file says so.
func TestConfig_Errors(t *testing.T) {
	f, _, _ := auditTestFactory(t, "audit-fork-uneven")
	writePolicy(t, f, "thresholds:\n  uneven-ratio: high\nignore:\n  - rule: fork.uneven\n")
	for _, args := range [][]string{{"audit"}, {"audit", "--rules"}, {"diff", "latest", "latest", "--format", "json"}} {
		_, errOut, code := inspectRun(t, f, args...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
		for _, want := range []string{".inspect.yaml has 2 problems", `.inspect.yaml:2: thresholds.uneven-ratio: uneven-ratio wants a number, got "high"`,
			".inspect.yaml:4: ignore[0].reason: missing reason"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%v: stderr lacks %q:\n%s", args, want, errOut)
			}
		}
	}
	_, errOut, code := inspectRun(t, f, "--config", filepath.Join(t.TempDir(), "none.yaml"), "audit")
	if code != ExitUsage || !strings.Contains(errOut, "none.yaml: no such file") {
		t.Errorf("missing --config: exit %d: %s", code, errOut)
	}
}

// TestInit_Config: inspect init without DIR writes a commented policy
// file that the next command reads as every default, and never overwrites.
func TestInit_Config(t *testing.T) {
	f, _, _ := auditTestFactory(t, "audit-fork-uneven")
	out, errOut, code := inspectRun(t, f, "init")
	if code != ExitOK || !strings.Contains(out, ".inspect.yaml: every setting is commented out") {
		t.Fatalf("init: exit %d: %s%s", code, out, errOut)
	}
	wd, _ := f.Getwd()
	b, err := os.ReadFile(filepath.Join(wd, ".inspect.yaml"))
	if err != nil || !strings.Contains(string(b), "#   uneven-ratio: 2") || !strings.Contains(string(b), "# ignore:") {
		t.Fatalf("the file init wrote: %v\n%s", err, b)
	}
	out, errOut, code = inspectRun(t, f, "audit", "--explain", "fork.uneven")
	if code != ExitOK || !strings.Contains(out, "uneven-ratio = 2 (default)") {
		t.Errorf("audit with the fresh file: exit %d: %s%s", code, out, errOut)
	}
	_, errOut, code = inspectRun(t, f, "init")
	if code != ExitUsage || !strings.Contains(errOut, "already exists; inspect init never overwrites it") {
		t.Errorf("second init: exit %d: %s", code, errOut)
	}
	other := filepath.Join(t.TempDir(), "policy.yaml")
	if _, errOut, code = inspectRun(t, f, "--config", other, "init"); code != ExitOK {
		t.Errorf("init --config FILE: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("init --config FILE wrote nothing there: %v", err)
	}
}

const ignorePolicy = `ignore:
  - rule: fork.uneven
    agent: analyst
    reason: apac answers slowly at its source
    expires: 2999-12-31
  - rule: handoff.loop
    reason: an old decision
    expires: 2020-01-31
`

// TestAudit_Suppressed_EveryFormat: a finding an ignore entry accepts is
// listed as such, with its reason, in text, markdown, JSON, SARIF (a
// suppression with its justification; schema-valid) and JUnit (not a
// failure), and --fail-on does not count it; an expired entry is
// reported in each.
func TestAudit_Suppressed_EveryFormat(t *testing.T) {
	f, _, _ := auditTestFactory(t, "audit-fork-uneven")
	writePolicy(t, f, ignorePolicy)
	expired := "ignore entry .inspect.yaml:6 (handoff.loop) expired after 2020-01-31"

	out, errOut, code := inspectRun(t, f, "audit", "--fail-on", "warning")
	if code != ExitOK {
		t.Errorf("--fail-on counted an accepted finding: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"warning: " + expired, "No topology mistakes that count. Not counted for --fail-on: 1 accepted by an ignore entry.",
		"not counted (accepted or in the baseline):", "1. IGNORED warning fork.uneven", "why:   accepted: apac answers slowly at its source (.inspect.yaml:2, until 2999-12-31)"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = inspectRun(t, f, "audit", "--format", "markdown")
	for _, want := range []string{"> **Warning:** " + strings.ReplaceAll(expired, ".", "."), "## Not counted (accepted or in the baseline)", "IGNORED warning `fork.uneven`",
		"**Not counted:** accepted: apac answers slowly at its source (.inspect.yaml:2, until 2999-12-31)"} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = inspectRun(t, f, "audit", "--format", "json")
	var rep findings.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Suppressed == nil ||
		*rep.Findings[0].Suppressed != (findings.Suppression{Kind: "ignored", Reason: "apac answers slowly at its source", Source: ".inspect.yaml:2", Expires: "2999-12-31"}) ||
		len(rep.Warnings) != 1 || !strings.HasPrefix(rep.Warnings[0], expired) {
		t.Errorf("json findings %+v warnings %q", rep.Findings, rep.Warnings)
	}

	out, _, _ = inspectRun(t, f, "audit", "--format", "sarif")
	validSARIF(t, out)
	var log sarifLog
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatal(err)
	}
	res := log.Runs[0].Results
	if len(res) != 1 || len(res[0].Suppressions) != 1 || res[0].Suppressions[0].Kind != "external" || res[0].Suppressions[0].Status != "accepted" ||
		res[0].Suppressions[0].Justification != "apac answers slowly at its source" || res[0].BaselineState != "" {
		t.Errorf("sarif results = %+v", res)
	}
	if w := log.Runs[0].Properties.Warnings; len(w) != 1 || !strings.HasPrefix(w[0], expired) {
		t.Errorf("sarif warnings = %q", w)
	}

	out, _, _ = inspectRun(t, f, "audit", "--format", "junit")
	var suites junitDoc
	if err := xml.Unmarshal([]byte(out), &suites); err != nil {
		t.Fatal(err)
	}
	tc := suites.testcase("fork.uneven")
	if tc == nil || tc.Failure != nil || !strings.Contains(tc.SystemOut, "not counted, accepted: apac answers slowly") {
		t.Errorf("junit fork.uneven = %+v", tc)
	}
	if !suites.hasProperty("warning", expired) {
		t.Errorf("junit lacks the expired entry:\n%s", out)
	}
}

// TestAudit_Baseline: an earlier audit's JSON or SARIF marks the findings
// it had as baseline in every format, and --fail-on counts only new ones.
func TestAudit_Baseline(t *testing.T) {
	f, _, _ := auditTestFactory(t, "audit-fork-uneven")
	dir := t.TempDir()
	for _, format := range []string{"json", "sarif"} {
		base := filepath.Join(dir, "base."+format)
		out, _, _ := inspectRun(t, f, "audit", "--format", format)
		if err := os.WriteFile(base, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Run(format, func(t *testing.T) {
			out, errOut, code := inspectRun(t, f, "audit", "--baseline", base, "--fail-on", "warning")
			if code != ExitOK || !strings.Contains(out, "baseline: "+base) || !strings.Contains(out, "1. BASELINE warning fork.uneven") ||
				!strings.Contains(out, "in the baseline: the finding was already there in "+base+" (run run-audit-fork-uneven)") {
				t.Errorf("text: exit %d\n%s%s", code, out, errOut)
			}
			out, _, _ = inspectRun(t, f, "audit", "--baseline", base, "--format", "markdown")
			if !strings.Contains(out, "BASELINE warning `fork.uneven`") || !strings.Contains(out, "Not counted for --fail-on: 1 in the baseline.") {
				t.Errorf("markdown:\n%s", out)
			}
			out, _, _ = inspectRun(t, f, "audit", "--baseline", base, "--format", "json")
			var rep findings.Report
			if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Baseline != base || len(rep.Findings) != 1 ||
				rep.Findings[0].Suppressed == nil || rep.Findings[0].Suppressed.Kind != "baseline" {
				t.Errorf("json: %+v (%v)", rep.Findings, err)
			}
			out, _, _ = inspectRun(t, f, "audit", "--baseline", base, "--format", "sarif")
			validSARIF(t, out)
			var log sarifLog
			if err := json.Unmarshal([]byte(out), &log); err != nil {
				t.Fatal(err)
			}
			if res := log.Runs[0].Results; len(res) != 1 || res[0].BaselineState != "unchanged" || len(res[0].Suppressions) != 0 {
				t.Errorf("sarif results = %+v", res)
			}
			out, _, _ = inspectRun(t, f, "audit", "--baseline", base, "--format", "junit")
			var suites junitDoc
			if err := xml.Unmarshal([]byte(out), &suites); err != nil {
				t.Fatal(err)
			}
			if tc := suites.testcase("fork.uneven"); tc == nil || tc.Failure != nil || !strings.Contains(tc.SystemOut, "not counted, in the baseline") {
				t.Errorf("junit fork.uneven = %+v", tc)
			}
		})
	}
	// a finding the baseline lacks is new, in SARIF too, and counts
	other, _, _ := auditTestFactory(t, "audit-fanout-missed")
	out, _, _ := inspectRun(t, other, "audit", "--format", "json")
	foreign := filepath.Join(dir, "other.json")
	if err := os.WriteFile(foreign, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, code := inspectRun(t, f, "audit", "--baseline", foreign, "--fail-on", "warning"); code != ExitFindings {
		t.Errorf("a new finding under a baseline: exit %d, want 1", code)
	}
	out, _, _ = inspectRun(t, f, "audit", "--baseline", foreign, "--format", "sarif")
	var log sarifLog
	if err := json.Unmarshal([]byte(out), &log); err != nil || len(log.Runs[0].Results) != 1 || log.Runs[0].Results[0].BaselineState != "new" {
		t.Errorf("sarif of a new finding = %+v (%v)", log.Runs, err)
	}
	// not a baseline
	junk := filepath.Join(dir, "junk.json")
	os.WriteFile(junk, []byte(`{"hello": 1}`), 0o644)
	if _, errOut, code := inspectRun(t, f, "audit", "--baseline", junk); code != ExitUsage || !strings.Contains(errOut, "is neither `inspect audit --format json` nor `--format sarif` output") {
		t.Errorf("junk baseline: exit %d: %s", code, errOut)
	}
	if _, errOut, code := inspectRun(t, f, "audit", "--baseline", filepath.Join(dir, "none.json")); code != ExitUsage || !strings.Contains(errOut, "--baseline") {
		t.Errorf("missing baseline: exit %d: %s", code, errOut)
	}
}

const prices = `prices:
  gpt-4.1-mini: {input: 0.40, cached_input: 0.10, output: 1.60}
  gpt-4.1: {input: 2.00, cached_input: 0.50, output: 8.00}
`

// recordPriced records a run whose figures the money test works out by
// hand: analyst (gpt-4.1-mini) forks one branch to writer (gpt-4.1), then
// answers. lastOut is the output of analyst's last call.
func recordPriced(t *testing.T, f *Factory, id string, lastOut int64) {
	t.Helper()
	ctx := context.Background()
	db, err := f.Store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	rec, err := db.CreateRun(ctx, &record.Run{ID: id, Started: start, Tasks: []string{"brief"}, Models: []string{"gpt-4.1", "gpt-4.1-mini"}})
	if err != nil {
		t.Fatal(err)
	}
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	llm := func(seq int64, agent, branch string, fork int64, model string, in, cached, out int64, calls ...string) *record.Node {
		depth := 0
		if branch != "" {
			depth = 1
		}
		return &record.Node{Seq: seq, Kind: record.KindLLM, Agent: agent, Branch: branch, ForkSeq: fork, Depth: depth, Started: at(int(seq)), Ended: at(int(seq) + 1),
			LLM: &record.LLM{Model: model, Calls: calls, Usage: record.Usage{In: in, Out: out, Cached: cached, CachedReported: true}}}
	}
	nodes := []*record.Node{
		{Seq: 1, Kind: record.KindUser, Agent: "analyst", Text: "brief", Started: at(0), Ended: at(0)},
		llm(2, "analyst", "", 0, "gpt-4.1-mini", 1000, 0, 50, "fork"),
		{Seq: 3, Kind: record.KindFork, Agent: "analyst", Started: at(3), Ended: at(9), Fork: &record.Fork{Context: "none",
			Branches: []record.ForkBranch{{Name: "summary", Agent: "writer", Instructions: "Summarise the reports."}}}},
		llm(4, "writer", "summary", 3, "gpt-4.1", 2000, 1400, 110),
		{Seq: 5, Kind: record.KindFinal, Agent: "writer", Branch: "summary", ForkSeq: 3, Depth: 1, Text: "done", Started: at(6), Ended: at(6)},
		{Seq: 6, Kind: record.KindJoin, Agent: "analyst", Started: at(9), Ended: at(9), Join: &record.Join{ForkSeq: 3,
			Branches: []record.JoinBranch{{Name: "summary", Agent: "writer", Status: record.StatusOK, Duration: 3 * time.Second, Answer: "done"}}}},
		llm(7, "analyst", "", 0, "gpt-4.1-mini", 3000, 2000, lastOut),
		{Seq: 8, Kind: record.KindFinal, Agent: "analyst", Text: "the brief", Started: at(11), Ended: at(11)},
	}
	for _, n := range nodes {
		if err := rec.AddNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Finish(ctx, record.StatusOK, "", at(12)); err != nil {
		t.Fatal(err)
	}
}

// TestAudit_Money checks the money figures against arithmetic done by
// hand, per million tokens:
//
//	n2 analyst gpt-4.1-mini: 1000×0.40 + 50×1.60                      =  480
//	n4 writer  gpt-4.1:      (2000−1400)×2.00 + 1400×0.50 + 110×8.00  = 2780
//	n7 analyst gpt-4.1-mini: (3000−2000)×0.40 + 2000×0.10 + 200×1.60  =  920
//	run 4180 ($0.00418) · analyst 1400 ($0.0014) · writer 2780 ($0.00278)
//	fork.one-branch, priced at the branch's first request (n4's 2000 in,
//	1400 of them cached): 600×2.00 + 1400×0.50 = 1900 ($0.0019)
//
// and that without a price table no money appears anywhere.
func TestAudit_Money(t *testing.T) {
	f, _, _ := testFactory(t)
	recordPriced(t, f, "priced000001", 200)

	out, errOut, code := inspectRun(t, f, "audit", "--format", "json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, `"money"`) || strings.Contains(out, "$") {
		t.Errorf("money without a price table:\n%s", out)
	}
	out, _, _ = inspectRun(t, f, "audit")
	if strings.Contains(out, "cost: $") || strings.Contains(out, "rates") {
		t.Errorf("text shows money without a price table:\n%s", out)
	}

	writePolicy(t, f, prices)
	out, _, _ = inspectRun(t, f, "audit", "--format", "json")
	var rep findings.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	m := rep.Money
	if m == nil || m.Currency != "USD" || m.Total.Amount != 0.00418 || m.Partial || m.Total.Calls != 3 {
		t.Fatalf("money = %+v", m)
	}
	if a := m.Agent("analyst"); a == nil || a.Amount.Amount != 0.0014 || a.Calls != 2 {
		t.Errorf("analyst = %+v", a)
	}
	if a := m.Agent("writer"); a == nil || a.Amount.Amount != 0.00278 || a.Calls != 1 {
		t.Errorf("writer = %+v", a)
	}
	var one *findings.Finding
	for i := range rep.Findings {
		if rep.Findings[i].Rule == "fork.one-branch" {
			one = &rep.Findings[i]
		}
	}
	if one == nil || one.Money == nil || one.Money.Amount != 0.0019 || one.Money.Model != "gpt-4.1" {
		t.Fatalf("fork.one-branch money = %+v in %+v", one, rep.Findings)
	}

	out, _, _ = inspectRun(t, f, "audit")
	for _, want := range []string{"cost: $0.0042 · analyst $0.0014 · writer $0.0028", "2000 tokens in · 1 conversation start · 1400 cached (reported) · $0.0019 at gpt-4.1's rates"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = inspectRun(t, f, "audit", "--format", "markdown")
	for _, want := range []string{"**Cost:** $0.0042", "| analyst | 2 | 4000 | 2000 | 0 | 250 | $0.0014 |", "| writer | 1 | 2000 | 1400 | 0 | 110 | $0.0028 |", "$0.0019 at gpt-4.1's rates"} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}

	// a model the table lacks is unpriced, never guessed
	writePolicy(t, f, "prices:\n  gpt-4.1-mini: {input: 0.40, cached_input: 0.10, output: 1.60}\n")
	out, _, _ = inspectRun(t, f, "audit")
	if !strings.Contains(out, "cost: $0.0014 for 2 of 3 model calls; no price for gpt-4.1 (1 call)") || strings.Contains(out, "gpt-4.1's rates") {
		t.Errorf("partial table:\n%s", out)
	}

	// diff: the new run's last call answers in 100 tokens, 160 instead of 320:
	// 4180 − 160 = 4020 ($0.00402), change −160 ($−0.00016, −3.8%)
	writePolicy(t, f, prices)
	recordPriced(t, f, "priced000002", 100)
	out, errOut, code = inspectRun(t, f, "diff", "priced000001", "priced000002", "--format", "json")
	if code != ExitOK {
		t.Fatalf("diff: exit %d: %s", code, errOut)
	}
	var d struct {
		Money *struct {
			Currency          string
			Base, New, Change float64
			Percent           *float64
		}
		Agents []struct {
			Agent string
			Money *struct{ Base, New, Change float64 }
		}
		Findings struct {
			Unchanged []findings.Finding
		}
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d.Money == nil || d.Money.Base != 0.00418 || d.Money.New != 0.00402 || d.Money.Change != -0.00016 || d.Money.Percent == nil || *d.Money.Percent > -3.82 || *d.Money.Percent < -3.83 {
		t.Errorf("diff money = %+v", d.Money)
	}
	if len(d.Agents) != 2 || d.Agents[0].Agent != "analyst" || d.Agents[0].Money == nil || d.Agents[0].Money.New != 0.00124 || d.Agents[1].Money.Change != 0 {
		t.Errorf("diff agents = %+v", d.Agents)
	}
	if len(d.Findings.Unchanged) != 1 || d.Findings.Unchanged[0].Money == nil || d.Findings.Unchanged[0].Money.Amount != 0.0019 {
		t.Errorf("diff findings = %+v", d.Findings.Unchanged)
	}
	out, _, _ = inspectRun(t, f, "diff", "priced000001", "priced000002")
	for _, want := range []string{"| cost | $0.0042 | $0.0040 | -$0.0002 (-3.8%) |", "$0.0019 at gpt-4.1's rates", "$0.0012 (-$0.0002) |"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff markdown lacks %q:\n%s", want, out)
		}
	}
}

// validSARIF checks doc against the official SARIF 2.1.0 schema.
func validSARIF(t *testing.T, doc string) {
	t.Helper()
	sch, err := jsonschema.NewCompiler().Compile(filepath.Join("..", "..", "findings", "testdata", "sarif-2.1.0.json"))
	if err != nil {
		t.Fatalf("compile schema: %v", err)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(v); err != nil {
		t.Fatalf("SARIF does not validate: %v", err)
	}
}

type sarifLog struct {
	Runs []struct {
		Properties struct {
			Warnings []string `json:"warnings"`
		} `json:"properties"`
		Results []struct {
			RuleID        string `json:"ruleId"`
			BaselineState string `json:"baselineState"`
			Suppressions  []struct {
				Kind, Status, Justification string
			} `json:"suppressions"`
		} `json:"results"`
	} `json:"runs"`
}

type junitDoc struct {
	Suites []struct {
		Properties []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []junitCase `xml:"testcase"`
	} `xml:"testsuite"`
}

type junitCase struct {
	Name      string    `xml:"name,attr"`
	Failure   *struct{} `xml:"failure"`
	Skipped   *struct{} `xml:"skipped"`
	SystemOut string    `xml:"system-out"`
}

func (d *junitDoc) testcase(name string) *junitCase {
	for _, s := range d.Suites {
		for i := range s.Cases {
			if s.Cases[i].Name == name {
				return &s.Cases[i]
			}
		}
	}
	return nil
}

func (d *junitDoc) hasProperty(name, prefix string) bool {
	for _, s := range d.Suites {
		for _, p := range s.Properties {
			if p.Name == name && strings.HasPrefix(p.Value, prefix) {
				return true
			}
		}
	}
	return false
}

// TestImport_ResearchPatterns: the research: patterns of .inspect.yaml
// decide which of an imported run's tools count as research (the LangGraph
// supervisor's web_search matches none of the defaults).
func TestImport_ResearchPatterns(t *testing.T) {
	trace := filepath.Join("..", "..", "importers", "otlp", "testdata", "langgraph-supervisor.otlp.jsonl")
	research := func(f *Factory) int {
		t.Helper()
		out, errOut, code := inspectRun(t, f, "graph", "--format", "json")
		if code != ExitOK {
			t.Fatalf("graph: exit %d: %s", code, errOut)
		}
		var g struct {
			Tools struct {
				Research int `json:"research"`
			} `json:"tools"`
		}
		if err := json.Unmarshal([]byte(out), &g); err != nil {
			t.Fatal(err)
		}
		return g.Tools.Research
	}
	f, _, _ := testFactory(t)
	if _, errOut, code := inspectRun(t, f, "import", trace); code != ExitOK {
		t.Fatalf("import: exit %d: %s", code, errOut)
	}
	if n := research(f); n != 0 {
		t.Errorf("default patterns: %d research calls, want 0", n)
	}
	writePolicy(t, f, "research: [\"web_*\"]\n")
	if _, errOut, code := inspectRun(t, f, "import", trace); code != ExitOK {
		t.Fatalf("import again: exit %d: %s", code, errOut)
	}
	if n := research(f); n != 1 {
		t.Errorf("research: [web_*]: %d research calls, want 1 (web_search)", n)
	}
}

// TestCache_LifetimeFromConfig: cache-lifetime in .inspect.yaml is inspect
// cache's lifetime unless --cache-lifetime says otherwise.
func TestCache_LifetimeFromConfig(t *testing.T) {
	f, _, _ := auditTestFactory(t, "audit-fork-uneven")
	lifetime := func(args ...string) int64 {
		t.Helper()
		out, errOut, code := inspectRun(t, f, append([]string{"cache", "--format", "json"}, args...)...)
		if code != ExitOK {
			t.Fatalf("cache: exit %d: %s", code, errOut)
		}
		var rep struct {
			LifetimeMS int64 `json:"lifetime_ms"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		return rep.LifetimeMS
	}
	if ms := lifetime(); ms != 300000 {
		t.Errorf("no config: lifetime %dms, want the 5m default", ms)
	}
	writePolicy(t, f, "cache-lifetime: 1h\n")
	if ms := lifetime(); ms != 3600000 {
		t.Errorf("cache-lifetime: 1h: lifetime %dms", ms)
	}
	if ms := lifetime("--cache-lifetime", "10m"); ms != 600000 {
		t.Errorf("--cache-lifetime 10m over the file: lifetime %dms", ms)
	}
}
