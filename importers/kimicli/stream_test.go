package kimicli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/record"
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
	ctx := context.Background()
	db := importerstest.Store(t)
	res, err := importers.Import(ctx, db, Format{}, dir, importers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Load(ctx, db, res[0].RunID)
	if err != nil {
		t.Fatal(err)
	}
	var open *graph.Node
	users, finals := 0, 0
	for _, n := range g.Nodes {
		switch {
		case n.Kind == record.KindTool:
			open = n
		case n.Kind == record.KindUser:
			users++
		case n.Kind == record.KindFinal && n.Text != "":
			finals++
		}
	}
	if open == nil || open.Status != record.StatusInterrupted || !strings.Contains(open.Error, "no result") {
		t.Errorf("the open call: %+v", open)
	}
	if users != turns+1 || finals != turns {
		t.Errorf("%d user turns, %d answers; want %d, %d", users, finals, turns+1, turns)
	}
	tree := readOne(t, dir, importers.Options{})
	db2 := importerstest.Store(t)
	id, err := importers.Write(ctx, db2, tree)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := importerstest.StoredRun(t, db, res[0].RunID, nil), importerstest.StoredRun(t, db2, id, nil); a != b {
		t.Error("the stream and the tree record different runs")
	}
}
