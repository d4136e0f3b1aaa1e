package claudecode_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/claudecode"
	"github.com/inspect-dev/inspect/importers/importerstest"
)

// TestStoredRun_Unchanged imports every session the tests build, the real
// samples and a generated 2 MB session, and requires the stored run —
// every node, request and response — to be the one testdata/stored holds,
// written by the importer before it streamed (commit "importers: goldens of
// the stored runs"): reading a session as it streams must record the same
// run.
func TestStoredRun_Unchanged(t *testing.T) {
	f := claudecode.Format{}
	projects := func(path string) string {
		return strings.SplitN(path, string(filepath.Separator)+"projects"+string(filepath.Separator), 2)[0]
	}
	t.Run("layout", func(t *testing.T) {
		p := layout(t)
		importerstest.SameStoredRun(t, "layout", f, p, projects(p), false)
	})
	t.Run("serial", func(t *testing.T) {
		p := serialSession(t, "/nonexistent/app", false)
		importerstest.SameStoredRun(t, "serial", f, p, projects(p), false)
	})
	t.Run("serial-delegating", func(t *testing.T) {
		cwd := filepath.Join(t.TempDir(), "app")
		os.MkdirAll(filepath.Join(cwd, ".claude", "agents"), 0o755)
		os.WriteFile(filepath.Join(cwd, "CLAUDE.md"), []byte("# House rules\n\nKeep answers short.\n"), 0o644)
		os.WriteFile(filepath.Join(cwd, ".claude", "agents", "Explore.md"), []byte("---\nname: Explore\n---\nExplore the code.\n"), 0o644)
		p := serialSession(t, cwd, true)
		// The project folder named (--project): its files are the snapshot.
		importerstest.SameStoredRunWith(t, "serial-delegating", f, p, filepath.Dir(filepath.Dir(cwd)), false, importers.Options{Project: cwd})
	})
	t.Run("big", func(t *testing.T) {
		dir := t.TempDir()
		p, err := importerstest.BigClaudeCode(dir, 3<<20)
		if err != nil {
			t.Fatal(err)
		}
		importerstest.SameStoredRun(t, "big-3MB", f, p, dir, true)
	})
	real := importerstest.Transcripts(t)
	for name, rel := range map[string]string{
		"real-with-subagent":  "claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.lines-43-102.jsonl",
		"real-tool-heavy":     "claude-code/tool_heavy.jsonl",
		"real-subagent-alone": "claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-aac57f5.jsonl",
	} {
		t.Run(name, func(t *testing.T) {
			importerstest.SameStoredRun(t, name, f, filepath.Join(real, filepath.FromSlash(rel)), real, false)
		})
	}
}
