package all_test

import (
	"path/filepath"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/all"
	"github.com/inspect-dev/inspect/importers/importerstest"
)

// TestDetect_Kimi: the real Kimi samples are detected as their own format
// by the whole registry (no other format claims them first), folder or
// journal alike.
func TestDetect_Kimi(t *testing.T) {
	tr := importerstest.Transcripts(t)
	for path, want := range map[string]string{
		"kimi-cli/with-tool-calls":                       "kimi-cli",
		"kimi-cli/with-tool-calls/wire.jsonl":            "kimi-cli",
		"kimi-cli/with-subagent-collapsed":               "kimi-cli",
		"kimi-cli/with-subagent-collapsed/context.jsonl": "kimi-cli",
		"kimi-code/sample-main":                          "kimi-code",
		"kimi-code/sample-main/state.json":               "kimi-code",
		"kimi-code/sample-main/agents/main/wire.jsonl":   "kimi-code",
	} {
		f, err := importers.Detect(all.Formats(), filepath.Join(tr, filepath.FromSlash(path)))
		if err != nil || f.Name() != want {
			t.Errorf("%s: detected %v, %v; want %s", path, f, err, want)
		}
	}
}
