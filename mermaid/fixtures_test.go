package mermaid

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/inspect-dev/inspect/runtime/runtimetest"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/cache/report"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graphjson"
	"github.com/inspect-dev/inspect/store"
)

// namedRun is a run with the name of its goldens.
type namedRun struct {
	name  string
	g     *graph.Run
	cache *cache.Report // its prompt-cache analysis, for the labels
}

// formats are the fixture's renderings with its cache analysis.
func (r namedRun) formats() []format {
	c := &Config{Notes: report.Notes(r.cache)}
	return []format{{".mmd", c.Fprint}, {".dot", c.FprintDOT}, {".json", graphjson.Fprint}}
}

// fixtures records every scripted project under ../fixtures once per test
// binary (virtual time, a fixed clock and run id, so goldens are exact).
var fixtures struct {
	once sync.Once
	runs []namedRun
	err  error
}

func fixtureRuns(t testing.TB) []namedRun {
	t.Helper()
	fixtures.once.Do(func() { fixtures.runs, fixtures.err = recordFixtures() })
	if fixtures.err != nil {
		t.Fatal(fixtures.err)
	}
	if len(fixtures.runs) == 0 {
		t.Skip("no fixtures under ../fixtures")
	}
	return fixtures.runs
}

func recordFixtures() ([]namedRun, error) {
	root := filepath.Join("..", "fixtures")
	entries, err := os.ReadDir(root)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "mermaid-fixtures-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(tmp, "runs.db"))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var names []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(root, e.Name(), "script.yaml")); e.IsDir() && err == nil {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var out []namedRun
	for _, name := range names {
		g, err := runtimetest.RecordFixture(ctx, db, filepath.Join(root, name), tmp, "run-"+name, t0)
		if err != nil {
			return nil, err
		}
		rep, err := cache.Analyze(ctx, g, db, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, namedRun{name, g, rep})
	}
	return out, nil
}

// TestGolden_Fixtures keeps a Mermaid, DOT and JSON golden of every fixture
// under testdata/fixtures/ (go test ./mermaid -update rewrites them). The
// JSON is package graphjson's: its goldens are kept here, beside the
// drawings of the same runs, so the fixtures are recorded once.
func TestGolden_Fixtures(t *testing.T) {
	for _, r := range fixtureRuns(t) {
		for _, f := range r.formats() {
			t.Run(r.name+f.ext, func(t *testing.T) {
				got := render(t, f.print, r.g)
				if again := render(t, f.print, r.g); string(got) != string(again) {
					t.Fatalf("two renderings differ")
				}
				golden(t, filepath.Join("fixtures", r.name+f.ext), got)
			})
		}
	}
}
