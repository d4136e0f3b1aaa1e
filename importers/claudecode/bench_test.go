package claudecode_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/claudecode"
	"github.com/inspect-dev/inspect/store"
)

// bigSession writes a session of about mb megabytes in Claude Code's shape:
// turns of six parallel Reads (8 KiB results, with toolUseResult copies as
// the CLI writes them), a Task with its own sub-agent file, hook progress
// lines, and a compaction every 40 turns (the CLI compacts as the context
// fills, so what the model sees stays bounded).
func bigSession(b *testing.B, mb int) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "projects", "-big")
	m := &lines{t: &testing.T{}, session: "big"}
	if err := os.MkdirAll(filepath.Join(dir, "big", "subagents"), 0o755); err != nil {
		b.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "big.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(out)
	content := strings.Repeat("lorem ipsum dolor sit amet, consectetur adipiscing elit\n", 8<<10/56)
	var size int
	flush := func() {
		for _, l := range m.out {
			size += len(l) + 1
			w.WriteString(l)
			w.WriteByte('\n')
		}
		m.out = m.out[:0]
	}
	sec := 0.0
	for turn := 0; size < mb<<20; turn++ {
		sec += 10
		m.user(sec, fmt.Sprintf("turn %d: read the six files and check the notes", turn))
		var blocks []map[string]any
		for i := 0; i < 6; i++ {
			blocks = append(blocks, use(fmt.Sprintf("r%d-%d", turn, i), "Read", map[string]any{"file_path": fmt.Sprintf("/repo/f%d-%d.go", turn, i)}))
		}
		m.asst(sec+1, fmt.Sprintf("m%d-a", turn), 3, 20000, 500, 200, blocks...)
		for i := 0; i < 6; i++ {
			m.result(sec+2, fmt.Sprintf("r%d-%d", turn, i), content, false, map[string]any{"type": "text", "file": map[string]any{"content": content}})
			p := m.env("progress", sec+2)
			p["data"] = map[string]any{"type": "hook_progress", "hookEvent": "PostToolUse"}
			m.put(p)
		}
		agent := fmt.Sprintf("a%07x", turn)
		m.asst(sec+3, fmt.Sprintf("m%d-b", turn), 3, 24000, 500, 100, task("t"+agent, "notes", "find the notes of turn "+fmt.Sprint(turn), "Explore"))
		sub := &lines{t: m.t, session: "big", agent: agent}
		sub.user(sec+3.1, "find the notes of turn "+fmt.Sprint(turn))
		sub.asst(sec+4, "s"+agent, 3, 0, 3000, 50, use("g"+agent, "Grep", map[string]any{"pattern": "notes"}))
		sub.result(sec+5, "g"+agent, content[:2000], false, nil)
		sub.asst(sec+6, "s2"+agent, 3, 3000, 100, 80, text("the notes say nothing new"))
		sf, err := os.Create(filepath.Join(dir, "big", "subagents", "agent-"+agent+".jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range sub.out {
			size += len(l) + 1
			fmt.Fprintln(sf, l)
		}
		sf.Close()
		m.result(sec+7, "t"+agent, "the notes say nothing new", false, map[string]any{"status": "completed", "agentId": agent})
		m.asst(sec+8, fmt.Sprintf("m%d-c", turn), 3, 25000, 200, 150, text("done with turn "+fmt.Sprint(turn)))
		if turn%40 == 39 {
			cb := m.env("system", sec+9)
			cb["subtype"] = "compact_boundary"
			m.put(cb)
			s := m.env("user", sec+9.5)
			s["isCompactSummary"] = true
			s["message"] = map[string]any{"role": "user", "content": "summary of the turns so far"}
			m.put(s)
		}
		flush()
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	out.Close()
	return filepath.Join(dir, "big.jsonl")
}

// decodeAll decodes every line of the session and its sub-agent files as
// JSON, the floor an import is measured against.
func decodeAll(b *testing.B, path string) {
	files, _ := filepath.Glob(filepath.Join(strings.TrimSuffix(path, ".jsonl"), "subagents", "*.jsonl"))
	for _, p := range append([]string{path}, files...) {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var v any
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				b.Fatal(err)
			}
		}
		f.Close()
	}
}

// BenchmarkImport100MB imports a 100 MB session (read, mapped and written
// into a store file) beside decoding its JSON lines alone (issue 15: ≤ 3×),
// and reports the heap in use after the read (bounded memory):
//
//	go test ./importers/claudecode -run '^$' -bench Import -benchtime 3x
func BenchmarkImport100MB(b *testing.B) {
	path := bigSession(b, 100)
	b.Run("decode", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			decodeAll(b, path)
		}
	})
	b.Run("import", func(b *testing.B) {
		ctx := context.Background()
		var peak uint64
		for i := 0; i < b.N; i++ {
			db, err := store.Open(ctx, filepath.Join(b.TempDir(), "runs.db"))
			if err != nil {
				b.Fatal(err)
			}
			ss, err := claudecode.Format{}.Read(ctx, path, importers.Options{})
			if err != nil {
				b.Fatal(err)
			}
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak {
				peak = ms.HeapInuse
			}
			if _, err := importers.Write(ctx, db, ss[0]); err != nil {
				b.Fatal(err)
			}
			db.Close()
		}
		b.ReportMetric(float64(peak)/(1<<20), "MiB-session")
	})
}
