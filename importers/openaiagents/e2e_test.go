package openaiagents_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/openaiagents"
	"github.com/inspect-dev/inspect/mermaid"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// TestImport_Store writes each real trace into a store file on disk and
// reads it back as graph and audit do: the serial loop is a missed fan-out,
// the agents called as tools in one response are a fork, the failure shows
// as a failed branch, the hand-off loop ends exhausted (expectations written
// by hand from the scenarios in testdata/gen/gen.mjs).
func TestImport_Store(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tt := range []struct {
		file         string
		status       record.Status
		graph, audit []string
	}{
		{"serial-loop.jsonl", record.StatusOK,
			[]string{`tool read_file regions/eu.md`, `tool read_file regions/apac.md`},
			[]string{"WARNING fanout.missed", "3 read_file calls in the trunk ran one after another in separate responses"}},
		{"parallel-agents-as-tools.jsonl", record.StatusOK,
			[]string{`fork (none context) research_eu, research_apac, research_us`, `join research_eu=ok, research_apac=ok, research_us=ok`, `final: EU 4.2M`},
			[]string{"No topology mistakes found.", "fork.overlap: clear (1 fork with 2 or more branches examined)"}},
		{"failure.jsonl", record.StatusOK,
			[]string{`join research_us=error, research_eu=ok`},
			[]string{"ERROR branch.failed", `branch "research_us" (us) of the fork at n2 ended error`}},
		{"handoff.jsonl", record.StatusOK,
			[]string{`handoff triage to billing`, `tool issue_refund`},
			[]string{"No topology mistakes found.", "handoff.loop: clear"}},
		{"handoff-loop-max-turns.jsonl", record.StatusExhausted,
			[]string{`handoff ping to pong`, `handoff pong to ping`},
			[]string{"ERROR handoff.loop", "ping and pong passed the conversation back and forth 4 times"}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			ss, err := openaiagents.Format{}.Read(ctx, filepath.Join("testdata", tt.file), importers.Options{})
			if err != nil {
				t.Fatal(err)
			}
			id, err := importers.Write(ctx, db, ss[0])
			if err != nil {
				t.Fatal(err)
			}
			// Importing again updates the same run.
			if id2, err := importers.Write(ctx, db, ss[0]); err != nil || id2 != id {
				t.Fatalf("re-import: id %s, %v; want %s", id2, err, id)
			}
			g, err := graph.Load(ctx, db, id)
			if err != nil {
				t.Fatal(err)
			}
			if g.Run.Status != tt.status {
				t.Errorf("run status %s, want %s", g.Run.Status, tt.status)
			}
			var mm, audit strings.Builder
			if err := mermaid.Fprint(&mm, g); err != nil {
				t.Fatal(err)
			}
			rep, err := findings.Audit(g, func(seq int64) ([]byte, error) { return db.Request(ctx, id, seq) })
			if err != nil {
				t.Fatal(err)
			}
			if err := findings.WriteText(&audit, rep); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.graph {
				if !strings.Contains(mm.String(), w) {
					t.Errorf("graph lacks %q:\n%s", w, mm.String())
				}
			}
			for _, w := range tt.audit {
				if !strings.Contains(audit.String(), w) {
					t.Errorf("audit lacks %q:\n%s", w, audit.String())
				}
			}
		})
	}
}
