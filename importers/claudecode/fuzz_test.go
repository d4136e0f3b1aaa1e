package claudecode_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/claudecode"
	"github.com/inspect-dev/inspect/importers/importerstest"
)

// FuzzRead reads any bytes as a session file, as one sub-agent's file
// (subagents/agent-c1.jsonl) and as its .meta.json: nothing panics, and a
// read without error gives sessions each with a trunk, which the importers'
// test helpers walk whole. Seeds: fixtures of testdata/sessions/claude-code
// (a Task and its sub-agent, parallel reads, a redacted series) and
// hand-made lines that link the sub-agent in each way the importer knows
// (meta.json, agent_progress, toolUseResult.agentId).
func FuzzRead(f *testing.F) {
	root := filepath.Join("..", "..", "testdata", "sessions", "claude-code")
	for _, name := range []string{"one-branch-costly", "join-read-before-edit", "parallel-one-response", "parallel-redacted"} {
		main, err := os.ReadFile(filepath.Join(root, name, "session.jsonl"))
		if err != nil {
			f.Fatal(err)
		}
		subs, _ := filepath.Glob(filepath.Join(root, name, "session", "subagents", "agent-*.jsonl"))
		var sub []byte
		if len(subs) > 0 {
			sub, _ = os.ReadFile(subs[0])
		}
		f.Add(main, sub, []byte(`{"agentType":"general-purpose","description":"d","toolUseId":"t1"}`))
	}
	f.Add([]byte(`{"type":"assistant","uuid":"u1","sessionId":"s","timestamp":"2026-03-01T10:00:00Z","requestId":"r","message":{"id":"m","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Task","input":{"subagent_type":"Explore","prompt":"p","run_in_background":true}}],"usage":{"input_tokens":-5,"output_tokens":1e40}}}`+"\n"+
		`{"type":"progress","uuid":"u2","parentToolUseID":"t1","timestamp":"x","data":{"type":"agent_progress","agentId":"c1","message":{"type":"assistant","message":{"content":"oops"}}}}`+"\n"+
		`{"type":"user","uuid":"u3","timestamp":"2026-03-01T09:00:00Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"done"}]}]},"toolUseResult":{"agentId":"c1","totalDurationMs":-1,"usage":{"input_tokens":"x"}}}`),
		[]byte(`{"type":"user","isSidechain":true,"agentId":"c1","message":{"role":"user","content":"go"}}`+"\n"+`{"type":"assistant","isSidechain":true,"agentId":"c2","message":{"content":[{"type":"tool_use","id":"t1","name":"Task","input":{}}]}}`),
		[]byte(`{"agentType":7,"toolUseId":"t1"}`))
	f.Fuzz(func(t *testing.T, mainLines, subLines, meta []byte) {
		if len(mainLines)+len(subLines)+len(meta) > 1<<20 {
			return
		}
		dir := t.TempDir()
		importerstest.Write(t, dir, "s.jsonl", string(mainLines))
		importerstest.Write(t, dir, "s/subagents/agent-c1.jsonl", string(subLines))
		importerstest.Write(t, dir, "s/subagents/agent-c1.meta.json", string(meta))
		path := filepath.Join(dir, "s.jsonl")
		(claudecode.Format{}).Detect(path)
		for _, strict := range []bool{false, true} {
			ss, err := (claudecode.Format{}).Read(context.Background(), path, importers.Options{Strict: strict})
			if err == nil {
				importerstest.Walk(t, ss)
			}
		}
	})
}
