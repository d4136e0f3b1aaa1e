package cache_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/store"
)

// BenchmarkAnalyze is the analysis of a realistic run of 20,000 nodes with
// request bodies (graphtest.Realistic), after its graph is loaded: reading
// the stored requests' parts and the sweep. The whole-process bar (inspect
// cache ≤ 3× inspect graph at 100k nodes) is cmd/inspect's BenchmarkCache100k.
func BenchmarkAnalyze(b *testing.B) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(b.TempDir(), "runs.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	id, err := graphtest.RecordRealistic(ctx, db, 20_000)
	if err != nil {
		b.Fatal(err)
	}
	g, err := graph.Load(ctx, db, id)
	if err != nil {
		b.Fatal(err)
	}
	for _, brief := range []bool{false, true} {
		b.Run(map[bool]string{false: "full", true: "brief"}[brief], func(b *testing.B) {
			for b.Loop() {
				if _, err := cache.Analyze(ctx, g, db, &cache.Options{Brief: brief}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
