package geminicli_test

import (
	"testing"

	"github.com/inspect-dev/inspect/importers/geminicli"
	"github.com/inspect-dev/inspect/importers/importerstest"
)

// TestStoredRun_Generated: generated 2 MB sessions (importerstest.BigGemini:
// responses written again as they grow, parallel reads, invoke_agent
// sub-agents with their own chats, compressions, a resume; and
// BigGeminiJSON, the single-JSON file of earlier versions) record the run
// they recorded when chats were read whole (the goldens' digests were
// written by that importer), through the stream and through Read's tree
// alike.
func TestStoredRun_Generated(t *testing.T) {
	for name, gen := range map[string]func(string, int64) (string, error){"big-2MB": importerstest.BigGemini, "big-json-2MB": importerstest.BigGeminiJSON} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path, err := gen(dir, 2<<20)
			if err != nil {
				t.Fatal(err)
			}
			importerstest.SameStoredRun(t, name, geminicli.Format{}, path, dir, true)
			importerstest.StreamAndTree(t, geminicli.Format{}, path)
		})
	}
}
