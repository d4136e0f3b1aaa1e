package findings_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/stack"
	"github.com/inspect-dev/inspect/store"
)

// oneLane is rules with every rule in the default lane: the audit runs
// them one after another, sharing every fact.
func oneLane(rules []*findings.Rule) []*findings.Rule {
	out := make([]*findings.Rule, len(rules))
	for i, r := range rules {
		c := *r
		c.Lane = ""
		out[i] = &c
	}
	return out
}

// The rules of different lanes run at once (Rule.Lane), each lane with its
// own facts: the report is the one of every rule run one after another,
// on every fixture of the corpus and on a realistic run whose requests are
// read from the store. (go test -race ./findings -run Lanes checks that
// the lanes share nothing they write.)
func TestAudit_LanesSameReport(t *testing.T) {
	lanes := map[string]bool{}
	for _, r := range rules.All {
		lanes[r.Lane] = true
	}
	if len(lanes) < 2 {
		t.Fatalf("the rules run in %d lane: nothing runs at once", len(lanes))
	}
	same := func(t *testing.T, what string, cfg findings.Config, g *graph.Run) {
		t.Helper()
		cfg.Rules = rules.All
		at, err := cfg.Audit(g)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Rules = oneLane(rules.All)
		seq, err := cfg.Audit(g)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(at.Findings, seq.Findings) || !reflect.DeepEqual(at.Checks, seq.Checks) || !reflect.DeepEqual(at.Grades, seq.Grades) {
			t.Errorf("%s: the rules in lanes gave\n%s\none after another\n%s", what, dump(at), dump(seq))
		}
	}
	for _, name := range corpus(t) {
		r := recordFixture(t, name)
		same(t, name, findings.Config{Requests: r.requests, Cache: func() (*cache.Report, error) { return r.Cache, nil },
			Profile: stack.For(r.Run.Source)}, r.Run)
	}
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "realistic.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	id, err := graphtest.RecordRealistic(ctx, db, 3000)
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Load(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "realistic", findings.Config{
		Requests: func(seq int64) ([]byte, error) { return db.Request(ctx, id, seq) },
		Frames:   func(seq int64) ([]byte, error) { return db.RequestFrame(ctx, id, seq) },
		Cache:    func() (*cache.Report, error) { return cache.Analyze(ctx, g, db, nil) },
	}, g)
}
