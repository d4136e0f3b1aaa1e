package claudecode_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/claudecode"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/record"
)

// projectFolder writes CLAUDE.md and the Explore definition into a new
// folder named app.
func projectFolder(t *testing.T) string {
	t.Helper()
	cwd := filepath.Join(t.TempDir(), "app")
	writeFile(t, filepath.Join(cwd, "CLAUDE.md"), "# House rules\n\nKeep answers short.\n")
	writeFile(t, filepath.Join(cwd, ".claude", "agents", "Explore.md"), "---\nname: Explore\n---\nExplore the code.\n")
	return cwd
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	importerstest.Write(t, filepath.Dir(path), filepath.Base(path), content)
}

// branchNodes is how many nodes each branch of the run's forks holds, as
// "name=status/nodes".
func branchNodes(g *graph.Run) string {
	var out []string
	for _, f := range g.Forks {
		for _, b := range f.Branches {
			out = append(out, fmt.Sprintf("%s=%s/%d", b.Name, b.Status, len(b.Conv.Nodes)))
		}
	}
	return strings.Join(out, " ")
}

// TestInstructions_NotFromTheFolderTheSessionNames: a session whose cwd
// names another folder (another user's, say) imported from elsewhere and
// without --project copies nothing of that folder's CLAUDE.md or agent
// definitions; the run still names the folder it ran in. Before, both
// files were copied into the database.
func TestInstructions_NotFromTheFolderTheSessionNames(t *testing.T) {
	cwd := projectFolder(t)
	path := serialSession(t, cwd, true)
	for _, opt := range []importers.Options{{}, {Here: t.TempDir()}} {
		g, _, _ := importFileWith(t, path, opt)
		if len(g.Project.Files) != 0 || len(g.Run.Options.Instructions) != 0 {
			t.Errorf("Here %q: project %+v, instructions %v: the folder the session names was read", opt.Here, g.Project, g.Run.Options.Instructions)
		}
		if g.Run.Options.ProjectDir != cwd || g.Project.Name != "app" {
			t.Errorf("Here %q: project dir %q name %q", opt.Here, g.Run.Options.ProjectDir, g.Project.Name)
		}
	}
	// Named as the project folder, the same folder is read.
	proj := filepath.Join(t.TempDir(), "checkout")
	writeFile(t, filepath.Join(proj, "CLAUDE.md"), "# My checkout\n")
	g, _, _ := importFileWith(t, path, importers.Options{Project: proj, Here: t.TempDir()})
	if f := g.Project.File("CLAUDE.md"); f == nil || f.Content != "# My checkout\n" || g.Run.Options.ProjectDir != proj || g.Project.Name != "checkout" {
		t.Errorf("--project: project %+v dir %q", g.Project, g.Run.Options.ProjectDir)
	}
}

// TestInstructions_SymlinkOutNotFollowed: in the project folder, a
// CLAUDE.md and an agent definition that are symlinks to files outside it
// are not copied (one inside the folder is); before, both were followed.
func TestInstructions_SymlinkOutNotFollowed(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "id_rsa")
	writeFile(t, secret, "-----BEGIN OPENSSH PRIVATE KEY-----\n")
	cwd := filepath.Join(t.TempDir(), "app")
	writeFile(t, filepath.Join(cwd, "CLAUDE.local.md"), "# local\n")
	os.MkdirAll(filepath.Join(cwd, ".claude", "agents"), 0o755)
	for _, link := range []string{filepath.Join(cwd, "CLAUDE.md"), filepath.Join(cwd, ".claude", "agents", "Explore.md")} {
		if err := os.Symlink(secret, link); err != nil {
			t.Fatal(err)
		}
	}
	// A relative link climbing out (from app/.claude to the test's other
	// folder) is refused as well.
	up := filepath.Join("..", "..", "..", filepath.Base(outside), "id_rsa")
	if err := os.Symlink(up, filepath.Join(cwd, ".claude", "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(cwd, ".claude", "CLAUDE.md")); err != nil || !strings.Contains(string(b), "PRIVATE KEY") {
		t.Fatalf("the relative link does not reach the file outside: %v", err)
	}
	g, _, _ := importFileWith(t, serialSession(t, cwd, true), importers.Options{Project: cwd})
	if len(g.Project.Files) != 1 || g.Project.File("CLAUDE.local.md") == nil {
		t.Errorf("project files %+v: a symlink out of the project folder was followed", g.Project.Files)
	}
	for _, f := range g.Project.Files {
		if strings.Contains(f.Content, "PRIVATE KEY") {
			t.Errorf("%s holds the file outside the project folder", f.Path)
		}
	}
}

