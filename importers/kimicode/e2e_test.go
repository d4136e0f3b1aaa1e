package kimicode

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/record"
)

// TestImport_Store writes the sessions into a store file and reads them
// back as graph and audit do (expectations written by hand).
func TestImport_Store(t *testing.T) {
	ctx := context.Background()
	db := importerstest.Store(t)
	t.Run("sample-main", func(t *testing.T) {
		g, mm, audit := importerstest.Shown(t, db, readOne(t, importerstest.Sample(t, "kimi-code/sample-main"), importers.Options{}))
		importerstest.Contains(t, "graph", mm, `n1["user: hi"]`, `n2["llm @main · answers · in 10 out 5`)
		importerstest.Contains(t, "audit", audit, "No topology mistakes found.")
		if g.Run.Options.ProjectDir != "/tmp/work" || g.Run.Status != record.StatusInterrupted {
			t.Errorf("run %+v", g.Run)
		}
	})
	t.Run("swarm", func(t *testing.T) {
		g, mm, audit := importerstest.Shown(t, db, readOne(t, swarmSession(t), importers.Options{}))
		importerstest.Contains(t, "graph", mm,
			`n3["fork (none context) review #35;1, review #35;2, review #35;3"]`,
			`n13["join review #35;1=ok, review #35;2=exhausted, review #35;3=cancelled"]`,
			`n17["fork (none context) nested"]`, // inside deep dive's branch
			`subgraph b5["branch nested`,
			`n31["tool Glob ** · interrupted"]`)
		// The session is cut short in its last turn, so the forks with a
		// stopped branch (the swarm's cancelled one, the never-finished
		// last one) are not audited; the nested one-branch fork is, and
		// a lone sub-agent for one job is Kimi's idiom, not a finding,
		// while it costs a small share of the run.
		importerstest.Contains(t, "audit", audit,
			"this run was interrupted", "its 2 open forks are not audited",
			"fork.one-branch: clear (2 forks with a single branch examined; 2 cost at most 25% of the run's tokens: one sub-agent for one job, Kimi Code's idiom")
		// The trunk's first request carries the recorded system prompt and tools.
		body, err := db.Request(ctx, g.Run.ID, 2)
		var req struct {
			Messages []struct{ Role, Content string }
			Tools    []struct{ Function struct{ Name string } }
		}
		if err != nil || json.Unmarshal(body, &req) != nil || len(req.Messages) != 2 || req.Messages[0].Content != "You are main." ||
			len(req.Tools) != 2 || req.Tools[1].Function.Name != "AgentSwarm" {
			t.Errorf("request n2 %s (%v)", body, err)
		}
	})
}
