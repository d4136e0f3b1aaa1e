package report_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/cache/report"
	"github.com/inspect-dev/inspect/internal/mdcheck"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
	"github.com/inspect-dev/inspect/store"
)

// TestWriteMarkdown_HostileAgent checks an agent name made of Markdown
// (emphasis, code, HTML, table pipes, a link, a line break…) reads as
// itself everywhere the prompt-cache report names it — the calls, where
// reuse broke, the agents, one call in full, inspect show's section — and
// adds no structure.
func TestWriteMarkdown_HostileAgent(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	g, err := runtimetest.RecordFixture(ctx, db, filepath.Join("..", "..", "fixtures", "handoff-chain"), t.TempDir(), "run-h", t0)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := cache.Analyze(ctx, g, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	// every agent of the run named agent, in the graph and the groups
	name := func(agent string) {
		for _, n := range g.Nodes {
			n.Agent = agent
		}
		for i := range rep.Agents {
			rep.Agents[i].Name = agent
		}
	}
	last := rep.Calls[len(rep.Calls)-1].Node.Seq
	write := func(agent string) string {
		name(agent)
		var b bytes.Buffer
		for _, err := range []error{report.WriteMarkdown(&b, rep, 0), report.WriteMarkdown(&b, rep, last), report.ShowMarkdown(&b, rep, last)} {
			if err != nil {
				t.Fatal(err)
			}
		}
		return b.String()
	}
	mdcheck.Same(t, write(mdcheck.Benign), write(mdcheck.Hostile))
}
