package kimicli

import (
	"path/filepath"
	"testing"

	"github.com/inspect-dev/inspect/importers/importerstest"
)

// TestStoredRun_Unchanged imports every session the tests build, the real
// samples and a generated 3 MB session, and requires the stored run —
// every node, request and response — to be the one testdata/stored holds,
// written by the importer before it streamed (commit "importers: goldens of
// the stored runs"): reading a session as it streams must record the same
// run.
func TestStoredRun_Unchanged(t *testing.T) {
	f := Format{}
	t.Run("fanout", func(t *testing.T) {
		dir := fanoutSession(t)
		importerstest.SameStoredRun(t, "fanout", f, dir, filepath.Dir(dir), false)
	})
	t.Run("missing-subagent", func(t *testing.T) {
		dir := missingSubagentSession(t)
		importerstest.SameStoredRun(t, "missing-subagent", f, dir, filepath.Dir(dir), false)
	})
	t.Run("forwarded-only", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "s")
		write(t, filepath.Join(dir, "wire.jsonl"), newJournal().
			ev(0, "TurnBegin", `{"user_input": "go"}`).
			ev(0, "StepBegin", `{"n": 1}`).
			ev(1, "ToolCall", agentCall("c1", `{"description": "a", "prompt": "do a"}`)).
			ev(1.1, "ToolCall", agentCall("c2", `{"description": "b"}`)).
			ev(1.5, "StatusUpdate", usage(100, 10, 0, 0)).
			ev(2, "SubagentEvent", wrapped("c1", "a0000001", "TurnBegin", `{"user_input": "do a"}`)).
			ev(2.1, "SubagentEvent", wrapped("c2", "b0000002", "TurnBegin", `{"user_input": "do b, as the prompt says"}`)).
			ev(2.2, "SubagentEvent", wrapped("c1", "a0000001", "StepBegin", `{"n": 1}`)).
			ev(2.3, "SubagentEvent", wrapped("c1", "a0000001", "ContentPart", `{"type": "text", "text": "a is done"}`)).
			ev(2.4, "SubagentEvent", wrapped("c1", "a0000001", "StatusUpdate", usage(50, 5, 0, 0))).
			ev(2.5, "SubagentEvent", wrapped("c1", "a0000001", "TurnEnd", `{}`)).
			ev(3, "ToolResult", result("c1", completed("a0000001", "a is done"), false, "", "")).
			ev(4, "ToolResult", result("c2", "", true, "the agent failed", "failed")).
			ev(4.5, "StepBegin", `{"n": 2}`).
			ev(5, "ContentPart", `{"type": "text", "text": "one of two"}`).
			ev(5.1, "StatusUpdate", usage(200, 10, 100, 0)).
			ev(6, "TurnEnd", `{}`).b.String())
		importerstest.SameStoredRun(t, "forwarded-only", f, dir, filepath.Dir(dir), false)
	})
	t.Run("big", func(t *testing.T) {
		dir := t.TempDir()
		p, err := importerstest.BigKimiCLI(dir, 3<<20)
		if err != nil {
			t.Fatal(err)
		}
		importerstest.SameStoredRun(t, "big-3MB", f, p, dir, true)
	})
	real := importerstest.Transcripts(t)
	for _, name := range []string{"with-tool-calls", "with-subagent-collapsed"} {
		t.Run(name, func(t *testing.T) {
			importerstest.SameStoredRun(t, "real-"+name, f, filepath.Join(real, "kimi-cli", name), real, false)
		})
	}
}
