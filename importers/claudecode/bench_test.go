package claudecode_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/claudecode"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/store"
)

// bigSession writes a 100 MB session in Claude Code's shape
// (importerstest.BigClaudeCode).
func bigSession(b *testing.B, mb int) string {
	b.Helper()
	path, err := importerstest.BigClaudeCode(b.TempDir(), int64(mb)<<20)
	if err != nil {
		b.Fatal(err)
	}
	return path
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

// BenchmarkImport100MB imports a 100 MB session (read as it streams,
// mapped and written into a store file) beside decoding its JSON lines
// alone (issue 15: ≤ 3×). Memory is measured on the whole process by
// cmd/inspect's BenchmarkImportMemory.
//
//	go test ./importers/claudecode -run '^$' -bench Import -benchtime 3x
func BenchmarkImport100MB(b *testing.B) {
	path := bigSession(b, 100)
	b.Run("decode", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			decodeAll(b, path)
		}
	})
	b.Run("import", func(b *testing.B) { importBench(b, path) })
	// the same session reading Go source (this repository's store) in
	// place of prose: names and assignments ("key", "token", "api",
	// "secret") everywhere, the redactor's rules at work on every result
	code := goSource(b, 8<<10)
	codePath, err := importerstest.BigClaudeCodeText(b.TempDir(), 100<<20, code)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("import-code", func(b *testing.B) { importBench(b, codePath) })
}

func importBench(b *testing.B, path string) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		db, err := store.Open(ctx, filepath.Join(b.TempDir(), "runs.db"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := importers.Import(ctx, db, claudecode.Format{}, path, importers.Options{}); err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
}

// goSource is n bytes of this repository's Go source.
func goSource(b *testing.B, n int) string {
	var s strings.Builder
	files, _ := filepath.Glob(filepath.Join("..", "..", "store", "*.go"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		s.Write(data)
		if s.Len() >= n {
			break
		}
	}
	if s.Len() < n {
		b.Fatalf("only %d bytes of Go source", s.Len())
	}
	return s.String()[:n]
}
