package kimicli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/record"
)

// TestImport_Store writes the sessions into a store file and reads them
// back as graph and audit do (expectations written by hand): the real
// cut-short fan-out is a fork whose branches never returned, with a
// request rebuilt from the system prompt and the user's turn; the
// hand-written one shows its fork and join, the exhausted and the
// never-finished branch as failures, and every model call a request.
func TestImport_Store(t *testing.T) {
	ctx := context.Background()
	db := importerstest.Store(t)
	t.Run("with-subagent-collapsed", func(t *testing.T) {
		g, mm, audit := importerstest.Shown(t, db, readOne(t, importerstest.Sample(t, "kimi-cli/with-subagent-collapsed"), importers.Options{}))
		if g.Run.Status != record.StatusInterrupted || g.Run.Source.Format != Name {
			t.Errorf("run %+v", g.Run)
		}
		importerstest.Contains(t, "graph", mm, "agents main, coder", `n3["fork (none context) Sub agent 1#58; 创建文件, Sub agent 2#58; Shell 命令"]`,
			`subgraph b1["branch Sub agent 1#58; 创建文件 @coder · interrupted`, "forked, no join")
		// A session cut short: its open fork is not a prompt mistake.
		importerstest.Contains(t, "audit", audit, "this run was interrupted", "branch.failed: not applicable (run interrupted: 1 open fork)")
		body, err := db.Request(ctx, g.Run.ID, 2)
		var req struct {
			Messages []struct{ Role, Content string }
		}
		if err != nil || json.Unmarshal(body, &req) != nil || len(req.Messages) != 2 ||
			req.Messages[0].Role != "system" || !strings.HasPrefix(req.Messages[1].Content, "你启动三个 sub agent") {
			t.Errorf("request n2 %s (%v)", body, err)
		}
		if lack := g.Run.Options.RequestsLack; len(lack) != 2 || !strings.Contains(lack[0], "tool definitions") {
			t.Errorf("requests lack %q", lack)
		}
	})
	t.Run("fanout", func(t *testing.T) {
		g, mm, audit := importerstest.Shown(t, db, readOne(t, fanoutSession(t), importers.Options{}))
		importerstest.Contains(t, "graph", mm,
			`n2["llm @main · calls Agent x3 · in 11902 out 240`,
			`n3["fork (none context) auth, billing, search"]`,
			`n5["tool ReadFile auth.py"]`,
			`n15["join auth=ok, billing=exhausted, search=ok"]`,
			`subgraph b7["branch hang · interrupted`,
			"tokens in 73702 · out 810 · cached 59740 (reported)")
		importerstest.Contains(t, "audit", audit,
			`branch "billing" (explore) of the fork at n3 ended exhausted: Max steps 3 reached`,
			"1 error, 1 warning", // the open fork of the cut-short last turn is not audited
			// the branch that ran out of steps spent two of its three on Greps Kimi would run at once
			"2 Grep calls in branch billing ran one after another, one per response (invoice, refund)",
			// a lone sub-agent for one job is Kimi's idiom: not a finding when it costs a small share of the run
			"fork.one-branch: clear (3 forks with a single branch examined; 3 cost at most 25% of the run's tokens: one sub-agent for one job, Kimi CLI's idiom",
			"fork.overlap: clear")
		for _, n := range g.Nodes {
			if n.LLM == nil {
				continue
			}
			if body, err := db.Request(ctx, g.Run.ID, n.Seq); err != nil || len(body) == 0 {
				t.Errorf("n%d has no reconstructed request (%v)", n.Seq, err)
			}
		}
	})
}
