package codex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
)

// TestInstructions_NotFromTheFolderTheSessionNames: a rollout whose cwd
// names a folder with AGENTS.md, imported elsewhere without --project,
// copies nothing of it; with --project the folder named is read, a FIFO
// there never waited on. Before, the cwd's AGENTS.md was copied.
func TestInstructions_NotFromTheFolderTheSessionNames(t *testing.T) {
	sessions, cwd := tree(t)
	path := rollout(t, sessions, parentID)
	for _, opt := range []importers.Options{{}, {Here: t.TempDir()}} {
		if s := read(t, path, opt); len(s.Project.Files) != 0 || s.Dir != cwd || s.Project.Name != "regions-project" {
			t.Errorf("Here %q: dir %q project %+v", opt.Here, s.Dir, s.Project)
		}
	}
	proj := t.TempDir()
	if err := os.WriteFile(filepath.Join(proj, "AGENTS.override.md"), []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	importerstest.Mkfifo(t, filepath.Join(proj, "AGENTS.md"))
	var s *importers.Session
	importerstest.Within(t, "read", func() { s = read(t, path, importers.Options{Project: proj}) })
	if len(s.Project.Files) != 1 || s.Project.Files[0].Path != "AGENTS.override.md" || s.Dir != proj {
		t.Errorf("--project: dir %q project %+v", s.Dir, s.Project)
	}
}

// TestChildRollout_SymlinkNotFollowed: a sub-agent's rollout that is a
// symlink (to a file outside the sessions' tree) is not read: its branch
// keeps what the parent learnt of it (its name, its answer) and no step of
// its own. Before, the file it points at was read as the sub-agent.
func TestChildRollout_SymlinkNotFollowed(t *testing.T) {
	sessions, _ := tree(t)
	child := rollout(t, sessions, "019a1c00-0000-7000-8000-0000000000c1")
	moved := filepath.Join(t.TempDir(), "elsewhere.jsonl")
	if err := os.Rename(child, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, child); err != nil {
		t.Fatal(err)
	}
	s := read(t, rollout(t, sessions, parentID), importers.Options{})
	fs := importerstest.Forks(s.Trunk)
	if len(fs) == 0 {
		t.Fatal("no fork")
	}
	b := fs[0].Branches[0]
	if b.Name != "Kepler" || !strings.Contains(b.Answer, "EU Q3") || b.Conv == nil || len(b.Conv.Steps) != 0 {
		t.Errorf("branch %s read from the symlinked rollout: %s", b.Name, importerstest.Dump(s))
	}
}
