package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers/importerstest"
)

// TestImport_MemoryBounded: `inspect import`, as a whole process, of a
// generated session four times as large as another (eight times, for the
// Agents SDK file's many runs) peaks at nearly the
// same RSS (GNU time's): it streams the file, keeping nothing of a step
// once recorded (DESIGN §13). The growth from 16 MB to 64 MB of input (4
// to 16 MB of Agents SDK traces, each a run) must stay under 24 MB of RSS
// (the least peak of up to three tries at each size: noise only adds);
// a format read whole grows by more than the input (before they streamed,
// 16 → 64 MB: codex 84 → 181 MB, OTLP 82 → 187 MB, Kimi Code 86 → 184 MB,
// Gemini CLI 100 → 229 MB and its single-JSON file 109 → 361 MB, one
// OTLP/JSON document 119 → 324 MB, one OTLP/protobuf request 114 → 314 MB,
// OpenLLMetry's one-span traces 81 → 179 MB; Agents SDK 4 → 16 MB: 53 →
// 97 MB, while it read whole).
// BenchmarkImportMemory measures 100 MB to 1 GB.
func TestImport_MemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and imports 80 MB per format")
	}
	formats := []struct {
		name  string
		gen   func(dir string, size int64) (string, error)
		small int64 // the smaller input, in MiB
		times int64 // the larger is this many times it
	}{{"codex", importerstest.BigCodex, 16, 4}, {"otlp", importerstest.BigOTLP, 16, 4}, {"kimi-code", importerstest.BigKimiCode, 16, 4},
		// one OTLP document, pretty-printed JSON and protobuf; OpenLLMetry's one-span traces
		{"otlp-doc", importerstest.BigOTLPDoc, 16, 4}, {"otlp-proto", importerstest.BigOTLPProto, 16, 4}, {"otlp-openllmetry", importerstest.BigOpenLLMetry, 16, 4},
		// 12 KB traces, each a run: 2,800 runs at 32 MB, eight times as
		// many as at 4 MB (what grows is per run)
		{"openai-agents", importerstest.BigAgents, 4, 8},
		{"gemini-cli", importerstest.BigGemini, 16, 4}, {"gemini-cli-json", importerstest.BigGeminiJSON, 16, 4}}
	bin := os.Getenv("INSPECT_BENCH_BIN") // another build: the one before a change fails
	if bin == "" {
		bin = builtInspect(t)
	}
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			sizes := [2]int64{f.small << 20, f.times * f.small << 20}
			var rss [2]int64 // the least peak of the tries at each size
			var tries []string
			// A peak is noise only upward (a GC cycle late on a loaded
			// machine: once 63 → 93 MB in CI for a format that grows by
			// 2–3 MB run to run), and a format that holds what it read
			// grows past the bar at every try: up to three tries, the
			// least peak at each size kept.
			for try := 0; try < 3; try++ {
				for i, size := range sizes {
					dir := t.TempDir()
					path, err := f.gen(dir, size)
					if err != nil {
						t.Fatal(err)
					}
					m := runProcess(t, []int{0}, bin, "import", "--format", formatOf(f.name), "--db", filepath.Join(dir, "runs.db"), path)
					if try == 0 || m.rss < rss[i] {
						rss[i] = m.rss
					}
					os.RemoveAll(dir)
				}
				tries = append(tries, fmt.Sprintf("%d → %d MB", rss[0]>>20, rss[1]>>20))
				if rss[1]-rss[0] <= 24<<20 {
					break
				}
			}
			t.Logf("peak RSS %d MB at %d MB, %d MB at %d MB (least of each size after each try: %s)", rss[0]>>20, f.small, rss[1]>>20, f.times*f.small, strings.Join(tries, ", "))
			if grew := rss[1] - rss[0]; grew > 24<<20 {
				t.Errorf("peak RSS grew by %d MB from %d MB to %d MB of input (%d → %d MB, the least of %d tries at each size): the import holds what it read", grew>>20, f.small, f.times*f.small, rss[0]>>20, rss[1]>>20, len(tries))
			}
		})
	}
}
