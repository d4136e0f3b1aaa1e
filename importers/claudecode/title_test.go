package claudecode_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/claudecode"
	"github.com/inspect-dev/inspect/importers/importerstest"
)

// TestTitle_FirstTask: an imported run's title is its first task, as the
// user typed it: a slash command recorded as <command-message>…
// <command-name>…<command-args>… (Claude Code 2.0 and 2.1 sessions whose
// first turn ran /workflows:review or /workflows:plan) reads "/name args",
// not its tags.
func TestTitle_FirstTask(t *testing.T) {
	real := importerstest.Transcripts(t)
	for _, tt := range []struct{ rel, want string }{
		{"claude-code/entire/2.0.76-background8/f8/10e13fce67/0/full.jsonl", "/workflows:review https://github.com/entireio/cli/pull/6/files"},
		{"claude-code/entire/2.1.4-fanout-errors/d3/7d736cbc10/0/full.jsonl", "/workflows:plan read as a input the file posthog-cli-telemetry-implementation as a entry point"},
		{"claude-code/tool_heavy.jsonl", "start phoenix in background"},
	} {
		s := importerstest.ReadOne(t, claudecode.Format{}, filepath.Join(real, filepath.FromSlash(tt.rel)), importers.Options{})
		if len(s.Tasks) == 0 || !strings.HasPrefix(s.Tasks[0], tt.want) {
			first := ""
			if len(s.Tasks) > 0 {
				first = s.Tasks[0]
			}
			t.Errorf("%s: first task %.120q, want it to start %q", tt.rel, first, tt.want)
		}
	}
}
