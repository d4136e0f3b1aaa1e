package cache

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
	"github.com/inspect-dev/inspect/store"
)

// Read's sweep, from what the requests' rows say of their nodes, has the
// inputs the graph's nodes give, so AnalyzeRequests keeps it: on a
// realistic run (forks, failures, hand-offs) and on a fixture whose run
// was interrupted.
func TestSweep_ReadAheadOfTheGraph(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	realistic, err := graphtest.RecordRealistic(ctx, db, 2000)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	fixture, err := runtimetest.RecordFixture(ctx, db, filepath.Join("..", "fixtures", "interrupted-fork"), t.TempDir(), "run-interrupted", t0)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{realistic, fixture.ID} {
		g, err := graph.Load(ctx, db, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []*Options{nil, {Brief: true, Lifetime: time.Hour}} {
			reqs, err := Read(ctx, db, id, nil, o)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := AnalyzeRequests(ctx, g, reqs, o)
			if err != nil {
				t.Fatal(err)
			}
			a := &analysis{Requests: reqs, g: g, o: o}
			in, _ := a.sweepInputs(rep.Calls)
			if len(in) < 2 || !slices.EqualFunc(in, reqs.sweptIn, sweepIn.same) {
				t.Fatalf("%s: the graph gives %d sweep inputs unlike the %d of the rows", id, len(in), len(reqs.sweptIn))
			}
			if got := sweepOf(reqs.tree, in, o.lifetime()); !slices.Equal(got, reqs.swept) {
				t.Fatalf("%s: swept again, the prefixes differ", id)
			}
		}
	}
}
