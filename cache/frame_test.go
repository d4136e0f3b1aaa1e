package cache_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/internal/fixturetest"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// framesAgree checks that Requests.Frame gives, for every llm node of g,
// the bytes the store's RequestFrame gives (brief and full reads), and
// returns how many it gave; a node without a request has none.
func framesAgree(t *testing.T, what string, db *store.DB, g *graph.Run) int {
	t.Helper()
	ctx := context.Background()
	given := 0
	for _, o := range []*cache.Options{{Brief: true}, nil} {
		reqs, err := cache.Read(ctx, db, g.ID, nil, o)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		given = 0
		for _, n := range g.Nodes {
			if n.Kind != record.KindLLM {
				continue
			}
			want, werr := db.RequestFrame(ctx, g.ID, n.Seq)
			got, ok := reqs.Frame(n.Seq)
			switch {
			case errors.Is(werr, store.ErrNoRequest):
				if ok {
					t.Errorf("%s: n%d has no request, Frame gave %q", what, n.Seq, got)
				}
			case werr != nil:
				t.Fatalf("%s: n%d: %v", what, n.Seq, werr)
			case ok && !bytes.Equal(got, want):
				t.Errorf("%s: n%d: Frame %q, the store's frame %q", what, n.Seq, got, want)
			case ok:
				given++
			}
		}
	}
	return given
}

func TestFrame_TheStoresFrame(t *testing.T) {
	t.Run("fixtures", func(t *testing.T) {
		eachFixture(t, func(name string, db *store.DB, g *graph.Run) { framesAgree(t, name, db, g) })
	})
	t.Run("realistic and separators", func(t *testing.T) {
		path, db, g, realistic := separatorsAndRealistic(t)
		for _, r := range []*graph.Run{g, realistic} {
			if n := framesAgree(t, r.ID, db, r); n < len(r.Nodes)/4 {
				t.Errorf("%s: Frame gave %d frames of %d nodes", r.ID, n, len(r.Nodes))
			}
		}
		// An older file keeps the system prompt in the chain: the store
		// finds the frame there, so Frame gives none.
		db = asOlderFile(t, db, path)
		for _, r := range []*graph.Run{g, realistic} {
			if n := framesAgree(t, "older "+r.ID, db, r); n != 0 {
				t.Errorf("older %s: Frame gave %d frames of requests whose system prompt is in the chain", r.ID, n)
			}
		}
	})
}

// separatorsAndRealistic records, in a new file at path, the run of
// separatorBodies and a realistic run of 600 nodes, and loads both.
func separatorsAndRealistic(t *testing.T) (path string, db *store.DB, separators, realistic *graph.Run) {
	t.Helper()
	ctx := context.Background()
	path = filepath.Join(t.TempDir(), "runs.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	separators = recordBodies(t, db, separatorBodies)
	id, err := graphtest.RecordRealistic(ctx, db, 600)
	if err != nil {
		t.Fatal(err)
	}
	if realistic, err = graph.Load(ctx, db, id); err != nil {
		t.Fatal(err)
	}
	return path, db, separators, realistic
}

// asOlderFile closes db, rewrites its file at path as an older file whose
// requests keep the system prompt in the chain (systemInChain) and opens
// it again, to be closed at the test's end.
func asOlderFile(t *testing.T, db *store.DB, path string) *store.DB {
	t.Helper()
	db.Close()
	systemInChain(t, path)
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// eachFixture records every fixture (allFixtures), each in a store of its
// own, and calls fn with it.
func eachFixture(t *testing.T, fn func(name string, db *store.DB, g *graph.Run)) {
	t.Helper()
	for _, name := range allFixtures(t) {
		db := importerstest.Store(t)
		g, err := fixturetest.Record(context.Background(), db, filepath.Join("..", "fixtures", name), t.TempDir(), "run-"+name, t0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fn(name, db, g)
	}
}
