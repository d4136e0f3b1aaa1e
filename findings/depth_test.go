package findings_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
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
	rep, err := findings.Audit(g, func(seq int64) ([]byte, error) { return db.Request(ctx, g.ID, seq) })
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
