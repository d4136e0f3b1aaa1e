package findings_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

func TestValidate_All(t *testing.T) {
	if err := findings.Validate(rules.All); err != nil {
		t.Fatal(err)
	}
	// The rules of DESIGN §8's table, in its order; All may hold more.
	want := []string{"fanout.missed", "fanout.missed.nofork", "fork.sequence", "fork.one-branch", "join.repeat", "branch.failed",
		"fork.uneven", "fork.overlap", "fork.inherit-uncached", "handoff.early", "handoff.loop", "handoff.for-answer", "delegation.missed-specialist"}
	i := 0
	for _, r := range rules.All {
		if i < len(want) && r.ID == want[i] {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("All lacks %s, or lists DESIGN §8's rules out of order", want[i])
	}
}

func TestValidate_Errors(t *testing.T) {
	ok := *rules.FanoutMissed
	tests := []struct {
		name  string
		rules []*findings.Rule
		want  string
	}{
		{"duplicate", []*findings.Rule{&ok, &ok}, "listed twice"},
		{"no run", []*findings.Rule{{ID: "x", Area: findings.Forking, Severity: findings.Warning, Doc: ok.Doc}}, "no Run"},
		{"no title", []*findings.Rule{{ID: "x", Area: findings.Forking, Severity: findings.Warning, Run: ok.Run}}, "incomplete Doc"},
		{"bad area", []*findings.Rule{{ID: "x", Area: "Other", Severity: findings.Warning, Doc: ok.Doc, Run: ok.Run}}, "unknown area"},
		{"no expect", []*findings.Rule{{ID: "x", Area: findings.Forking, Severity: findings.Warning, Doc: ok.Doc, Run: ok.Run}}, "has no Expect"},
		{"blank reason", []*findings.Rule{{ID: "x", Area: findings.Forking, Severity: findings.Warning, Doc: ok.Doc, Run: ok.Run, NoExpect: "  "}}, "has no Expect"},
		{"expect and reason", []*findings.Rule{withDetect(ok, ok.Doc.Detect, func(r *findings.Rule) { r.NoExpect = "why" })}, "both an Expect and a NoExpect"},
		{"unknown placeholder", []*findings.Rule{withDetect(ok, ok.Doc.Detect+" {nope}", nil)}, "names {nope}, which is not one of its Options"},
		{"threshold not in any Detect", []*findings.Rule{withDetect(ok, "three calls in a row", nil)}, "fanout-min-calls appears in the Detect text of none"},
		{"threshold declared twice", []*findings.Rule{&ok, withDetect(ok, "{fanout-min-calls} calls", func(r *findings.Rule) {
			r.ID, r.Options = "y", []findings.Option{&findings.Threshold[int]{Key: "fanout-min-calls", Text: "again", Def: 3, Min: 2}}
		})}, "declared twice with different values"},
		{"default out of range", []*findings.Rule{withDetect(ok, "{x-min} calls", func(r *findings.Rule) {
			r.Options = []findings.Option{&findings.Threshold[int]{Key: "x-min", Text: "calls", Def: 1, Min: 2}}
		})}, "x-min must be at least 2, got 1"},
		{"threshold without doc", []*findings.Rule{withDetect(ok, "{x-min} calls", func(r *findings.Rule) {
			r.Options = []findings.Option{&findings.Threshold[time.Duration]{Key: "x-min", Def: time.Second}}
		})}, "has no Doc"},
		{"threshold with a bad name", []*findings.Rule{withDetect(ok, "calls", func(r *findings.Rule) {
			r.Options = []findings.Option{&findings.Threshold[float64]{Key: "X Min", Text: "calls", Def: 1}}
		})}, "bad name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := findings.Validate(tt.rules)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// withDetect copies rule r with another Detect text, then applies edit.
func withDetect(r findings.Rule, detect string, edit func(*findings.Rule)) *findings.Rule {
	r.Doc.Detect = detect
	if edit != nil {
		edit(&r)
	}
	return &r
}

// TestValidate_NoExpectReason checks a rule without an expectation check
// is accepted when it says why, and its findings read as not checked with
// that reason.
func TestValidate_NoExpectReason(t *testing.T) {
	r := *rules.BranchFailed
	r.Expect, r.NoExpect = nil, "a failed branch has no structure to look for"
	if err := findings.Validate([]*findings.Rule{&r}); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	v := findings.Expect([]*findings.Rule{&r}, findings.Finding{Rule: r.ID}, nil)
	if v.Result != findings.NotChecked || v.Detail != r.NoExpect {
		t.Errorf("Expect() = %+v, want not checked with the reason", v)
	}
	if v := findings.Expect(rules.All, findings.Finding{Rule: "gone.rule"}, nil); v.Result != findings.NotChecked || !strings.Contains(v.Detail, "no rule gone.rule") {
		t.Errorf("Expect() of an unknown rule = %+v", v)
	}
	if v := findings.Expect(rules.All, findings.Finding{Rule: "fork.uneven"}, nil); v.Result != findings.NotChecked || !strings.Contains(v.Detail, "read back from a file") {
		t.Errorf("Expect() of a finding without its promise = %+v", v)
	}
}

func TestOptions_Set(t *testing.T) {
	o := findings.NewOptions(rules.All)
	for _, kv := range []string{"fanout-min-calls=4", "uneven-ratio=2.5", "uneven-min-gap=10s", "inherit-min-tokens=8000"} {
		if err := o.Set(kv); err != nil {
			t.Fatalf("Set(%q): %v", kv, err)
		}
	}
	got := map[string]string{}
	for _, s := range findings.OptionSpecs(rules.All) {
		got[s.Name] = s.Get(o)
	}
	want := map[string]string{"fanout-min-calls": "4", "uneven-ratio": "2.5", "uneven-min-gap": "10s",
		"inherit-min-tokens": "8000", "token-min-len": "3", "specialist-min-calls": "2"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, bad := range []string{"nope=1", "fanout-min-calls", "fanout-min-calls=x", "uneven-min-gap=5", "uneven-ratio=x", "inherit-min-tokens=1.5"} {
		if err := o.Set(bad); err == nil {
			t.Errorf("Set(%q) = nil, want an error", bad)
		}
	}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate() = %v for working values", err)
	}
	if err := o.Set("fanout-min-calls=1"); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "fanout-min-calls must be at least 2, got 1") {
		t.Errorf("Validate() = %v, want fanout-min-calls refused", err)
	}
}

// TestRule_DetectThresholds checks a rule's Detect text shows the
// thresholds in force: the defaults of DESIGN §8, and a --set value.
func TestRule_DetectThresholds(t *testing.T) {
	if got := rules.ForkInheritUncached.Detect(nil); !strings.Contains(got, "at least 2 branches") || !strings.Contains(got, "at least 4,000 tokens") {
		t.Errorf("default Detect = %q", got)
	}
	o := findings.NewOptions(rules.All)
	for _, kv := range []string{"uneven-ratio=3", "uneven-min-gap=1m30s", "inherit-min-tokens=12000"} {
		if err := o.Set(kv); err != nil {
			t.Fatal(err)
		}
	}
	if got := rules.ForkUneven.Detect(o); !strings.Contains(got, "at least 3× the median") || !strings.Contains(got, "at least 1m30s longer") {
		t.Errorf("Detect with --set = %q", got)
	}
	if got := rules.ForkInheritUncached.Explain(o); !strings.Contains(got, "at least 12,000 tokens") {
		t.Errorf("Explain with --set = %q", got)
	}
	for _, r := range rules.All {
		if d := r.Detect(o); strings.ContainsAny(d, "{}") {
			t.Errorf("%s: Detect left a placeholder: %q", r.ID, d)
		}
	}
}

// findingOf returns the single finding of rule in rep.
func findingOf(t *testing.T, rep *findings.Report, rule string) findings.Finding {
	t.Helper()
	var out []findings.Finding
	for _, f := range rep.Findings {
		if f.Rule == rule {
			out = append(out, f)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d %s findings, want 1:\n%s", len(out), rule, dump(rep))
	}
	return out[0]
}

// TestPrice_ByHand checks prices against arithmetic done by hand on the
// fixtures' scripts.
func TestPrice_ByHand(t *testing.T) {
	t.Run("fan-out time saved", func(t *testing.T) {
		// audit-fanout-missed-nofork: three reads, each a model step plus a
		// 200ms tool: 1s+0.2s, 1s+0.2s, 3s+0.2s = 1.2s + 1.2s + 3.2s = 5.6s
		// in series; in parallel the longest, 3.2s. Saved: 5.6 − 3.2 = 2.4s.
		// A fan-out buys time, not tokens: no tokens are charged.
		f := findingOf(t, recordFixture(t, "audit-fanout-missed-nofork").audit(t), "fanout.missed.nofork")
		if f.Price.ElapsedMS != 2400 || f.Price.TokensIn != 0 || f.Price.TokensOut != 0 {
			t.Errorf("price = %+v, want 2400ms and no tokens", f.Price)
		}
		if f.Fix.Location != (findings.Location{Path: "agents.yaml", Line: 4}) {
			t.Errorf("fix at %s, want agents.yaml:4 (the analyst's entry)", f.Fix.Location)
		}
	})
	t.Run("overlap duplicated tokens", func(t *testing.T) {
		// audit-fork-overlap: both branches read regions/index.md first.
		// The copy is us's (declared second): its model step took 1.2s with
		// usage in 520, out 25, and its tool 100ms. Price: 1 call, 1.3s,
		// 520 tokens in, 25 out.
		f := findingOf(t, recordFixture(t, "audit-fork-overlap").audit(t), "fork.overlap")
		if f.Price.Calls != 1 || f.Price.ElapsedMS != 1300 || f.Price.TokensIn != 520 || f.Price.TokensOut != 25 {
			t.Errorf("price = %+v, want 1 call, 1300ms, 520 in, 25 out", f.Price)
		}
	})
	t.Run("one conversation start", func(t *testing.T) {
		// audit-fork-one-branch: the lone branch's first request has
		// usage in 350. Price: one conversation start of 350 tokens in.
		f := findingOf(t, recordFixture(t, "audit-fork-one-branch").audit(t), "fork.one-branch")
		if f.Price.ConversationStarts != 1 || f.Price.TokensIn != 350 || f.Price.ElapsedMS != 0 {
			t.Errorf("price = %+v, want 1 start, 350 in", f.Price)
		}
	})
	t.Run("uneven wait", func(t *testing.T) {
		// audit-fork-uneven: eu 1s+1s = 2s, us 1.5s+1s = 2.5s, apac 12s+1s
		// = 13s. Median of the siblings (2s, 2.5s) = 2.25s; 13/2.25 ≥ 2 and
		// 13 − 2.25 ≥ 5s. Price: slowest − second slowest = 13 − 2.5 = 10.5s.
		f := findingOf(t, recordFixture(t, "audit-fork-uneven").audit(t), "fork.uneven")
		if f.Price.ElapsedMS != 10500 {
			t.Errorf("price = %+v, want 10500ms", f.Price)
		}
	})
	t.Run("inherit uncached", func(t *testing.T) {
		// audit-fork-inherit-uncached: the forking call has usage in 4800,
		// out 120: 4920 inherited tokens, × 2 researcher branches = 9840.
		f := findingOf(t, recordFixture(t, "audit-fork-inherit-uncached").audit(t), "fork.inherit-uncached")
		if f.Price.TokensIn != 9840 || f.Price.ConversationStarts != 2 {
			t.Errorf("price = %+v, want 9840 tokens in, 2 starts", f.Price)
		}
	})
	t.Run("loop switches", func(t *testing.T) {
		// audit-handoff-loop: first calls after the three switches have
		// usage in 800, 900 and 1000: 2700 tokens in, 3 conversation starts.
		f := findingOf(t, recordFixture(t, "audit-handoff-loop").audit(t), "handoff.loop")
		if f.Price.TokensIn != 2700 || f.Price.ConversationStarts != 3 {
			t.Errorf("price = %+v, want 2700 in, 3 starts", f.Price)
		}
	})
}

// TestCauses_FromRequest checks the cheap causes come from the recorded
// request, and read "unknown" without it.
func TestCauses_FromRequest(t *testing.T) {
	r := recordFixture(t, "audit-fanout-missed")
	f := findingOf(t, r.audit(t), "fanout.missed")
	want := map[string]string{"fork in tools": "yes", "fork instructions in system prompt": "yes"}
	for _, c := range f.Causes {
		if want[c.Check] != c.Result {
			t.Errorf("cause %s = %s (%s), want %s", c.Check, c.Result, c.Detail, want[c.Check])
		}
	}
	rep, err := (&findings.Config{Rules: rules.All}).Audit(r.Run)
	if err != nil {
		t.Fatal(err)
	}
	f = findingOf(t, rep, "fanout.missed")
	for _, c := range f.Causes {
		if c.Result != "unknown" {
			t.Errorf("without requests, cause %s = %s, want unknown", c.Check, c.Result)
		}
	}
	nf := findingOf(t, recordFixture(t, "audit-fanout-missed-nofork").audit(t), "fanout.missed.nofork")
	if c := nf.Causes[0]; c.Check != "fork in tools" || c.Result != "no" || !strings.Contains(c.Detail, "no fork: in agents.yaml") {
		t.Errorf("nofork cause = %+v", c)
	}
}

// TestFingerprint_Stable checks a fingerprint ignores node numbers and
// times: the same mistake shifted later in a run fingerprints the same.
func TestFingerprint_Stable(t *testing.T) {
	base := fanoutNodes(0, 0)
	shifted := fanoutNodes(10, 42*time.Second)
	a := auditNodes(t, base)
	b := auditNodes(t, shifted)
	fa, fb := findingOf(t, a, "fanout.missed.nofork"), findingOf(t, b, "fanout.missed.nofork")
	if fa.Nodes[0] == fb.Nodes[0] {
		t.Fatalf("the shift did not move the nodes: %v", fb.Nodes)
	}
	if fa.Fingerprint != fb.Fingerprint {
		t.Errorf("fingerprints differ: %s vs %s (shapes %q, %q)", fa.Fingerprint, fb.Fingerprint, fa.Shape, fb.Shape)
	}
	if other := findings.Fingerprint("fanout.missed", fa.Agent, fa.Shape); other == fa.Fingerprint {
		t.Error("another rule gave the same fingerprint")
	}
}

// fanoutNodes builds, in memory, a trunk that reads three files one after
// another; pad adds unrelated nodes first and off shifts every time.
func fanoutNodes(pad int64, off time.Duration) []*record.Node {
	t := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(off)
	var ns []*record.Node
	seq := int64(0)
	add := func(n *record.Node, d time.Duration) {
		seq++
		n.Seq, n.Agent, n.Status = seq, "analyst", record.StatusOK
		n.Started, n.Ended = t, t.Add(d)
		t = t.Add(d)
		ns = append(ns, n)
	}
	add(&record.Node{Kind: record.KindUser, Text: "Compare Q3 revenue across EU, US and APAC"}, 0)
	for i := int64(0); i < pad; i++ {
		add(&record.Node{Kind: record.KindLLM, LLM: &record.LLM{Calls: []string{"write_file"}, Usage: record.Usage{In: 100, Out: 5}}}, time.Second)
		add(&record.Node{Kind: record.KindTool, Tool: &record.Tool{Name: "write_file", Args: `{"path":"notes.md"}`}}, 0)
	}
	for _, r := range []string{"eu", "us", "apac"} {
		add(&record.Node{Kind: record.KindLLM, LLM: &record.LLM{Calls: []string{"read_file"}, Usage: record.Usage{In: 200, Out: 10}}}, time.Second)
		add(&record.Node{Kind: record.KindTool, Tool: &record.Tool{Name: "read_file", Args: `{"path":"regions/` + r + `.md"}`, Result: strings.ToUpper(r) + " Q3 revenue: 1M", Research: true}}, 0)
	}
	add(&record.Node{Kind: record.KindLLM, LLM: &record.LLM{Usage: record.Usage{In: 300, Out: 20}}}, time.Second)
	add(&record.Node{Kind: record.KindFinal, Text: "done"}, 0)
	return ns
}

func auditNodes(t *testing.T, ns []*record.Node) *findings.Report {
	t.Helper()
	run := &record.Run{ID: "mem", Status: record.StatusOK, Started: ns[0].Started, Ended: ns[len(ns)-1].Ended,
		Project: record.Project{Name: "mem", Files: []record.File{{Path: "agents.yaml", Content: "agents:\n  - name: analyst\n    tools: [read_file, write_file]\n"}}}}
	g, err := graph.Build(run, ns)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := (&findings.Config{Rules: rules.All}).Audit(g)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestAudit_InMemory checks the rules on a graph built by hand: a
// dependent chain is not a fan-out, an independent one is.
func TestAudit_InMemory(t *testing.T) {
	rep := auditNodes(t, fanoutNodes(0, 0))
	f := findingOf(t, rep, "fanout.missed.nofork")
	// Three items of 1s model + 0s tool: 3s − 1s = 2s.
	if f.Price.ElapsedMS != 2000 || f.Fix.Location.Line != 2 {
		t.Errorf("price %dms, fix at %s; want 2000ms at agents.yaml:2", f.Price.ElapsedMS, f.Fix.Location)
	}
	chain := fanoutNodes(0, 0)
	// Each read names a file the previous result revealed.
	chain[2].Tool.Result = "see ledger-2024.md"
	chain[4].Tool.Args = `{"path":"books/ledger-2024.md"}`
	chain[4].Tool.Result = "totals are in totals-q3.md"
	chain[6].Tool.Args = `{"path":"books/totals-q3.md"}`
	rep = auditNodes(t, chain)
	if len(rep.Findings) != 0 {
		t.Errorf("a dependent chain was reported:\n%s", dump(rep))
	}
	if c := rep.Checks[0]; c.Status != findings.StatusClear || c.Detail != "1 serial run examined, longest 3 calls" {
		t.Errorf("check = %s", c)
	}
}

func TestGrade(t *testing.T) {
	r := &findings.Report{ElapsedMS: 10000, TokensIn: 1000, TokensOut: 0}
	tests := []struct {
		name  string
		f     findings.Finding
		score int
		grade string
	}{
		{"cheap warning", findings.Finding{Area: findings.Forking, Severity: findings.Warning}, 90, "B"},
		{"error", findings.Finding{Area: findings.Forking, Severity: findings.Error}, 75, "C"},
		// a warning costing half the run's time: 10 + 40×0.5 = 30 points.
		{"costly warning", findings.Finding{Area: findings.Forking, Severity: findings.Warning, Price: findings.Price{ElapsedMS: 5000}}, 70, "C"},
		// an error costing all the tokens: 25 + 40 = 65 points.
		{"costly error", findings.Finding{Area: findings.Forking, Severity: findings.Error, Price: findings.Price{TokensIn: 2000}}, 35, "F"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.Findings = []findings.Finding{tt.f}
			letters, scores := findings.Grade(r)
			if scores[findings.Forking] != tt.score || letters[findings.Forking] != tt.grade || letters[findings.Handoffs] != findings.NA {
				t.Errorf("Grade() = %v %v, want Forking %s (%d)", letters, scores, tt.grade, tt.score)
			}
		})
	}
}

// TestAudit_UniqueIDs: no two findings of one audit share an id, over
// every fixture of the corpus; a second finding of the same rule, agent
// and shape is id#2 (before: the three fork.one-branch findings of
// audit-fanout-missed-serial-forks, one per lone fork of the analyst, had
// one fingerprint between them).
func TestAudit_UniqueIDs(t *testing.T) {
	for _, name := range corpus(t) {
		rep := recordFixture(t, name).audit(t)
		seen := map[string]bool{}
		for _, f := range rep.Findings {
			if seen[f.Fingerprint] {
				t.Errorf("%s: id %s is two findings' (%s)", name, f.Fingerprint, f.Rule)
			}
			seen[f.Fingerprint] = true
		}
	}
}

// TestGrade_NAWhenNothingExamined: an area in which no rule examined
// anything reads n/a, with no score, not A — decided from what the
// rules looked at, not from the findings count. Before, every area of a
// run without forks, hand-offs or requests read "A (100)".
func TestGrade_NAWhenNothingExamined(t *testing.T) {
	grades := func(rep *findings.Report) string {
		var parts []string
		for _, a := range findings.Areas() {
			s, ok := rep.Scores[a]
			parts = append(parts, fmt.Sprintf("%s=%s/%d/%v", a, rep.Grades[a], s, ok))
		}
		return strings.Join(parts, " ")
	}
	// One read, then the answer: fanout.missed is clear (it read the
	// research call) but there was no series a fan-out would replace, no
	// fork, no hand-off and no request to compare: every area n/a.
	one := fanoutNodes(0, 0)
	one = append(one[:3:3], one[7:]...)
	rep := auditNodes(t, one)
	if c := check(t, rep, "fanout.missed"); c.Status != findings.StatusClear {
		t.Errorf("fanout.missed = %s, want clear", c)
	}
	if got, want := grades(rep), "Forking=n/a/0/false Delegation=n/a/0/false Hand-offs=n/a/0/false Caching=n/a/0/false Tools=n/a/0/false"; got != want {
		t.Errorf("one read: grades %s, want %s", got, want)
	}
	if got, want := rep.GradeLine(), "Forking n/a · Delegation n/a · Hand-offs n/a · Caching n/a · Tools n/a"; got != want {
		t.Errorf("GradeLine() = %q, want %q", got, want)
	}
	// Three serial reads: a fan-out candidate, examined (and found: 10
	// points and 40 × 2s of the run's 4s).
	rep = auditNodes(t, fanoutNodes(0, 0))
	if got, want := grades(rep), "Forking=C/70/true Delegation=n/a/0/false Hand-offs=n/a/0/false Caching=n/a/0/false Tools=n/a/0/false"; got != want {
		t.Errorf("three serial reads: grades %s, want %s", got, want)
	}
	// A dependent chain of three reads: examined, nothing found: an A.
	chain := fanoutNodes(0, 0)
	chain[2].Tool.Result = "see ledger-2024.md"
	chain[4].Tool.Args = `{"path":"books/ledger-2024.md"}`
	chain[4].Tool.Result = "totals are in totals-q3.md"
	chain[6].Tool.Args = `{"path":"books/totals-q3.md"}`
	rep = auditNodes(t, chain)
	if got, want := grades(rep), "Forking=A/100/true Delegation=n/a/0/false Hand-offs=n/a/0/false Caching=n/a/0/false Tools=n/a/0/false"; got != want {
		t.Errorf("dependent chain: grades %s, want %s", got, want)
	}
	// Three reads made in one response on a stack that runs them at
	// once: the fan-out done right is examined, and is an A.
	group := fanoutNodes(0, 0)
	group[1].LLM.Calls = []string{"Read", "Read", "Read"}
	var ns []*record.Node
	for i, n := range group {
		if i == 3 || i == 5 {
			continue // the second and third responses: the reads are all the first's
		}
		if n.Kind == record.KindTool {
			n.Tool.Name = "Read"
			n.Tool.Args = strings.Replace(n.Tool.Args, `"path"`, `"file_path"`, 1)
		}
		ns = append(ns, n)
	}
	for i, n := range ns {
		n.Seq = int64(i + 1)
		if n.Kind == record.KindTool {
			n.CalledBy = 2
		}
	}
	run := &record.Run{ID: "mem", Status: record.StatusOK, Started: ns[0].Started, Ended: ns[len(ns)-1].Ended,
		Source: record.Source{Format: "claude-code"}, Project: record.Project{Name: "mem"}}
	g, err := graph.Build(run, ns)
	if err != nil {
		t.Fatal(err)
	}
	rep, err = (&findings.Config{Rules: rules.All}).Audit(g)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := grades(rep), "Forking=A/100/true Delegation=n/a/0/false Hand-offs=n/a/0/false Caching=n/a/0/false Tools=n/a/0/false"; got != want {
		t.Errorf("one response of three Reads: grades %s, want %s\n%s", got, want, dump(rep))
	}
	// Recorded runs: a hand-off examined, and requests compared.
	for _, tt := range []struct{ fixture, area, want string }{
		{"nearmiss-handoff-triage-keeps", "Hand-offs", "A"},
		{"cache-stable-prompt", "Caching", "A"},
		{"nearmiss-handoff-triage-keeps", "Caching", "A"},
		{"audit-fork-uneven", "Hand-offs", "n/a"},
		{"cache-stable-prompt", "Delegation", "n/a"},
	} {
		rep := recordFixture(t, tt.fixture).audit(t)
		if got := rep.Grades[findings.Area(tt.area)]; got != tt.want {
			t.Errorf("%s: %s %s, want %s", tt.fixture, tt.area, got, tt.want)
		}
	}
}