// TestSubagentFile_SymlinkOutNotFollowed: a sub-agent transcript that is a
// symlink to a file outside the session's folder is not read: the branch
// has no transcript, as a missing one (what the parent recorded: its
// outcome and answer, none of its steps). Before, the file it points at was imported.
func TestSubagentFile_SymlinkOutNotFollowed(t *testing.T) {
	path := serialSession(t, "/nonexistent/app", true)
	sub := filepath.Join(filepath.Dir(path), "s2", "subagents", "agent-x1.jsonl")
	g, _, _ := importFileWith(t, path, importers.Options{})
	if got := branchNodes(g); got != "notes=ok/4" {
		t.Fatalf("the sub-agent read in place: %s", got)
	}
	moved := filepath.Join(t.TempDir(), "elsewhere.jsonl")
	if err := os.Rename(sub, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, sub); err != nil {
		t.Fatal(err)
	}
	g, _, _ = importFileWith(t, path, importers.Options{})
	if got := branchNodes(g); got != "notes=ok/1" || g.Forks[0].Branches[0].Conv.Nodes[0].Kind != record.KindFinal {
		t.Errorf("branches %s: the symlinked sub-agent file outside the session's folder was read", got)
	}
	for _, n := range g.Nodes {
		if n.Tool != nil && n.Tool.Name == "Grep" {
			t.Errorf("node %d: the sub-agent's Grep call, from the file outside, was imported", n.Seq)
		}
	}
}

// TestFIFO_NoHang: a FIFO as CLAUDE.md, as a sub-agent's .meta.json or
// transcript, or given as the session itself, is refused at once, never
// waited on. Before, the import blocked for ever on the first three and
// Detect on the last.
func TestFIFO_NoHang(t *testing.T) {
	cwd := filepath.Join(t.TempDir(), "app")
	importerstest.Mkfifo(t, filepath.Join(cwd, "CLAUDE.md"))
	writeFile(t, filepath.Join(cwd, ".claude", "agents", "Explore.md"), "---\nname: Explore\n---\n")
	path := serialSession(t, cwd, true)
	subs := filepath.Join(filepath.Dir(path), "s2", "subagents")
	importerstest.Mkfifo(t, filepath.Join(subs, "agent-x2.meta.json"))
	importerstest.Mkfifo(t, filepath.Join(subs, "agent-x3.jsonl"))
	importerstest.Within(t, "import", func() {
		g, _, res := importFileWith(t, path, importers.Options{Project: cwd})
		if len(g.Project.Files) != 1 || g.Project.File(".claude/agents/Explore.md") == nil {
			t.Errorf("project files %+v", g.Project.Files)
		}
		if got := branchNodes(g); got != "notes=ok/4" {
			t.Errorf("branches %s", got)
		}
		if res[0].Report.Skipped["sub-agent file no call of this session starts"] != 1 {
			t.Errorf("skipped %v", res[0].Report.Skipped)
		}
	})
	fifo := filepath.Join(t.TempDir(), "session.jsonl")
	importerstest.Mkfifo(t, fifo)
	importerstest.Within(t, "a FIFO as the session", func() {
		if (claudecode.Format{}).Detect(fifo) {
			t.Error("Detect(a FIFO) = true")
		}
		if _, err := (claudecode.Format{}).Read(context.Background(), fifo, importers.Options{}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Read(a FIFO): %v", err)
		}
	})
}
