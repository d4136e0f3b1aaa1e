package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/inspect-dev/inspect/importers/importerstest"
)

// TestImport_MemoryBounded: `inspect import`, as a whole process, of a
// generated session four times as large as another peaks at nearly the
// same RSS (GNU time's): it streams the file, keeping nothing of a step
// once recorded (DESIGN §13). The growth from 16 MB to 64 MB of input must
// stay under 24 MB of RSS; a format read whole grows by more than the
// input (codex before it streamed: 258 MB at 100 MB, 2,130 MB at 1 GB).
// BenchmarkImportMemory measures 100 MB to 1 GB.
func TestImport_MemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and imports 80 MB per format")
	}
	formats := []struct {
		name string
		gen  func(dir string, size int64) (string, error)
	}{{"codex", importerstest.BigCodex}}
	bin := os.Getenv("INSPECT_BENCH_BIN") // another build: the one before a change fails
	if bin == "" {
		bin = builtInspect(t)
	}
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			var rss [2]int64
			for i, size := range []int64{16 << 20, 64 << 20} {
				dir := t.TempDir()
				path, err := f.gen(dir, size)
				if err != nil {
					t.Fatal(err)
				}
				m := runProcess(t, []int{0}, bin, "import", "--format", f.name, "--db", filepath.Join(dir, "runs.db"), path)
				rss[i] = m.rss
				os.RemoveAll(dir)
			}
			t.Logf("peak RSS %d MB at 16 MB, %d MB at 64 MB", rss[0]>>20, rss[1]>>20)
			if grew := rss[1] - rss[0]; grew > 24<<20 {
				t.Errorf("peak RSS grew by %d MB from 16 MB to 64 MB of input (%d → %d MB): the import holds what it read", grew>>20, rss[0]>>20, rss[1]>>20)
			}
		})
	}
}
