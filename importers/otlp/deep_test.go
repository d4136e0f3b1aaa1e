package otlp_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/importers/otlp"
	"github.com/inspect-dev/inspect/store"
)

// TestImport_DeepTrace: a trace of agent spans nested 50,000 deep (13 MB)
// made a 15 GB database, each node's branch path repeating its ancestors
// (issue 23, item 2). An import records MaxDepth levels and the rest flat,
// with a note; at 2,500 and 5,000 levels the database file and what the
// import allocates grow linearly (twice the spans: about twice, not four
// times, the bytes).
func TestImport_DeepTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("imports traces of 5,000 and 10,000 spans")
	}
	ctx := context.Background()
	measure := func(depth int) (file, alloc int64) {
		dir := t.TempDir()
		path := filepath.Join(dir, "deep.otlp.json")
		if err := os.WriteFile(path, []byte(importerstest.DeepTrace(depth)), 0o644); err != nil {
			t.Fatal(err)
		}
		dbPath := filepath.Join(dir, "runs.db")
		db, err := store.Open(ctx, dbPath)
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := importers.Import(ctx, db, otlp.Format{}, path, importers.Options{})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		g, err := graph.Load(ctx, db, res[0].RunID)
		if err != nil {
			t.Fatal(err)
		}
		deepest := 0
		for _, n := range g.Nodes {
			deepest = max(deepest, n.Depth)
		}
		if deepest != importers.MaxDepth || len(g.Conversations) != importers.MaxDepth+1 {
			t.Errorf("depth %d: deepest node at depth %d in %d conversations; want %d in %d", depth, deepest, len(g.Conversations), importers.MaxDepth, importers.MaxDepth+1)
		}
		flat := 0
		for _, n := range g.Nodes {
			if n.Tool != nil && strings.Contains(n.Error, "recorded flat") {
				flat++
			}
		}
		if want := depth - 1 - importers.MaxDepth; flat != want {
			t.Errorf("depth %d: %d delegations note that they were recorded flat, want %d", depth, flat, want)
		}
		var note string
		for _, p := range res[0].Report.Problems {
			note += p.Err
		}
		if want := fmt.Sprintf("%d sub-agents nested deeper than %d levels recorded flat", depth-1-importers.MaxDepth, importers.MaxDepth); !strings.Contains(note, want) {
			t.Errorf("depth %d: the import's report says %q; want %q", depth, note, want)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(dbPath)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size(), int64(after.TotalAlloc - before.TotalAlloc)
	}
	file1, alloc1 := measure(2500)
	file2, alloc2 := measure(5000)
	t.Logf("database %d, %d bytes; import allocated %d, %d bytes", file1, file2, alloc1, alloc2)
	const most = 2.6
	if r := float64(file2) / float64(file1); r > most || file2 > 32<<20 {
		t.Errorf("database file: %d bytes at depth 2,500, %d at 5,000 (×%.1f); want at most ×%.1f and 32 MiB", file1, file2, r, most)
	}
	if r := float64(alloc2) / float64(alloc1); r > most {
		t.Errorf("the import allocated %d bytes at depth 2,500, %d at 5,000 (×%.1f); want at most ×%.1f", alloc1, alloc2, r, most)
	}
}
