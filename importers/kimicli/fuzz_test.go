package kimicli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
)

// FuzzRead reads any bytes as a session's wire.jsonl beside any bytes as
// one sub-agent's journal (named by an Agent call's result, so both are
// read): nothing panics, and a read without error gives one session with
// a trunk. Seeds: the real samples' journals and the hand-written session.
func FuzzRead(f *testing.F) {
	var seeds [][]byte
	if tr := importerstest.Find(); tr != "" {
		for _, name := range []string{"with-tool-calls", "with-subagent-collapsed"} {
			if b, err := os.ReadFile(filepath.Join(tr, "kimi-cli", name, "wire.jsonl")); err == nil {
				seeds = append(seeds, b)
			}
		}
	}
	dir := fanoutSession(f)
	trunk, _ := os.ReadFile(filepath.Join(dir, "wire.jsonl"))
	sub, _ := os.ReadFile(filepath.Join(dir, "subagents", "aaaa1111", "wire.jsonl"))
	seeds = append(seeds, trunk)
	for _, s := range seeds {
		f.Add(s, sub)
	}
	f.Add([]byte(`{"timestamp": 1, "message": {"type": "ToolResult", "payload": {"tool_call_id": "x", "return_value": {"output": [1, {"type": "text"}]}}}}`), []byte("{"))
	f.Add([]byte(`{"timestamp": 1e308, "message": {"type": "SubagentEvent", "payload": {"parent_tool_call_id": "c", "agent_id": "../..", "event": {"type": "SubagentEvent", "payload": {}}}}}`), []byte{})
	f.Fuzz(func(t *testing.T, wire, subWire []byte) {
		if len(wire)+len(subWire) > 1<<20 {
			return
		}
		d := filepath.Join(t.TempDir(), "s")
		for path, b := range map[string][]byte{
			"wire.jsonl":                    append(append([]byte{}, wire...), "\n"+`{"timestamp": 2, "message": {"type": "ToolResult", "payload": {"tool_call_id": "call_A", "return_value": {"is_error": false, "output": "agent_id: aaaa1111\nstatus: completed"}}}}`...),
			"subagents/aaaa1111/wire.jsonl": subWire,
			"state.json":                    wire,
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
