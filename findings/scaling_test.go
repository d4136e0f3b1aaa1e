package findings_test

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// DESIGN §12: every rule linear (or n log n) in nodes. Runs of the realistic
// shape and one ever-growing conversation, recorded in real SQLite files at
// two sizes eight times apart, are loaded and audited (graph.Load + every
// rule, the request frames read from the store as `inspect audit` reads
// them); the larger may cost at most 20× the smaller: linear costs 8×,
// n log n about 10×, quadratic 64×. Not a timed assertion on absolute
// numbers: a ratio of the least CPU time (this process's, so other processes
// on a loaded 2-core machine count little) of five repetitions of each size,
// with a margin a loaded machine does not eat (a 2.5× bar per doubling
// failed under load). The figures per size are logged (-v).
func TestAudit_Scaling(t *testing.T) {
	if testing.Short() {
		t.Skip("records runs of up to 8,000 nodes")
	}
	shapes := []struct {
		name         string
		gen          func(int, func(*record.Node) error) error
		small, large int
	}{
		{"realistic", graphtest.Realistic, 1_000, 8_000},
		{"long conversation", graphtest.LongConversation, 500, 4_000},
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			small := auditTime(t, sh.gen, sh.small)
			large := auditTime(t, sh.gen, sh.large)
			ratio := float64(large) / float64(small)
			t.Logf("%d nodes: %s; %d nodes: %s (%.1f×)", sh.small, small, sh.large, large, ratio)
			if ratio > 20 {
				t.Errorf("%d → %d nodes: audit %s → %s (%.1f×), more than 20× for eight times the nodes: something is quadratic", sh.small, sh.large, small, large, ratio)
			}
		})
	}
}

// auditTime records gen(n) into a fresh file and returns the least CPU
// time of five loads and audits of it.
func auditTime(t *testing.T, gen func(int, func(*record.Node) error) error, n int) time.Duration {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), fmt.Sprintf("run%d.db", n)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rec, err := db.CreateRun(ctx, graphtest.RealisticRun())
	if err != nil {
		t.Fatal(err)
	}
	if err := gen(n, func(nd *record.Node) error { return rec.AddNode(ctx, nd) }); err != nil {
		t.Fatal(err)
	}
	if err := rec.Finish(ctx, record.StatusOK, "", graphtest.Start.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	id := rec.RunID()
	best := time.Duration(1<<63 - 1)
	for range 5 {
		t0 := cpuTime(t)
		g, err := graph.Load(ctx, db, id)
		if err != nil {
			t.Fatal(err)
		}
		cfg := &findings.Config{
			Rules:    rules.All,
			Requests: func(seq int64) ([]byte, error) { return db.Request(ctx, id, seq) },
			Frames:   func(seq int64) ([]byte, error) { return db.RequestFrame(ctx, id, seq) },
		}
		if _, err := cfg.Audit(g); err != nil {
			t.Fatal(err)
		}
		best = min(best, cpuTime(t)-t0)
	}
	return best
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
