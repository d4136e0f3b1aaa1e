package findings_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/runtime/runtimetest"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/store"
)

var update = flag.Bool("update", false, "rewrite want.txt of the fixtures and the golden files in testdata/")

// t0 is the start of every recorded fixture run (virtual time).
var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// recorded is one fixture run, recorded and loaded.
type recorded struct {
	DB  *store.DB
	Run *graph.Run
}

// requests binds DB.Request to the run.
func (r *recorded) requests(seq int64) ([]byte, error) {
	return r.DB.Request(context.Background(), r.Run.ID, seq)
}

// audit runs every rule with default options on the run.
func (r *recorded) audit(t testing.TB) *findings.Report {
	t.Helper()
	rep, err := findings.Audit(r.Run, r.requests)
	if err != nil {
		t.Fatalf("Audit: %v", err)
	}
	return rep
}

// recordFixture copies fixture dir into a temporary folder (write_file must not
// touch the repository), runs its script in virtual time and loads the graph.
func recordFixture(t testing.TB, name string) *recorded {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	g, err := runtimetest.RecordFixture(ctx, db, filepath.Join("..", "fixtures", name), t.TempDir(), "run-"+name, t0)
	if err != nil {
		t.Fatal(err)
	}
	return &recorded{DB: db, Run: g}
}

// corpus lists the audit fixtures: audit-<rule> triggers exactly that rule,
// nearmiss-<what> triggers none.
func corpus(t testing.TB) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("..", "fixtures"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && (strings.HasPrefix(e.Name(), "audit-") || strings.HasPrefix(e.Name(), "nearmiss-")) {
			out = append(out, e.Name())
		}
	}
	return out
}

// intended is the rule a fixture is named for: audit-fork-one-branch →
// fork.one-branch, and audit-<rule>-<edge> (an edge case of that rule) →
// the rule with the longest matching slug, so audit-fanout-missed-nofork-x
// is fanout.missed.nofork; a near miss intends none.
func intended(t testing.TB, name string) []string {
	if !strings.HasPrefix(name, "audit-") {
		return nil
	}
	slug := strings.TrimPrefix(name, "audit-")
	best := ""
	for _, r := range findings.All {
		rs := strings.NewReplacer(".", "-").Replace(r.ID)
		if (slug == rs || strings.HasPrefix(slug, rs+"-")) && len(r.ID) > len(best) {
			best = r.ID
		}
	}
	if best == "" {
		t.Fatalf("fixture %s names no rule", name)
	}
	return []string{best}
}

func ruleSet(rep *findings.Report) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range rep.Findings {
		if !seen[f.Rule] {
			seen[f.Rule] = true
			out = append(out, f.Rule)
		}
	}
	sort.Strings(out)
	return out
}

// TestCorpus records every audit fixture, asserts the exact rule set in its
// want.txt, checks every rule has a trigger fixture, and prints precision
// and recall against the rule each fixture is named for.
func TestCorpus(t *testing.T) {
	names := corpus(t)
	covered := map[string]bool{}
	var tp, fp, fn int
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			rep := recordFixture(t, name).audit(t)
			got := ruleSet(rep)
			wantFile := filepath.Join("..", "fixtures", name, "want.txt")
			if *update {
				text := "# rule ids this fixture's audit reports, one a line; rewritten by go test ./findings -update\n" + strings.Join(got, "\n")
				if err := os.WriteFile(wantFile, []byte(strings.TrimSpace(text)+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			raw, err := os.ReadFile(wantFile)
			if err != nil {
				t.Fatalf("read want.txt (run with -update to create it): %v", err)
			}
			var want []string
			for _, l := range strings.Split(string(raw), "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
					want = append(want, l)
				}
			}
			sort.Strings(want)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("rules = [%s], want [%s]\n%s", strings.Join(got, ", "), strings.Join(want, ", "), dump(rep))
			}
			in := intended(t, name)
			for _, r := range in {
				covered[r] = true
			}
			for _, r := range got {
				if contains(in, r) {
					tp++
				} else {
					fp++
				}
			}
			for _, r := range in {
				if !contains(got, r) {
					fn++
				}
			}
			if len(rep.Checks) != len(findings.All) {
				t.Errorf("%d checks, want one per rule (%d)", len(rep.Checks), len(findings.All))
			}
		})
	}
	for _, r := range findings.All {
		if !covered[r.ID] {
			t.Errorf("rule %s has no fixtures/audit-%s", r.ID, strings.ReplaceAll(r.ID, ".", "-"))
		}
	}
	precision, recall := 1.0, 1.0
	if tp+fp > 0 {
		precision = float64(tp) / float64(tp+fp)
	}
	if tp+fn > 0 {
		recall = float64(tp) / float64(tp+fn)
	}
	t.Logf("corpus: %d fixtures, %d true positives, %d false positives, %d missed: precision %.2f, recall %.2f", len(names), tp, fp, fn, precision, recall)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
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
