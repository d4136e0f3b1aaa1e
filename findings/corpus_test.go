package findings_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/internal/fixturetest"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/stack"
	"github.com/inspect-dev/inspect/store"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ and the generated sections of docs/audit.md (never a fixture's want.txt)")

// t0 is the start of every recorded fixture run (virtual time).
var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// recorded is one fixture run, recorded and loaded.
type recorded struct {
	DB    *store.DB
	Run   *graph.Run
	Cache *cache.Report // its prompt-cache analysis, read while the file is open
}

// requests binds DB.Request to the run.
func (r *recorded) requests(seq int64) ([]byte, error) {
	return r.DB.Request(context.Background(), r.Run.ID, seq)
}

// audit runs every rule with default options on the run.
func (r *recorded) audit(t testing.TB) *findings.Report {
	t.Helper()
	cfg := &findings.Config{Rules: rules.All, Requests: r.requests, Cache: func() (*cache.Report, error) { return r.Cache, nil },
		Profile: stack.For(r.Run.Source)} // as the analysis layer picks it
	rep, err := cfg.Audit(r.Run)
	if err != nil {
		t.Fatalf("Audit: %v", err)
	}
	return rep
}

// recordFixture records fixture name once for the package's tests (each
// later call returns the same run, which no test changes): a scripted
// project is copied into a temporary folder (write_file must not touch the
// repository) and run in virtual time; another framework's run
// (trace.otlp.jsonl) is imported through the OTLP importer. Either way the
// graph is loaded and its prompt-cache analysis read.
func recordFixture(t testing.TB, name string) *recorded {
	t.Helper()
	fixtures.Lock()
	defer fixtures.Unlock()
	f, ok := fixtures.runs[name]
	if !ok {
		f = recordRun(name)
		if fixtures.runs == nil {
			fixtures.runs = map[string]*fixture{}
		}
		fixtures.runs[name] = f
	}
	if f.err != nil {
		t.Fatal(f.err)
	}
	return f.rec
}

// fixtures are the fixtures recordFixture recorded, in one store in one
// temporary folder, which TestMain removes.
var fixtures struct {
	sync.Mutex
	dir  string
	db   *store.DB
	runs map[string]*fixture
}

// fixture is one recording, or why it failed.
type fixture struct {
	rec *recorded
	err error
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if fixtures.db != nil {
		fixtures.db.Close()
	}
	if fixtures.dir != "" {
		os.RemoveAll(fixtures.dir)
	}
	os.Exit(code)
}

// recordRun records fixture name into the package's store.
func recordRun(name string) *fixture {
	ctx := context.Background()
	if fixtures.db == nil {
		dir, err := os.MkdirTemp("", "findings-test-")
		if err != nil {
			return &fixture{err: err}
		}
		fixtures.dir = dir
		if fixtures.db, err = store.Open(ctx, filepath.Join(dir, "runs.db")); err != nil {
			return &fixture{err: fmt.Errorf("store.Open: %w", err)}
		}
	}
	work, err := os.MkdirTemp(fixtures.dir, name+"-")
	if err != nil {
		return &fixture{err: err}
	}
	g, err := fixturetest.Record(ctx, fixtures.db, filepath.Join("..", "fixtures", name), work, "run-"+name, t0)
	if err != nil {
		return &fixture{err: err}
	}
	rep, err := cache.Analyze(ctx, g, fixtures.db, nil)
	if err != nil {
		return &fixture{err: err}
	}
	return &fixture{rec: &recorded{DB: fixtures.db, Run: g, Cache: rep}}
}

// want is a fixture's hand-written want.txt: what its audit must report,
// which rules it is a near miss for, and the later runs its findings'
// expectations are checked against. Lines:
//
//	finding RULE @AGENT nSEQ…   one per finding the audit reports, its evidence nodes
//	near-miss RULE              the run looks like RULE's mistake and must not trigger it
//	next RULE FIXTURE VERDICT   FIXTURE's run fixes this fixture's RULE finding, and
//	                            RULE's check says VERDICT (shown, not shown) on it;
//	                            ": DETAIL" after VERDICT pins the check's detail
//
// '#' starts a comment. Nothing rewrites these files: they are written by
// reading the fixture's script and its recorded run.
type want struct {
	findings []string // "RULE @AGENT n1 n2", sorted
	nearMiss []string
	next     []nextRun
}

// nextRun is one "next" line.
type nextRun struct {
	rule, fixture, verdict, detail string
	line                           int
}

// corpus lists the fixtures that have a want.txt.
func corpus(t testing.TB) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("..", "fixtures"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join("..", "fixtures", e.Name(), "want.txt")); e.IsDir() && err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

// readWant parses fixtures/name/want.txt.
func readWant(t testing.TB, name string) want {
	t.Helper()
	path := filepath.Join("..", "fixtures", name, "want.txt")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var w want
	for i, l := range strings.Split(string(raw), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Fields(l)
		bad := func(why string) { t.Fatalf("%s:%d: %s: %q", path, i+1, why, l) }
		if len(f) < 2 || findings.Lookup(rules.All, f[1]) == nil {
			bad("the second word is not a rule id")
		}
		switch f[0] {
		case "finding":
			if len(f) < 4 || !strings.HasPrefix(f[2], "@") {
				bad("want finding RULE @AGENT nSEQ…")
			}
			w.findings = append(w.findings, strings.Join(f[1:], " "))
		case "near-miss":
			if len(f) != 2 {
				bad("want near-miss RULE")
			}
			w.nearMiss = append(w.nearMiss, f[1])
		case "next":
			rest, detail, _ := strings.Cut(l, ": ")
			f = strings.Fields(rest)
			if len(f) < 4 {
				bad("want next RULE FIXTURE VERDICT")
			}
			n := nextRun{rule: f[1], fixture: f[2], verdict: strings.Join(f[3:], " "), detail: detail, line: i + 1}
			if n.verdict != findings.Shown && n.verdict != findings.NotShown {
				bad("the verdict is shown or not shown")
			}
			w.next = append(w.next, n)
		default:
			bad("unknown line")
		}
	}
	sort.Strings(w.findings)
	return w
}

// got lists the report's findings as want's finding lines.
func got(rep *findings.Report) []string {
	var out []string
	for _, f := range rep.Findings {
		out = append(out, f.Rule+" @"+f.Agent+" "+strings.Join(f.Nodes, " "))
	}
	sort.Strings(out)
	return out
}

// TestCorpus records every fixture with a want.txt and checks its audit
// reports exactly the findings written there (rule, agent, evidence
// nodes), none of the rules it is a near miss for, and one check per rule.
func TestCorpus(t *testing.T) {
	for _, name := range corpus(t) {
		t.Run(name, func(t *testing.T) {
			w := readWant(t, name)
			rep := recordFixture(t, name).audit(t)
			if g := got(rep); strings.Join(g, "\n") != strings.Join(w.findings, "\n") {
				t.Errorf("findings:\n  %s\nwant:\n  %s\n%s", strings.Join(g, "\n  "), strings.Join(w.findings, "\n  "), dump(rep))
			}
			for _, r := range w.nearMiss {
				for _, f := range rep.Findings {
					if f.Rule == r {
						t.Errorf("near miss of %s triggered it: %s", r, f.Message)
					}
				}
			}
			if len(rep.Checks) != len(rules.All) {
				t.Errorf("%d checks, want one per rule (%d)", len(rep.Checks), len(rules.All))
			}
		})
	}
}

// TestCorpus_EveryRule checks, from All, that every rule has a fixture
// that triggers it and a near-miss fixture, and that every rule with an
// expectation check has a later run showing what it promised and one that
// does not.
func TestCorpus_EveryRule(t *testing.T) {
	trigger, near, shown, notShown := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, name := range corpus(t) {
		w := readWant(t, name)
		for _, f := range w.findings {
			trigger[strings.Fields(f)[0]] = true
		}
		for _, r := range w.nearMiss {
			near[r] = true
		}
		for _, n := range w.next {
			map[string]map[string]bool{findings.Shown: shown, findings.NotShown: notShown}[n.verdict][n.rule] = true
		}
	}
	for _, r := range rules.All {
		if !trigger[r.ID] {
			t.Errorf("rule %s: no fixture triggers it (a want.txt line \"finding %s @AGENT n…\")", r.ID, r.ID)
		}
		if !near[r.ID] {
			t.Errorf("rule %s: no near-miss fixture (a want.txt line \"near-miss %s\")", r.ID, r.ID)
		}
		if r.Expect == nil {
			continue
		}
		if !shown[r.ID] || !notShown[r.ID] {
			t.Errorf("rule %s: its expectation check needs a later run that shows what it promised and one that does not (\"next %s FIXTURE shown\" and \"not shown\")", r.ID, r.ID)
		}
	}
}

// TestExpect checks each rule's expectation check on the pairs of runs the
// fixtures name: the base fixture's finding is fixed in the later run
// (no finding there has its fingerprint) and the check's verdict is the
// one written down.
func TestExpect(t *testing.T) {
	for _, name := range corpus(t) {
		for _, n := range readWant(t, name).next {
			t.Run(name+"/"+n.fixture, func(t *testing.T) {
				base, next := recordFixture(t, name), recordFixture(t, n.fixture)
				baseRep, nextRep := base.audit(t), next.audit(t)
				checked := 0
				for _, f := range baseRep.Findings {
					if f.Rule != n.rule {
						continue
					}
					checked++
					for _, g := range nextRep.Findings {
						if g.Fingerprint == f.Fingerprint {
							t.Fatalf("want.txt:%d: %s's %s finding is not fixed in %s (same fingerprint: %s)", n.line, name, n.rule, n.fixture, g.Message)
						}
					}
					v := findings.Expect(baseRep.Rules, f, next.Run)
					t.Logf("%s: %s", v.Result, v.Detail)
					if v.Result != n.verdict || v.Detail == "" {
						t.Errorf("want.txt:%d: Expect() = %s (%s), want %s", n.line, v.Result, v.Detail, n.verdict)
					}
					if n.detail != "" && v.Detail != n.detail {
						t.Errorf("want.txt:%d: detail = %q, want %q", n.line, v.Detail, n.detail)
					}
				}
				if checked == 0 {
					t.Fatalf("want.txt:%d: %s has no %s finding", n.line, name, n.rule)
				}
			})
		}
	}
}

func dump(rep *findings.Report) string {
	var b strings.Builder
	for _, f := range rep.Findings {
		b.WriteString("  " + f.Rule + " @" + f.Agent + " " + strings.Join(f.Nodes, ",") + ": " + f.Message + "\n")
	}
	for _, c := range rep.Checks {
		b.WriteString("  " + c.String() + "\n")
	}
	return b.String()
}
