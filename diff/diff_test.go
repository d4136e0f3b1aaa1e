package diff

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/findings/report"
	"github.com/inspect-dev/inspect/findings/rules"
	goldenfile "github.com/inspect-dev/inspect/internal/golden"
	"github.com/inspect-dev/inspect/record"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/inspect-dev/inspect/runtime/runtimetest"

	"github.com/inspect-dev/inspect/mermaid/mermaidtest"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/store"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// recordFixture returns fixture name run with the scripted model and a
// fixed clock, and its audit: recorded once for the package's tests, which
// share it and change neither its graph nor its audit (a test that changes
// them records its own with recordFresh).
func recordFixture(t *testing.T, fixture string) Side {
	t.Helper()
	recorded.Lock()
	defer recorded.Unlock()
	r, ok := recorded.runs[fixture]
	if !ok {
		r = &recording{}
		r.side, r.db, r.err = recordRun(fixture, recorded.dir)
		if recorded.runs == nil {
			recorded.runs = map[string]*recording{}
		}
		recorded.runs[fixture] = r
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.side
}

// recordFresh runs fixture name into a database of the test's own, for a
// test that changes what it gets or needs a second recording.
func recordFresh(t *testing.T, fixture string) Side {
	t.Helper()
	s, db, err := recordRun(fixture, t.TempDir())
	if db != nil {
		t.Cleanup(func() { db.Close() })
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// recorded are the fixtures recordFixture recorded, under a temporary
// folder TestMain removes.
var recorded struct {
	sync.Mutex
	dir  string
	runs map[string]*recording
}

// recording is one fixture's run and audit, its database, or why it failed.
type recording struct {
	side Side
	db   *store.DB
	err  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "diff-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	recorded.dir = dir
	code := m.Run()
	for _, r := range recorded.runs {
		if r.db != nil {
			r.db.Close()
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// recordRun records fixture name, under dir, into a database of its own
// (returned, to be closed, even with an error) and audits it.
func recordRun(fixture, dir string) (Side, *store.DB, error) {
	ctx := context.Background()
	work, err := os.MkdirTemp(dir, fixture+"-")
	if err != nil {
		return Side{}, nil, err
	}
	for _, sub := range []string{"db", "project"} {
		if err := os.Mkdir(filepath.Join(work, sub), 0o755); err != nil {
			return Side{}, nil, err
		}
	}
	db, err := store.Open(ctx, filepath.Join(work, "db", "runs.db"))
	if err != nil {
		return Side{}, nil, err
	}
	id := "run-" + fixture
	g, err := runtimetest.RecordFixture(ctx, db, filepath.Join("..", "fixtures", fixture), filepath.Join(work, "project"), id, time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		return Side{}, db, err
	}
	rep, err := (&findings.Config{Rules: rules.All, Requests: func(seq int64) ([]byte, error) { return db.Request(ctx, id, seq) }}).Audit(g)
	if err != nil {
		return Side{}, db, err
	}
	return Side{Run: g, Report: rep}, db, nil
}

func delta(t *testing.T, ds []Delta, m Metric) Delta {
	t.Helper()
	for _, d := range ds {
		if d.Metric == m {
			return d
		}
	}
	t.Fatalf("no metric %s", m)
	return Delta{}
}

func TestCompare_Identical(t *testing.T) {
	base, new := recordFixture(t, "fanout-compact"), recordFresh(t, "fanout-compact") // two recordings
	r, err := (&Config{MaxIncrease: []Limit{{Key: "tokens", Percent: true, Value: 0}}, FailOn: findings.Warning}).Compare(base, new)
	if err != nil {
		t.Fatal(err)
	}
	if r.Failed || r.Changed() {
		t.Errorf("Failed = %v, Changed = %v, want false, false (reasons %v)", r.Failed, r.Changed(), r.Reasons)
	}
	if n := len(r.Findings.New) + len(r.Findings.Fixed); n != 0 {
		t.Errorf("new+fixed = %d, want 0", n)
	}
	for _, d := range r.Totals {
		if d.Change != 0 {
			t.Errorf("%s change = %d, want 0", d.Metric, d.Change)
		}
	}
	if !strings.HasPrefix(r.Summary, "No changes:") {
		t.Errorf("Summary = %q, want it to start with No changes:", r.Summary)
	}
	if got := delta(t, r.Totals, MetricBranches).New; got != 3 {
		t.Errorf("branches = %d, want 3", got)
	}
}

func TestCompare_Fixed(t *testing.T) {
	r, err := Compare(recordFixture(t, "audit-fanout-missed"), recordFixture(t, "nearmiss-even-fanout"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings.Fixed) != 1 || r.Findings.Fixed[0].Rule != "fanout.missed" {
		t.Fatalf("fixed = %+v, want one fanout.missed", r.Findings.Fixed)
	}
	e := r.Findings.Fixed[0].Expectation
	if e == nil || e.Result != Shown {
		t.Fatalf("expectation = %+v, want shown", e)
	}
	if !strings.Contains(e.Detail, "3 branches") {
		t.Errorf("detail = %q, want it to name 3 branches", e.Detail)
	}
	if len(r.Findings.New) != 0 || r.Failed {
		t.Errorf("new = %d, failed = %v; want 0, false", len(r.Findings.New), r.Failed)
	}
	if d := delta(t, r.Totals, MetricForks); d.Base != 0 || d.New != 1 {
		t.Errorf("forks %d → %d, want 0 → 1", d.Base, d.New)
	}
	var researcher *AgentDelta
	for i := range r.Agents {
		if r.Agents[i].Agent == "researcher" {
			researcher = &r.Agents[i]
		}
	}
	if researcher == nil || researcher.InBase || !researcher.InNew {
		t.Errorf("researcher agent delta = %+v, want only in the new run", researcher)
	}
}

func TestCompare_NotShown(t *testing.T) {
	// A fixed fan-out whose new run has no fork: the finding disappeared
	// (here, the calls depend on each other) but the expectation is not shown.
	r, err := Compare(recordFixture(t, "audit-fanout-missed"), recordFixture(t, "nearmiss-serial-dependent"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Findings.Fixed {
		if f.Rule == "fanout.missed" {
			if f.Expectation.Result != NotShown {
				t.Errorf("expectation = %+v, want not shown", f.Expectation)
			}
			return
		}
	}
	t.Fatalf("fanout.missed not fixed: %+v", r.Findings)
}

func TestCompare_NewFindingFails(t *testing.T) {
	base, new := recordFixture(t, "nearmiss-even-fanout"), recordFixture(t, "audit-fanout-missed")
	for _, tt := range []struct {
		name   string
		failOn findings.Severity
		want   bool
	}{{"warning", findings.Warning, true}, {"error", findings.Error, false}, {"unset", 0, false}} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := (&Config{FailOn: tt.failOn}).Compare(base, new)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Findings.New) != 1 || r.Findings.New[0].Rule != "fanout.missed" {
				t.Fatalf("new = %+v, want one fanout.missed", r.Findings.New)
			}
			if r.Failed != tt.want {
				t.Errorf("Failed = %v, want %v (reasons %v)", r.Failed, tt.want, r.Reasons)
			}
		})
	}
}

// A new run that broke sends fewer tokens and finds nothing; it must fail
// the comparison, not pass as an improvement.
func TestCompare_NewRunFailed(t *testing.T) {
	base, new := recordFresh(t, "audit-fanout-missed"), recordFresh(t, "nearmiss-even-fanout") // changed below
	new.Run.Status, new.Run.Error = record.StatusError, "provider returned 500 after 3 retries"
	r, err := (&Config{}).Compare(base, new)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Failed || len(r.Reasons) == 0 || !strings.Contains(r.Reasons[0], "the new run ended error: provider returned 500") {
		t.Errorf("Failed = %v, reasons %q; want a failure naming the broken run", r.Failed, r.Reasons)
	}
	if !strings.HasPrefix(r.Summary, "FAIL: ") {
		t.Errorf("Summary = %q, want FAIL first", r.Summary)
	}
	// Both runs broken: no regression between them.
	base.Run.Status = record.StatusError
	if r, _ := (&Config{}).Compare(base, new); r.Failed {
		t.Errorf("two failed runs compared: Failed = true (%v)", r.Reasons)
	}
}

func TestCompare_Thresholds(t *testing.T) {
	base, new := recordFixture(t, "nearmiss-even-fanout"), recordFixture(t, "audit-fanout-missed")
	bt, nt := totalsOf(base.Run, ""), totalsOf(new.Run, "")
	btok, ntok := bt.v[MetricTokensIn]+bt.v[MetricTokensOut], nt.v[MetricTokensIn]+nt.v[MetricTokensOut]
	if ntok <= btok {
		t.Fatalf("tokens %d → %d: the fixture pair no longer increases tokens", btok, ntok)
	}
	pct := float64(ntok-btok) * 100 / float64(btok)
	for _, tt := range []struct {
		name  string
		limit string
		fail  bool
	}{
		{"under percent", "tokens=" + ftoa(pct+1) + "%", false},
		{"over percent", "tokens=" + ftoa(pct-1) + "%", true},
		{"over absolute", "tokens=" + ftoa(float64(ntok-btok-1)), true},
		{"exactly absolute", "tokens=" + ftoa(float64(ntok-btok)), false},
		{"elapsed under absolute", "elapsed=1m", false},
		{"tokens in over", "tokens_in=0", true},
		{"tool calls within", "tool_calls=0", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ls, err := ParseLimits(tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			r, err := (&Config{MaxIncrease: ls}).Compare(base, new)
			if err != nil {
				t.Fatal(err)
			}
			if r.Failed != tt.fail || r.Thresholds[0].Passed == tt.fail {
				t.Errorf("%s: Failed = %v, want %v (%s)", tt.limit, r.Failed, tt.fail, r.Thresholds[0].Message)
			}
		})
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

func TestParseLimits(t *testing.T) {
	tests := []struct {
		in      string
		want    []Limit
		wantErr string
	}{
		{"tokens=10%,elapsed=20%", []Limit{{"tokens", true, 10}, {"elapsed", true, 20}}, ""},
		{"elapsed=30s, llm_calls=2", []Limit{{"elapsed", false, 30000}, {"llm_calls", false, 2}}, ""},
		{"tokens_in=500", []Limit{{"tokens_in", false, 500}}, ""},
		{"cost=1", nil, "unknown key \"cost\""},
		{"tokens", nil, "is not KEY=VALUE"},
		{"elapsed=5", nil, "nor a duration"},
		{"tokens=-1%", nil, "not a percentage"},
		{"", nil, "no limits"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseLimits(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseLimits(%q) error = %v, want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("ParseLimits(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("ParseLimits(%q)[%d] = %+v, want %+v", tt.in, i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestMatchFindings_ByFingerprint(t *testing.T) {
	f := func(fp string, nodes ...string) findings.Finding {
		return findings.Finding{Rule: "x", Fingerprint: fp, Nodes: nodes}
	}
	got := matchFindings([]findings.Finding{f("a", "n1"), f("a", "n9"), f("b", "n2")}, []findings.Finding{f("a", "n40"), f("c", "n3")})
	if len(got.Unchanged) != 1 || got.Unchanged[0].BaseNodes[0] != "n1" || got.Unchanged[0].Nodes[0] != "n40" {
		t.Errorf("unchanged = %+v, want a (n1 → n40)", got.Unchanged)
	}
	if len(got.Fixed) != 2 || got.Fixed[0].Nodes[0] != "n9" || got.Fixed[1].Fingerprint != "b" {
		t.Errorf("fixed = %+v, want the second a and b", got.Fixed)
	}
	if len(got.New) != 1 || got.New[0].Fingerprint != "c" {
		t.Errorf("new = %+v, want c", got.New)
	}
}

func TestGolden(t *testing.T) {
	ls, err := ParseLimits("tokens=10%,elapsed=20%")
	if err != nil {
		t.Fatal(err)
	}
	base, new := recordFixture(t, "audit-fanout-missed"), recordFixture(t, "nearmiss-even-fanout")
	r, err := (&Config{MaxIncrease: ls, FailOn: findings.Warning}).Compare(base, new)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := (&Config{FailOn: findings.Warning}).Compare(new, base)
	if err != nil {
		t.Fatal(err)
	}
	var md, js, md2, junit, sarif bytes.Buffer
	for _, step := range []error{WriteMarkdown(&md, r), WriteJSON(&js, r), WriteMarkdown(&md2, r2),
		WriteJUnit(&junit, r2, findings.Warning), WriteSARIF(&sarif, r2, report.SARIFPaths{})} {
		if step != nil {
			t.Fatal(step)
		}
	}
	golden(t, "fixed.md", md.Bytes())
	golden(t, "fixed.json", js.Bytes())
	golden(t, "new.md", md2.Bytes())
	golden(t, "new.junit.xml", junit.Bytes())
	golden(t, "new.sarif", sarif.Bytes())

	if !strings.Contains(md.String(), "```mermaid\n") || !strings.Contains(md.String(), "**shown**") {
		t.Errorf("markdown lacks the mermaid block or the shown expectation:\n%s", md.String())
	}
	var doc struct {
		Findings struct {
			Fixed []struct {
				Rule        string `json:"rule"`
				Fingerprint string `json:"fingerprint"`
				Expectation struct {
					Result string `json:"result"`
				} `json:"expectation"`
			} `json:"fixed"`
		} `json:"findings"`
		Totals []struct {
			Metric string `json:"metric"`
		} `json:"totals"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Findings.Fixed) != 1 || doc.Findings.Fixed[0].Expectation.Result != "shown" || doc.Findings.Fixed[0].Fingerprint == "" {
		t.Errorf("json fixed = %+v", doc.Findings.Fixed)
	}
	if len(doc.Totals) != len(Metrics()) {
		t.Errorf("json totals = %d, want %d", len(doc.Totals), len(Metrics()))
	}

	var ju struct {
		Fails int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(junit.Bytes(), &ju); err != nil || ju.Fails != 1 {
		t.Errorf("junit failures = %d (%v), want 1:\n%s", ju.Fails, err, junit.String())
	}
	var sd struct {
		Runs []struct {
			Results []struct {
				RuleID        string            `json:"ruleId"`
				BaselineState string            `json:"baselineState"`
				Fingerprints  map[string]string `json:"partialFingerprints"`
				Locations     []any             `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(sarif.Bytes(), &sd); err != nil {
		t.Fatal(err)
	}
	if len(sd.Runs) != 1 || len(sd.Runs[0].Results) != 1 {
		t.Fatalf("sarif = %s", sarif.String())
	}
	res := sd.Runs[0].Results[0]
	if res.RuleID != "fanout.missed" || res.BaselineState != "new" || res.Fingerprints[findings.FingerprintKey] == "" || len(res.Locations) == 0 {
		t.Errorf("sarif result = %+v", res)
	}
	var fixedSarif, fixedJUnit bytes.Buffer
	if err := WriteSARIF(&fixedSarif, r, report.SARIFPaths{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJUnit(&fixedJUnit, r, findings.Warning); err != nil {
		t.Fatal(err)
	}
	golden(t, "fixed.sarif", fixedSarif.Bytes())
	golden(t, "fixed.junit.xml", fixedJUnit.Bytes())
	same, err := Compare(base, base)
	if err != nil {
		t.Fatal(err)
	}
	var sameSarif bytes.Buffer
	if err := WriteSARIF(&sameSarif, same, report.SARIFPaths{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sameSarif.String(), `"baselineState": "unchanged"`) {
		t.Errorf("sarif of a run against itself has no unchanged result:\n%s", sameSarif.String())
	}
	golden(t, "unchanged.sarif", sameSarif.Bytes())
	for name, b := range map[string][]byte{"new": sarif.Bytes(), "fixed": fixedSarif.Bytes(), "unchanged": sameSarif.Bytes()} {
		validateSARIF(t, name, b)
	}
	if !strings.Contains(fixedSarif.String(), `"baselineState": "absent"`) {
		t.Errorf("sarif of a fixed finding has no absent result:\n%s", fixedSarif.String())
	}

	mermaidtest.Check(t, map[string][]byte{"fixed.mmd": mermaidBlock(t, md.String()), "new.mmd": mermaidBlock(t, md2.String())})
}

// validateSARIF checks b against the official SARIF 2.1.0 schema (the copy
// the findings tests use).
func validateSARIF(t *testing.T, name string, b []byte) {
	t.Helper()
	sch, err := jsonschema.NewCompiler().Compile(filepath.Join("..", "findings", "testdata", "sarif-2.1.0.json"))
	if err != nil {
		t.Fatalf("compile schema: %v", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Errorf("%s SARIF does not validate: %v", name, err)
	}
}

// TestWriteJUnit_Untrusted checks text XML cannot carry (control
// characters from an agent's output, a CDATA end) leaves the JUnit well
// formed, as the other formats' escaping does.
func TestWriteJUnit_Untrusted(t *testing.T) {
	r, err := Compare(recordFixture(t, "nearmiss-even-fanout"), recordFixture(t, "audit-fanout-missed"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings.New) == 0 {
		t.Fatal("no new finding")
	}
	r.Findings.New[0].Message = "bad \x00\x1b[31m]]> text"
	for _, failOn := range []findings.Severity{findings.Warning, 0} {
		var b bytes.Buffer
		if err := WriteJUnit(&b, r, failOn); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Cases []struct {
				Failure   string `xml:"failure"`
				SystemOut string `xml:"system-out"`
			} `xml:"testsuite>testcase"`
		}
		if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatalf("fail-on %v: JUnit is not XML: %v\n%s", failOn, err, b.String())
		}
		if got := doc.Cases[0].Failure + doc.Cases[0].SystemOut; !strings.Contains(got, "bad \uFFFD\uFFFD[31m]]> text") {
			t.Errorf("fail-on %v: case text = %q", failOn, got)
		}
	}
}

// mermaidBlock returns the body of the markdown's ```mermaid block.
func mermaidBlock(t *testing.T, md string) []byte {
	t.Helper()
	_, rest, ok := strings.Cut(md, "```mermaid\n")
	if !ok {
		t.Fatalf("no mermaid block in:\n%s", md)
	}
	body, _, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatalf("unterminated mermaid block")
	}
	return []byte(body)
}

func TestWriteMarkdown_WriteError(t *testing.T) {
	r, err := Compare(recordFixture(t, "audit-fanout-missed"), recordFixture(t, "nearmiss-even-fanout"))
	if err != nil {
		t.Fatal(err)
	}
	w := &failWriter{n: 100}
	if err := WriteMarkdown(w, r); err == nil {
		t.Error("WriteMarkdown to a failing writer returned nil")
	}
	if w.after > 1 {
		t.Errorf("WriteMarkdown wrote %d times after the first error", w.after-1)
	}
}

type failWriter struct{ n, after int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n <= 0 {
		w.after++
		return 0, errors.New("disk full")
	}
	w.n -= len(p)
	return len(p), nil
}

// TestJSONDocumented checks that every JSON field of a Report is named in
// docs/diff-json.md.
func TestJSONDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "diff-json.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] || typ.PkgPath() != reflect.TypeOf(Report{}).PkgPath() {
			return
		}
		seen[typ] = true
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous || name == "-" || !f.IsExported() {
				continue
			}
			if !bytes.Contains(doc, []byte(`"`+name+`"`)) {
				t.Errorf("docs/diff-json.md does not document %s.%s (%q)", typ.Name(), f.Name, name)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(Report{}))
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, name, got, *update)
}
