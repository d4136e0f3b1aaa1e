package kimicode

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
	j := newJournal("main").
		prompt(0, "start").step(100, "s0").
		call(200, "s0", "open", "Bash", `{"command":"sleep 1000"}`).
		usage(300, tokens(10, 1, 0, 0)).
		loop(400, `{"type":"step.end","uuid":"s0","finishReason":"interrupted"}`).
		ended(500, "cancelled", "")
	const turns = 800 // three steps each, past the 2,000 held back
	for i := 0; i < turns; i++ {
		at := float64(10000 + 2000*i)
		uuid := fmt.Sprint("s", i+1)
		j.prompt(at, fmt.Sprintf("turn %d", i)).step(at+100, uuid).text(at+200, uuid, fmt.Sprintf("answer %d", i)).
			usage(at+300, tokens(10, 1, 0, 0)).stepEnd(at+310, uuid, tokens(10, 1, 0, 0)).ended(at+400, "completed", "")
	}
	write(t, filepath.Join(dir, "agents", "main", "wire.jsonl"), j.b.String())
	importerstest.NeverAnswered(t, importerstest.StreamAndTree(t, Format{}, dir), turns)
}

// TestStream_SameAsTree: every session the tests build records the same
// run streamed as collected whole (Read).
func TestStream_SameAsTree(t *testing.T) {
	big := t.TempDir()
	p, err := importerstest.BigKimiCode(big, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"swarm": swarmSession(t), "unlinked": unlinkedSession(t), "edges": edgesSession(t),
		"big": p, "sample": importerstest.Sample(t, "kimi-code/sample-main")} {
		t.Run(name, func(t *testing.T) { importerstest.StreamAndTree(t, Format{}, dir) })
	}
}
