package openaiagents

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
)

// TestStream_InterleavedTraces: three traces whose objects interleave (the
// hand-off, serial-loop and parallel agents-as-tools fixtures, one line of
// each in turn; the ingest document of one more) import, through the
// stream, as the runs Read's whole file gives, in the order they first
// appear.
func TestStream_InterleavedTraces(t *testing.T) {
	var files [][]string
	for _, name := range []string{"handoff.jsonl", "serial-loop.jsonl", "parallel-agents-as-tools.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, strings.Split(strings.TrimSpace(string(b)), "\n"))
	}
	var out strings.Builder
	for i := 0; ; i++ {
		any := false
		for _, lines := range files {
			if i < len(lines) {
				out.WriteString(lines[i] + "\n")
				any = true
			}
		}
		if !any {
			break
		}
	}
	dir := t.TempDir()
	lines := filepath.Join(dir, "mixed.jsonl")
	if err := os.WriteFile(lines, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{lines, filepath.Join("testdata", "handoff-ingest.json")} {
		ctx := context.Background()
		db := importerstest.Store(t)
		res, err := importers.Import(ctx, db, Format{}, path, importers.Options{})
		if err != nil {
			t.Fatal(err)
		}
		tree, err := Format{}.Read(ctx, path, importers.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != len(tree) || path == lines && len(res) != 3 {
			t.Fatalf("%s: %d runs streamed, %d read whole", path, len(res), len(tree))
		}
		db2 := importerstest.Store(t)
		for i, s := range tree {
			id, err := importers.Write(ctx, db2, s)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := importerstest.StoredRun(t, db, res[i].RunID, nil), importerstest.StoredRun(t, db2, id, nil); a != b {
				t.Errorf("%s run %d (%s): the stream and the whole file record different runs:\nstream:\n%.2000s\nwhole:\n%.2000s", path, i, s.Source.ID, a, b)
			}
			if res[i].Source != s.Source || res[i].Title != s.Title {
				t.Errorf("%s run %d: %+v %q, want %+v %q", path, i, res[i].Source, res[i].Title, s.Source, s.Title)
			}
		}
	}
}
