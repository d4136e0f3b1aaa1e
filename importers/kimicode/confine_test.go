package kimicode

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
)

// TestInstructions_OnlyFromTheProjectFolder: the AGENTS.md files a session
// says it loaded are read from its project folder alone — never from the
// folder the session names when the import runs elsewhere, never from the
// home folder or another folder it names. Before, every one of them was
// copied (home's as "~/.kimi-code/AGENTS.md").
func TestInstructions_OnlyFromTheProjectFolder(t *testing.T) {
	home, work, other := t.TempDir(), filepath.Join(t.TempDir(), "proj"), t.TempDir()
	t.Setenv("HOME", home)
	write(t, filepath.Join(work, "AGENTS.md"), "# rules\n")
	write(t, filepath.Join(home, ".kimi-code", "AGENTS.md"), "# my global rules\n")
	write(t, filepath.Join(other, "AGENTS.md"), "# someone else's\n")
	named := []string{filepath.Join(work, "AGENTS.md"), filepath.Join(home, ".kimi-code", "AGENTS.md"), filepath.Join(other, "AGENTS.md")}
	j := &journal{}
	fmt.Fprintf(&j.b, `{"type":"metadata","protocol_version":"1.5","created_at":%d}`+"\n", int64(t0))
	fmt.Fprintf(&j.b, `{"type":"config.update","agentId":"main","cwd":%q,"agentsMdPaths":[%q,%q,%q],"profileName":"agent","time":%d}`+"\n",
		work, named[0], named[1], named[2], int64(t0))
	j.prompt(10, "hi").step(20, "s1").text(30, "s1", "hello").usage(40, tokens(5, 1, 0, 0)).ended(50, "completed", "")
	dir := filepath.Join(t.TempDir(), "s")
	write(t, filepath.Join(dir, "agents", "main", "wire.jsonl"), j.b.String())
	paths := func(s *importers.Session) []string {
		var out []string
		for _, f := range s.Project.Files {
			out = append(out, f.Path)
		}
		return out
	}
	for _, opt := range []importers.Options{{}, {Here: other}} {
		if s := readOne(t, dir, opt); len(s.Project.Files) != 0 || s.Dir != work {
			t.Errorf("Here %q: dir %q files %v: read from the folder the session names", opt.Here, s.Dir, paths(s))
		}
	}
	s := readOne(t, dir, importers.Options{Here: work})
	if got := paths(s); !reflect.DeepEqual(got, []string{"AGENTS.md"}) {
		t.Errorf("in the session's own folder: files %v, want AGENTS.md alone (not home's, not another folder's)", got)
	}
}

// TestSubagentJournal_SymlinkOutNotFollowed: a sub-agent's journal that
// is a symlink to a file outside the session's folder is not read; the
// sub-agent reads as one with no journal. Before, the file it points at
// was imported as the sub-agent.
func TestSubagentJournal_SymlinkOutNotFollowed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	write(t, filepath.Join(dir, "agents", "main", "wire.jsonl"), newJournal("main").
		prompt(0, "go").step(10, "s1").usage(100, tokens(10, 1, 0, 0)).text(150, "s1", "done").ended(200, "completed", "").b.String())
	outside := filepath.Join(t.TempDir(), "wire.jsonl")
	write(t, outside, newJournal("coder").prompt(400, "stray").step(410, "y").text(420, "y", "hi").usage(430, tokens(5, 1, 0, 0)).ended(440, "completed", "").b.String())
	if err := os.MkdirAll(filepath.Join(dir, "agents", "agent-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "agents", "agent-1", "wire.jsonl")); err != nil {
		t.Fatal(err)
	}
	s := readOne(t, dir, importers.Options{})
	if fs := importerstest.Forks(s.Trunk); len(fs) != 0 {
		t.Errorf("the journal outside the session's folder was read as a sub-agent: %s", importerstest.Dump(s))
	}
	found := false
	for _, p := range s.Report.Problems {
		found = found || strings.Contains(p.Err, "with no journal")
	}
	if !found {
		t.Errorf("problems %+v: the sub-agent without a journal is not reported", s.Report.Problems)
	}
}
