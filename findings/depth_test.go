package findings_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
	"github.com/inspect-dev/inspect/store"
)

// TestFanout_DepthCapFromRunOption: a run option lowered maxForkDepth below
// agents.yaml's; the audit must read the depth that applied (the run's
// recorded options), so the serial reads in a branch are a depth-cap
// finding, not "add fork: to researcher", which already has it.
func TestFanout_DepthCapFromRunOption(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dst := filepath.Join(t.TempDir(), "p")
	if err := runtimetest.CopyDir(filepath.Join("..", "fixtures", "audit-fanout-missed-in-branch"), dst); err != nil {
		t.Fatal(err)
	}
	res, err := runtime.Run(ctx, runtime.Config{Project: dst, Script: filepath.Join(dst, "script.yaml"), DB: db, RunID: "run-depth", MaxForkDepth: 1})
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Load(ctx, db, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := (&findings.Config{Rules: rules.All, Requests: func(seq int64) ([]byte, error) { return db.Request(ctx, g.ID, seq) }}).Audit(g)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Rule != "fanout.missed.nofork" {
		t.Fatalf("findings = %s, want one fanout.missed.nofork", dump(rep))
	}
	f := rep.Findings[0]
	if !strings.Contains(f.Fix.Text, "maxForkDepth") || strings.Contains(f.Fix.Text, "Add fork:") {
		t.Errorf("fix = %q, want the depth cap raised", f.Fix.Text)
	}
	for _, c := range f.Causes {
		if c.Check == "fork in tools" && !strings.Contains(c.Detail, "maxForkDepth 1") {
			t.Errorf("cause = %q, want the depth that applied (maxForkDepth 1)", c.Detail)
		}
	}
}

// memoryRun keeps the run and nodes the runtime hands its Observer: the
// run as it is in memory, before any database round trip.
type memoryRun struct {
	mu    sync.Mutex
	run   *record.Run
	nodes []*record.Node
}

func (m *memoryRun) Start(_ context.Context, r *record.Run) { m.run = r }
func (m *memoryRun) Node(_ context.Context, n *record.Node) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := *n
	m.nodes = append(m.nodes, &c)
}
func (m *memoryRun) Finish(_ context.Context, status record.Status, errMsg string, ended time.Time) {
	m.run.Status, m.run.Error, m.run.Ended = status, errMsg, ended
}

// TestFanout_DepthCapFromRunOption_InMemory: the same run as
// TestFanout_DepthCapFromRunOption, audited as the runtime holds it in
// memory (the run its Observer saw, never read back from the database).
// The depth that applied must survive that too: an option recorded as the
// runtime wrote it reads as the one read back from the store.
func TestFanout_DepthCapFromRunOption_InMemory(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dst := filepath.Join(t.TempDir(), "p")
	if err := runtimetest.CopyDir(filepath.Join("..", "fixtures", "audit-fanout-missed-in-branch"), dst); err != nil {
		t.Fatal(err)
	}
	mem := &memoryRun{}
	res, err := runtime.Run(ctx, runtime.Config{Project: dst, Script: filepath.Join(dst, "script.yaml"), DB: db, RunID: "run-depth", MaxForkDepth: 1, Observer: mem})
	if err != nil {
		t.Fatal(err)
	}
	mem.run.ID = res.RunID
	g, err := graph.Build(mem.run, mem.nodes)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := (&findings.Config{Rules: rules.All, Requests: func(seq int64) ([]byte, error) { return db.Request(ctx, g.ID, seq) }}).Audit(g)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Rule != "fanout.missed.nofork" {
		t.Fatalf("findings = %s, want one fanout.missed.nofork", dump(rep))
	}
	if f := rep.Findings[0]; !strings.Contains(f.Fix.Text, "maxForkDepth") || strings.Contains(f.Fix.Text, "Add fork:") {
		t.Errorf("fix = %q, want the depth cap raised (maxForkDepth 1 applied to this run)", f.Fix.Text)
	}
}
