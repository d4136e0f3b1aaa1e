package otlp_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
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

// TestStream_DocumentsAsLines: one pretty-printed JSON document and one
// protobuf request holding 40 traces (the LangGraph supervisor fixture
// again and again, 2,400 spans in one spans array) import, through the
// stream, as the same 40 runs as the JSON lines file of the same spans
// (a span a line), in the same order, each recorded the same.
func TestStream_DocumentsAsLines(t *testing.T) {
	ctx := context.Background()
	lines, doc, proto, err := importerstest.OTLPShapes(t.TempDir(), 40)
	if err != nil {
		t.Fatal(err)
	}
	db := importerstest.Store(t)
	want, err := importers.Import(ctx, db, otlp.Format{}, lines, importers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 40 {
		t.Fatalf("the lines file imported as %d runs, want 40", len(want))
	}
	for _, path := range []string{doc, proto} {
		t.Run(filepath.Ext(path), func(t *testing.T) {
			db2 := importerstest.Store(t)
			got, err := importers.Import(ctx, db2, otlp.Format{}, path, importers.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d runs, want the lines file's %d", len(got), len(want))
			}
			for i := range got {
				if got[i].Source.ID != want[i].Source.ID {
					t.Fatalf("run %d is %s, want %s", i, got[i].Source.ID, want[i].Source.ID)
				}
				a := strings.Split(importerstest.StoredRun(t, db2, got[i].RunID, map[string]string{path: "FILE"}), "\n")
				b := strings.Split(importerstest.StoredRun(t, db, want[i].RunID, map[string]string{lines: "FILE"}), "\n")
				for j := range max(len(a), len(b)) {
					if j >= len(a) || j >= len(b) || a[j] != b[j] {
						t.Fatalf("run %d (%s) is recorded otherwise than from the lines file, at line %d of %d:\n%.3000s\nlines:\n%.3000s", i, got[i].Source.ID, j, len(b), strings.Join(a[j:], "\n"), strings.Join(b[j:], "\n"))
					}
				}
			}
		})
	}
}

// TestStream_OpenLLMetryJoined: OpenLLMetry's one-span traces, five runs
// of its LangGraph supervisor a minute apart with the AI SDK's trace
// between the second and the third, import through the stream (the joins
// planned in the first pass, each run's spans held in the second until
// its last has come) as the runs Read's whole file and regroup give, in
// the same order, each recorded the same and saying its nesting was
// inferred.
func TestStream_OpenLLMetryJoined(t *testing.T) {
	dir := t.TempDir()
	big, err := importerstest.BigOpenLLMetry(dir, 5*417_000) // five copies
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(big)
	if err != nil {
		t.Fatal(err)
	}
	aisdk, err := os.ReadFile(filepath.Join("testdata", "aisdk.otlp.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	per := len(lines) / 5
	path := filepath.Join(dir, "mixed.otlp.jsonl")
	mixed := strings.Join(lines[:2*per], "") + string(aisdk) + strings.Join(lines[2*per:], "")
	if err := os.WriteFile(path, []byte(mixed), 0o644); err != nil {
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
	if len(res) != len(tree) || len(tree) < 6 {
		t.Fatalf("%d runs streamed, %d read whole; want the same, 6 or more", len(res), len(tree))
	}
	db2 := importerstest.Store(t)
	joined := 0
	for i, s := range tree {
		id, err := importers.Write(ctx, db2, s)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := importerstest.StoredRun(t, db, res[i].RunID, nil), importerstest.StoredRun(t, db2, id, nil); a != b {
			t.Errorf("run %d (%s): the stream and the whole file record different runs:\nstream:\n%.2000s\nwhole:\n%.2000s", i, s.Source.ID, a, b)
		}
		if res[i].Source.ID != s.Source.ID || !reflect.DeepEqual(res[i].Report.Skipped, s.Report.Skipped) {
			t.Errorf("run %d: %s %v, want %s %v", i, res[i].Source.ID, res[i].Report.Skipped, s.Source.ID, s.Report.Skipped)
		}
		if s.Report.Skipped["spans that were traces of their own, with no parent (OpenLLMetry), joined into this run by service and time: their nesting is inferred from their times"] > 0 {
			joined++
		}
	}
	if joined != 5 {
		t.Errorf("%d runs joined from one-span traces, want the 5 copies", joined)
	}
}
