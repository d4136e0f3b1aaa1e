package codex

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/record"
)

// TestStoredRun_Generated: a generated 1 MB session (importerstest.BigCodex:
// 8 KiB shell outputs, a sub-agent every fifth turn with its own rollout
// and a wait) records the run it recorded when rollouts were read whole
// (the golden's digest was written by that importer), through the stream
// and through Read's tree alike.
func TestStoredRun_Generated(t *testing.T) {
	dir := t.TempDir()
	path, err := importerstest.BigCodex(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	importerstest.SameStoredRun(t, "big-1MB", Format{}, path, dir, true)
	importerstest.StreamAndTree(t, Format{}, path)
}

// TestStream_CallNeverAnswered: a call whose output never comes, followed
// by 700 answered turns (2,800 steps, past the 2,000 a thread holds
// back), reads interrupted and every turn after it is recorded — the run
// the whole file gave (its golden digest was written when rollouts were
// read whole), through the stream and the tree alike.
func TestStream_CallNeverAnswered(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sessions", "2026", "03", "01", "rollout-2026-03-01T10-00-00-"+parentID+".jsonl")
	var b strings.Builder
	rec := func(sec int, typ, payload string) {
		fmt.Fprintf(&b, `{"timestamp":"2026-03-01T%02d:%02d:%02d.000Z","type":%q,"payload":%s}`+"\n", 10+sec/3600, sec/60%60, sec%60, typ, payload)
	}
	tokens := `{"type":"token_count","info":{"total_token_usage":{"input_tokens":%d,"output_tokens":%d},"last_token_usage":{"input_tokens":100,"output_tokens":10}}}`
	rec(0, "session_meta", `{"id":"`+parentID+`","timestamp":"2026-03-01T10:00:00.000Z","cwd":"/nonexistent","cli_version":"0.130.0","source":"cli"}`)
	rec(1, "event_msg", `{"type":"task_started","turn_id":"t0"}`)
	rec(1, "response_item", `{"type":"message","role":"user","content":[{"type":"input_text","text":"start the server"}]}`)
	rec(2, "response_item", `{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"./serve\"]}","call_id":"call_open"}`)
	rec(2, "event_msg", fmt.Sprintf(tokens, 100, 10))
	const turns = 700
	for i := 0; i < turns; i++ {
		sec := 10 + 3*i
		rec(sec, "response_item", fmt.Sprintf(`{"type":"message","role":"user","content":[{"type":"input_text","text":"turn %d"}]}`, i))
		rec(sec+1, "response_item", fmt.Sprintf(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"answer %d"}]}`, i))
		rec(sec+1, "event_msg", fmt.Sprintf(tokens, 100*(i+2), 10*(i+2)))
		rec(sec+2, "event_msg", fmt.Sprintf(`{"type":"task_complete","turn_id":"t%d","last_agent_message":"answer %d"}`, i, i))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	importerstest.SameStoredRun(t, "never-answered", Format{}, path, dir, true)
	g := importerstest.StreamAndTree(t, Format{}, path)
	var open *graph.Node
	users, finals := 0, 0
	for _, n := range g.Nodes {
		switch n.Kind {
		case record.KindTool:
			open = n
		case record.KindUser:
			users++
		case record.KindFinal:
			finals++
		}
	}
	if open == nil || open.Status != record.StatusInterrupted || open.Error != noOutput {
		t.Errorf("the open call: %+v", open)
	}
	if users != turns+1 || finals != turns {
		t.Errorf("%d user turns, %d finals; want %d, %d", users, finals, turns+1, turns)
	}
}
