package codex

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/mermaid"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// TestImport_Store writes the rollouts into a store file on disk and reads
// them back as graph and audit do (expectations written by hand from the
// fixtures): the parent's three spawn_agent calls are one fork with a failed
// branch and a missing one is interrupted; the serial reads are a missed
// fan-out; AGENTS.md is in the run's project.
func TestImport_Store(t *testing.T) {
	ctx := context.Background()
	sessions, _ := tree(t)
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tt := range []struct {
		id           string
		graph, audit []string
	}{
		{parentID,
			[]string{`fork (none context) Kepler, Noether, Curie`, `join Kepler=ok, Noether=error, Curie=ok`, `subgraph b3["branch Curie · ok`, `tool apply_patch`},
			[]string{"ERROR branch.failed", `branch "Noether" (explorer)`}},
		{serialID,
			[]string{`n3["tool shell`, `fork (none context) Hopper`, `interrupted: the sub-agent's rollout file was not found`},
			[]string{"fanout.missed", "3 shell calls in the trunk ran one after another in separate responses"}},
	} {
		t.Run(tt.id, func(t *testing.T) {
			s := read(t, rollout(t, sessions, tt.id), importers.Options{})
			id, err := importers.Write(ctx, db, s)
			if err != nil {
				t.Fatal(err)
			}
			g, err := graph.Load(ctx, db, id)
			if err != nil {
				t.Fatal(err)
			}
			if g.Run.Status != record.StatusOK {
				t.Errorf("run status %s", g.Run.Status)
			}
			if g.Run.Project.File("AGENTS.md") == nil {
				t.Errorf("project files %+v: no AGENTS.md", g.Run.Project.Files)
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
