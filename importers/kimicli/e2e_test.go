package kimicli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importtest"
	"github.com/inspect-dev/inspect/record"
)

// TestImport_Store writes the sessions into a store file and reads them
// back as graph and audit do (expectations written by hand): the real
// cut-short fan-out is a fork whose branches never returned; the
// hand-written one shows its fork and join, the exhausted and the
// never-finished branch as failures, and requests rebuilt with the
// system prompt.
func TestImport_Store(t *testing.T) {
	t.Run("with-subagent-collapsed", func(t *testing.T) {
		st := importtest.Store(t, readOne(t, importtest.Sample(t, "kimi-cli/with-subagent-collapsed"), importers.Options{}))
		if st.Graph.Run.Status != record.StatusInterrupted || st.Graph.Run.Source.Format != Name {
			t.Errorf("run %+v", st.Graph.Run)
		}
		importtest.Has(t, "graph", st.Mermaid, "agents main, coder", `n3["fork (none context) ac1f74988, Sub agent 2#58; Shell 命令"]`,
			`subgraph b1["branch ac1f74988 @coder · interrupted`, "forked, no join")
		importtest.Has(t, "audit", st.Audit, "ERROR branch.failed", `branch "ac1f74988" (coder) of the fork at n3 ended interrupted`)
		// The trunk's only request: the system prompt and the user's turn.
		var req struct {
			Messages []struct{ Role, Content string }
		}
		if err := json.Unmarshal(st.Requests[2], &req); err != nil || len(req.Messages) != 2 ||
			req.Messages[0].Role != "system" || !strings.HasPrefix(req.Messages[1].Content, "你启动三个 sub agent") {
			t.Errorf("request n2 %s (%v)", st.Requests[2], err)
		}
		if lack := st.Graph.Run.RequestsLack(); len(lack) != 2 || !strings.Contains(lack[0], "tool definitions") {
			t.Errorf("requests lack %q", lack)
		}
	})
	t.Run("fanout", func(t *testing.T) {
		st := importtest.Store(t, readOne(t, fanoutSession(t), importers.Options{}))
		importtest.Has(t, "graph", st.Mermaid,
			`n2["llm @main · calls Agent x3 · in 11902 out 240`,
			`n3["fork (none context) aaaa1111, bbbb2222, cccc3333"]`,
			`n5["tool ReadFile auth.py"]`,
			`n15["join aaaa1111=ok, bbbb2222=exhausted, cccc3333=ok"]`,
			`subgraph b7["branch ffff6666 · interrupted`,
			"tokens in 73702 · out 810 · cached 59740 (reported)")
		importtest.Has(t, "audit", st.Audit,
			`branch "bbbb2222" (explore) of the fork at n3 ended exhausted: Max steps 3 reached`,
			`branch "ffff6666" (explore) of the fork at n34 ended interrupted`,
			"fork.overlap: clear")
		for seq, b := range st.Requests {
			if len(b) == 0 {
				t.Errorf("n%d has no reconstructed request", seq)
			}
		}
	})
}
