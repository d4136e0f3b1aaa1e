package codex

import (
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/record"
)

// TestImport_Store writes the rollouts into a store file on disk and reads
// them back as graph and audit do (expectations written by hand from the
// fixtures): the parent's three spawn_agent calls are one fork with a failed
// branch and a missing one is interrupted; the serial reads are calls
// Codex would have run at once from one response; AGENTS.md is in the run's project (imported in the session's
// folder).
func TestImport_Store(t *testing.T) {
	sessions, cwd := tree(t)
	db := importerstest.Store(t)
	for _, tt := range []struct {
		id           string
		graph, audit []string
	}{
		{parentID,
			[]string{`fork (none context) Kepler, Noether, Curie`, `join Kepler=ok, Noether=error, Curie=ok`, `subgraph b3["branch Curie · ok`, `tool apply_patch`},
			[]string{"ERROR branch.failed", `branch "Noether" (explorer)`}},
		{serialID,
			[]string{`n3["tool shell`, `fork (none context) Hopper`, `interrupted: the sub-agent's rollout file was not found`},
			[]string{"fanout.missed", "3 shell calls in the trunk ran one after another, one per response (cat regions/eu.md, cat regions/us.md, cat regions/apac.md)",
				"AGENTS.md:2: Tell the main agent to make several shell calls", "in one response — Codex runs them at once"}},
	} {
		t.Run(tt.id, func(t *testing.T) {
			g, mm, audit := importerstest.Shown(t, db, read(t, rollout(t, sessions, tt.id), importers.Options{Here: cwd}))
			if g.Run.Status != record.StatusOK {
				t.Errorf("run status %s", g.Run.Status)
			}
			if g.Run.Project.File("AGENTS.md") == nil {
				t.Errorf("project files %+v: no AGENTS.md", g.Run.Project.Files)
			}
			importerstest.Contains(t, "graph", mm, tt.graph...)
			importerstest.Contains(t, "audit", audit, tt.audit...)
		})
	}
}
