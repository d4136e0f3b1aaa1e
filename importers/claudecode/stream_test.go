package claudecode_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/claudecode"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/record"
)

// TestStream_CallNeverAnswered: a call whose result never comes holds the
// steps after it back only so far (2,000 of them): the import goes on,
// records every turn after it, and the call reads interrupted, through
// the stream and the whole tree alike.
func TestStream_CallNeverAnswered(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "projects", "p")
	m := &lines{t: t, session: "s"}
	m.user(0, "start")
	m.asst(1, "m0", 3, 0, 0, 5, use("open", "Bash", map[string]any{"command": "sleep 1000"}))
	const turns = 800 // three steps each, past the 2,000 held back
	for i := 0; i < turns; i++ {
		sec := float64(10 + 2*i)
		m.user(sec, fmt.Sprintf("turn %d", i))
		m.asst(sec+1, fmt.Sprintf("m%d", i+1), 3, 0, 0, 5, text(fmt.Sprintf("answer %d", i)))
	}
	path := filepath.Join(dir, "s.jsonl")
	m.write(path, true)
	g := importerstest.StreamAndTree(t, claudecode.Format{}, path)
	importerstest.NeverAnswered(t, g, turns)
	if g.Status != record.StatusOK {
		t.Errorf("run %s", g.Status)
	}
}

// TestStream_StrictStopsMidway: under Strict a malformed line after some
// steps were recorded stops the import with FILE:LINE; the run keeps what
// came before, marked interrupted with the reason, never finished.
func TestStream_StrictStopsMidway(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "projects", "p")
	m := &lines{t: t, session: "s"}
	for i := 0; i < 20; i++ {
		m.user(float64(2*i), fmt.Sprintf("turn %d", i))
		m.asst(float64(2*i+1), fmt.Sprintf("m%d", i), 3, 0, 0, 5, text("ok"))
	}
	m.raw(`{not json`)
	m.user(100, "after")
	path := filepath.Join(dir, "s.jsonl")
	m.write(path, true)
	ctx := context.Background()
	db := importerstest.Store(t)
	_, err := importers.Import(ctx, db, claudecode.Format{}, path, importers.Options{Strict: true})
	if err == nil || !strings.Contains(err.Error(), path+":41:") {
		t.Fatalf("err = %v, want %s:41", err, path)
	}
	id, err := db.RunBySource(ctx, claudecode.Name, "s")
	if err != nil || id == "" {
		t.Fatalf("run %q, %v", id, err)
	}
	g, err := graph.Load(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	if g.Status != record.StatusInterrupted || !strings.Contains(g.Error, "the import stopped") || !strings.Contains(g.Error, ":41:") || len(g.Nodes) < 20 {
		t.Errorf("run %s %q with %d nodes", g.Status, g.Error, len(g.Nodes))
	}
}
