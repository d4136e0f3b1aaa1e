package openaiagents_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/importers/openaiagents"
	"github.com/inspect-dev/inspect/record"
)

// TestImport_Store writes each real trace into a store file on disk and
// reads it back as graph and audit do: the serial loop is three calls that
// belong in one response,
// the agents called as tools in one response are a fork, the failure shows
// as a failed branch, the hand-off loop ends exhausted (expectations written
// by hand from the scenarios in testdata/gen/gen.mjs).
func TestImport_Store(t *testing.T) {
	ctx := context.Background()
	db := importerstest.Store(t)
	for _, tt := range []struct {
		file         string
		status       record.Status
		graph, audit []string
	}{
		{"serial-loop.jsonl", record.StatusOK,
			[]string{`tool read_file regions/eu.md`, `tool read_file regions/apac.md`},
			[]string{"WARNING fanout.missed", "3 read_file calls in the trunk ran one after another, one per response (regions/eu.md, regions/us.md, regions/apac.md)",
				"agent analyst's instructions (in code): Tell it to make several read_file calls", "in one response — the OpenAI Agents SDK runs them at once"}},
		{"parallel-agents-as-tools.jsonl", record.StatusOK,
			// the branches in the order their calls started, which varies from run to run of gen.mjs
			[]string{`fork (none context) research_`, `join research_`, `research_eu=ok`, `research_apac=ok`, `research_us=ok`, `final: EU 4.2M`},
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
			g, mm, audit := importerstest.Shown(t, db, ss[0])
			// Importing again updates the same run.
			if g2, _, _ := importerstest.Shown(t, db, ss[0]); g2.Run.ID != g.Run.ID {
				t.Errorf("re-import made run %s, want %s again", g2.Run.ID, g.Run.ID)
			}
			if g.Run.Status != tt.status {
				t.Errorf("run status %s, want %s", g.Run.Status, tt.status)
			}
			importerstest.Contains(t, "graph", mm, tt.graph...)
			importerstest.Contains(t, "audit", audit, tt.audit...)
		})
	}
}
