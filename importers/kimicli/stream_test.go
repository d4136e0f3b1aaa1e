package kimicli

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/inspect-dev/inspect/importers/importerstest"
)

// TestStream_CallNeverAnswered: a tool call whose result never comes holds
// the steps after it back only so far (2,000): the import records every
// turn after it and the call reads interrupted, through the stream and the
// whole tree alike.
func TestStream_CallNeverAnswered(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	j := newJournal().
		ev(0, "TurnBegin", `{"user_input": "start"}`).
		ev(0.1, "StepBegin", `{"n": 1}`).
		ev(0.2, "ToolCall", `{"type": "function", "id": "open", "function": {"name": "Shell", "arguments": "{\"command\": \"sleep 1000\"}"}}`).
		ev(0.3, "StatusUpdate", usage(10, 1, 0, 0)).
		ev(0.4, "StepInterrupted", `{}`).
		ev(0.5, "TurnEnd", `{}`)
	const turns = 800 // three steps each, past the 2,000 held back
	for i := 0; i < turns; i++ {
		at := float64(10 + 2*i)
		j.ev(at, "TurnBegin", fmt.Sprintf(`{"user_input": "turn %d"}`, i)).
			ev(at+0.1, "StepBegin", `{"n": 1}`).
			ev(at+0.2, "ContentPart", fmt.Sprintf(`{"type": "text", "text": "answer %d"}`, i)).
			ev(at+0.3, "StatusUpdate", usage(10, 1, 0, 0)).
			ev(at+0.4, "TurnEnd", `{}`)
	}
	write(t, filepath.Join(dir, "wire.jsonl"), j.b.String())
	importerstest.NeverAnswered(t, importerstest.StreamAndTree(t, Format{}, dir), turns)
}
