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
	ctx := context.Background()
	t.Run("fixtures", func(t *testing.T) {
		for _, name := range allFixtures(t) {
			db := importerstest.Store(t)
			g, err := fixturetest.Record(ctx, db, filepath.Join("..", "fixtures", name), t.TempDir(), "run-"+name, t0)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			framesAgree(t, name, db, g)
		}
	})
	t.Run("realistic and separators", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "runs.db")
		db, err := store.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		g := recordBodies(t, db, separatorBodies)
		id, err := graphtest.RecordRealistic(ctx, db, 600)
		if err != nil {
			t.Fatal(err)
		}
		realistic, err := graph.Load(ctx, db, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []*graph.Run{g, realistic} {
			if n := framesAgree(t, r.ID, db, r); n < len(r.Nodes)/4 {
				t.Errorf("%s: Frame gave %d frames of %d nodes", r.ID, n, len(r.Nodes))
			}
		}
		db.Close()
		// An older file keeps the system prompt in the chain: the store
		// finds the frame there, so Frame gives none.
		systemInChain(t, path)
		if db, err = store.Open(ctx, path); err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, r := range []*graph.Run{g, realistic} {
			if n := framesAgree(t, "older "+r.ID, db, r); n != 0 {
				t.Errorf("older %s: Frame gave %d frames of requests whose system prompt is in the chain", r.ID, n)
			}
		}
	})
}
