package kimicode

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
)

// FuzzRead reads any bytes as the main journal, one sub-agent's journal
// (which the main journal's appended task.started links to its call) and
// state.json: nothing panics, and a read without error gives one session
// with a trunk. Seeds: the real sample's journals and the hand-written
// swarm session.
func FuzzRead(f *testing.F) {
	dir := swarmSession(f)
	main, _ := os.ReadFile(filepath.Join(dir, "agents", "main", "wire.jsonl"))
	sub, _ := os.ReadFile(filepath.Join(dir, "agents", "agent-3", "wire.jsonl"))
	state, _ := os.ReadFile(filepath.Join(dir, "state.json"))
	f.Add(main, sub, state)
	if tr := importerstest.Find(); tr != "" {
		s := filepath.Join(tr, "kimi-code", "sample-main")
		m, _ := os.ReadFile(filepath.Join(s, "agents", "main", "wire.jsonl"))
		a, _ := os.ReadFile(filepath.Join(s, "agents", "agent-0", "wire.jsonl"))
		st, _ := os.ReadFile(filepath.Join(s, "state.json"))
		f.Add(m, a, st)
	}
	f.Add([]byte(`{"type":"context.append_loop_event","event":{"type":"tool.call","stepUuid":"s","toolCallId":"x","name":"AgentSwarm","args":{"items":[1,"a"],"resume_agent_ids":{"agent-0":"go"}}},"time":-1}`),
		[]byte(`{"type":"task.started","info":{"kind":"agent","agentId":"agent-0","parentToolCallId":"x"},"time":1e300}`),
		[]byte(`{"agents":{"agent-0":{"parentAgentId":"agent-0"},"main":{"parentAgentId":"agent-0"}}}`))
	f.Fuzz(func(t *testing.T, mainWire, subWire, stateJSON []byte) {
		if len(mainWire)+len(subWire)+len(stateJSON) > 1<<20 {
			return
		}
		d := filepath.Join(t.TempDir(), "s")
		link := "\n" + `{"type":"task.started","agentId":"main","info":{"taskId":"t","kind":"agent","agentId":"agent-3","parentToolCallId":"ag1"},"time":1}`
		for path, b := range map[string][]byte{
			"agents/main/wire.jsonl":    append(append([]byte{}, mainWire...), link...),
			"agents/agent-3/wire.jsonl": subWire,
			"state.json":                stateJSON,
		} {
			importerstest.Write(t, d, path, string(b))
		}
		(Format{}).Detect(d)
		for _, strict := range []bool{false, true} {
			ss, err := (Format{}).Read(context.Background(), d, importers.Options{Strict: strict})
			if err == nil && (len(ss) != 1 || ss[0].Trunk == nil) {
				t.Fatalf("no error and %d sessions", len(ss))
			}
			if err == nil {
				importerstest.Count(ss[0])
				importerstest.Detail(ss[0])
			}
		}
	})
}
