package kimicode

import (
	"encoding/json"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importtest"
	"github.com/inspect-dev/inspect/record"
)

// TestImport_Store writes the sessions into a store file and reads them
// back as graph and audit do (expectations written by hand).
func TestImport_Store(t *testing.T) {
	t.Run("sample-main", func(t *testing.T) {
		st := importtest.Store(t, readOne(t, importtest.Sample(t, "kimi-code/sample-main"), importers.Options{}))
		importtest.Has(t, "graph", st.Mermaid, `n1["user: hi"]`, `n2["llm @main · answers · in 10 out 5`)
		importtest.Has(t, "audit", st.Audit, "No topology mistakes found.")
		if st.Graph.Run.ProjectDir() != "/tmp/work" || st.Graph.Run.Status != record.StatusInterrupted {
			t.Errorf("run %+v", st.Graph.Run)
		}
	})
	t.Run("swarm", func(t *testing.T) {
		st := importtest.Store(t, readOne(t, swarmSession(t), importers.Options{}))
		importtest.Has(t, "graph", st.Mermaid,
			`n3["fork (none context) agent-0, agent-1, agent-2"]`,
			`n13["join agent-0=ok, agent-1=exhausted, agent-2=cancelled"]`,
			`n17["fork (none context) agent-4"]`, // inside agent-3's branch
			`subgraph b5["branch agent-4`,
			`n31["tool Glob ** · interrupted"]`)
		importtest.Has(t, "audit", st.Audit,
			`branch "agent-1" (explore) of the fork at n3 ended exhausted: Turn exceeded maxSteps=3.`,
			`branch "agent-2" (explore) of the fork at n3 ended cancelled`,
			`branch "agent-5" (explore) of the fork at n29 ended interrupted`)
		// The trunk's first request carries the recorded system prompt and tools.
		var req struct {
			Messages []struct{ Role, Content string }
			Tools    []struct{ Function struct{ Name string } }
		}
		if err := json.Unmarshal(st.Requests[2], &req); err != nil || len(req.Messages) != 2 || req.Messages[0].Content != "You are main." ||
			len(req.Tools) != 2 || req.Tools[1].Function.Name != "AgentSwarm" {
			t.Errorf("request n2 %s (%v)", st.Requests[2], err)
		}
	})
}
