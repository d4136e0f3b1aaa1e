package otlp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/importers/otlp"
)

// TestStream_InterleavedTraces: three traces whose lines interleave (the
// AI SDK, LangGraph map-reduce and Mastra fixtures, one line of each in
// turn) import, through the stream, as the three runs Read's whole file
// gives, in the order they first appear, each with the file's problems
// (a malformed line among them: line 14, after three lines of the first
// round and two of each of the next five, Mastra's trace being one line).
func TestStream_InterleavedTraces(t *testing.T) {
	var files [][]string
	for _, name := range []string{"aisdk.otlp.jsonl", "langgraph-mapreduce.otlp.jsonl", "mastra-workflow.otlp.jsonl"} {
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
		if i == 5 {
			out.WriteString("{not json\n")
		}
		if !any {
			break
		}
	}
	path := filepath.Join(t.TempDir(), "mixed.otlp.jsonl")
	if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db := importerstest.Store(t)
	res, err := importers.Import(ctx, db, otlp.Format{}, path, importers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tree, err := otlp.Format{}.Read(ctx, path, importers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || len(tree) != 3 {
		t.Fatalf("%d runs streamed, %d read whole; want 3", len(res), len(tree))
	}
	db2 := importerstest.Store(t)
	for i, s := range tree {
		id, err := importers.Write(ctx, db2, s)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := importerstest.StoredRun(t, db, res[i].RunID, nil), importerstest.StoredRun(t, db2, id, nil); a != b {
			t.Errorf("run %d (%s): the stream and the whole file record different runs:\nstream:\n%.2000s\nwhole:\n%.2000s", i, s.Source.ID, a, b)
		}
		if got := res[i].Report.Problems; len(got) != 1 || got[0].Line != 14 {
			t.Errorf("run %d: problems %+v, want the malformed line 14", i, got)
		}
		if res[i].Source.ID != s.Source.ID || res[i].Title != s.Title {
			t.Errorf("run %d: %+v %q, want %+v %q", i, res[i].Source, res[i].Title, s.Source, s.Title)
		}
	}
}
