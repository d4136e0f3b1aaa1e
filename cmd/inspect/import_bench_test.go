package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/importers/importerstest"
)

// BenchmarkImportMemory runs `inspect import` as a whole process on
// generated sessions of 100 MB, 300 MB and 1 GB in the shapes of the real
// Claude Code and Kimi CLI samples, of the Codex, Kimi Code, OTLP (JSON
// lines, one pretty-printed JSON document, one protobuf request,
// OpenLLMetry's one-span traces) and Agents SDK fixtures and of the
// harness's Gemini CLI sessions (importerstest.BigClaudeCode, BigKimiCLI,
// BigCodex, BigKimiCode, BigOTLP, BigOTLPDoc, BigOTLPProto, BigOpenLLMetry,
// BigAgents, BigGemini; gemini-cli-json is BigGeminiJSON, the single-JSON
// file of earlier Gemini CLI versions) and reports its peak RSS as GNU time
// measures it (DESIGN §13: memory stays bounded on a file of any size),
// its wall and CPU time (fastest run) and the throughput. The sessions are
// written under os.TempDir() and deleted after each size; a size the disk
// cannot hold twice over (the session and the database) is skipped. INSPECT_BENCH_BIN names another
// build of inspect to measure instead (the one before a change). Run:
//
//	go test ./cmd/inspect -run '^$' -bench 'ImportMemory' -benchtime 1x -timeout 2h
//	go test ./cmd/inspect -run '^$' -bench 'ImportMemory/kimi-cli/1GB' -benchtime 1x
func BenchmarkImportMemory(b *testing.B) {
	formats := []struct {
		name string
		gen  func(dir string, size int64) (string, error)
	}{{"claude-code", importerstest.BigClaudeCode}, {"kimi-cli", importerstest.BigKimiCLI}, {"codex", importerstest.BigCodex}, {"kimi-code", importerstest.BigKimiCode}, {"otlp", importerstest.BigOTLP},
		{"otlp-doc", importerstest.BigOTLPDoc}, {"otlp-proto", importerstest.BigOTLPProto}, {"otlp-openllmetry", importerstest.BigOpenLLMetry},
		{"openai-agents", importerstest.BigAgents}, {"gemini-cli", importerstest.BigGemini}, {"gemini-cli-json", importerstest.BigGeminiJSON}}
	sizes := []struct {
		name  string
		bytes int64
	}{{"100MB", 100 << 20}, {"300MB", 300 << 20}, {"1GB", 1 << 30}}
	for _, f := range formats {
		b.Run(f.name, func(b *testing.B) {
			for _, size := range sizes {
				b.Run(size.name, func(b *testing.B) {
					bin := os.Getenv("INSPECT_BENCH_BIN") // another build, to measure before a change
					if bin == "" {
						bin = builtInspect(b)
					}
					var st syscall.Statfs_t
					if err := syscall.Statfs(os.TempDir(), &st); err == nil && int64(st.Bavail)*st.Bsize < 3*size.bytes {
						b.Skipf("%s has %d MB free; a %s session and its database need about %d MB", os.TempDir(), int64(st.Bavail)*st.Bsize>>20, size.name, 3*size.bytes>>20)
					}
					dir, err := os.MkdirTemp("", "inspect-import-bench")
					if err != nil {
						b.Fatal(err)
					}
					defer os.RemoveAll(dir)
					t0 := time.Now()
					path, err := f.gen(dir, size.bytes)
					if err != nil {
						b.Fatal(err)
					}
					b.Logf("generated %s in %s", size.name, time.Since(t0).Round(time.Millisecond))
					best := measured{wall: time.Hour, cpu: time.Hour}
					b.ResetTimer()
					for i := 0; b.Loop(); i++ {
						db := filepath.Join(dir, fmt.Sprintf("runs-%d.db", i))
						m := runProcess(b, []int{0}, bin, "import", "--format", formatOf(f.name), "--db", db, path)
						best.wall, best.rss, best.cpu = min(best.wall, m.wall), max(best.rss, m.rss), min(best.cpu, m.cpu)
						for _, p := range []string{db, db + "-wal", db + "-shm"} {
							os.Remove(p)
						}
					}
					b.ReportMetric(float64(best.rss)/(1<<20), "peak-RSS-MB")
					b.ReportMetric(best.wall.Seconds(), "wall-s")
					b.ReportMetric(best.cpu.Seconds(), "cpu-s")
					b.ReportMetric(float64(size.bytes)/(1<<20)/best.wall.Seconds(), "MB/s")
				})
			}
		})
	}
}

// formatOf is the --format of a benchmark's name: gemini-cli-json is
// gemini-cli's single-JSON file; otlp-doc and the other shapes of OTLP
// are otlp.
func formatOf(name string) string {
	if name == "gemini-cli-json" {
		return "gemini-cli"
	}
	if strings.HasPrefix(name, "otlp-") {
		return "otlp"
	}
	return name
}
