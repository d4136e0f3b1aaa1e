package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/inspect-dev/inspect/graph/graphtest"
)

// TestDeepFork_LinearInNodes: an OTLP trace of forks nested 50,000 deep
// made a 15 GB database and 23 GB of memory in graph, timeline, cache and
// show, because every node's branch path repeated all its ancestors (issue
// 23, item 2). Runs with forks nested 1,500 and 3,000 deep (a "leaf" and a
// "deep" branch at every level) are recorded as our writers address them
// (record.BranchPath); doubling the depth doubles the nodes, and must
// about double — not quadruple — the database file and the memory each
// reader allocates and the bytes it prints.
func TestDeepFork_LinearInNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("records runs of 9,000 and 18,000 nodes")
	}
	ctx := context.Background()
	commands := [][]string{
		{"graph"},
		{"graph", "-o", "OUT/g.json"},
		{"graph", "-o", "OUT/g.dot"},
		{"timeline"},
		{"cache"},
		{"cache", "--format", "json"},
		{"audit"},
		{"audit", "--format", "json"},
		{"show", "LAST"},
		{"runs"},
		{"export", "--format", "otlp", "-o", "OUT/run.otlp.jsonl"},
		{"report", "-o", "OUT/report.html"},
	}
	type cost struct{ file, alloc, out int64 }
	measure := func(depth int) (int64, []cost) {
		f, out, errOut := testFactory(t)
		db, err := f.Store(ctx)
		if err != nil {
			t.Fatal(err)
		}
		nodes := graphtest.DeepFork(depth)
		if _, err := graphtest.Record(ctx, db, nodes); err != nil {
			t.Fatal(err)
		}
		f.Close()
		fi, err := os.Stat(f.DBPath)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		var costs []cost
		for _, args := range commands {
			args = append([]string(nil), args...)
			for i, a := range args {
				switch {
				case a == "LAST":
					// the bottom's answer: the deepest conversation
					args[i] = fmt.Sprintf("n%d", 4*depth+3)
				case len(a) > 4 && a[:4] == "OUT/":
					args[i] = filepath.Join(dir, a[4:])
				}
			}
			out.Reset()
			errOut.Reset()
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			code := run(ctx, f, append(args, "--db", f.DBPath))
			runtime.ReadMemStats(&after)
			if code != ExitOK && code != ExitFindings {
				t.Fatalf("depth %d: inspect %v: exit %d: %s", depth, args, code, errOut)
			}
			printed := int64(out.Len())
			if n := len(args); n >= 2 && args[n-2] == "-o" {
				fi, err := os.Stat(args[n-1])
				if err != nil {
					t.Fatal(err)
				}
				printed = fi.Size()
			}
			costs = append(costs, cost{alloc: int64(after.TotalAlloc - before.TotalAlloc), out: printed})
		}
		f.Close()
		return fi.Size(), costs
	}
	const shallow, deep = 1500, 3000
	file1, c1 := measure(shallow)
	file2, c2 := measure(deep)
	// Twice the nodes: a linear cost doubles; a quadratic one quadruples.
	const most = 2.6
	ratio := func(a, b int64) float64 { return float64(b) / float64(max(a, 1)) }
	t.Logf("file ×%.2f", ratio(file1, file2))
	if r := ratio(file1, file2); r > most {
		t.Errorf("database file: %d bytes at depth %d, %d at %d (×%.1f); want at most ×%.1f", file1, shallow, file2, deep, r, most)
	}
	for i, args := range commands {
		t.Logf("inspect %v: alloc ×%.2f, output ×%.2f", args, ratio(c1[i].alloc, c2[i].alloc), ratio(c1[i].out, c2[i].out))
		if r := ratio(c1[i].alloc, c2[i].alloc); r > most {
			t.Errorf("inspect %v allocated %d bytes at depth %d, %d at %d (×%.1f); want at most ×%.1f", args, c1[i].alloc, shallow, c2[i].alloc, deep, r, most)
		}
		if r := ratio(c1[i].out, c2[i].out); r > most {
			t.Errorf("inspect %v wrote %d bytes at depth %d, %d at %d (×%.1f); want at most ×%.1f", args, c1[i].out, shallow, c2[i].out, deep, r, most)
		}
	}
}
