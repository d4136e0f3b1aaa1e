package importers_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
)

// manyRuns is a Streamer of n sessions, each built when written
// (importers.BuiltLater, as the Agents SDK and OTLP importers build a
// trace's run), each holding big bytes of its own: a system prompt, tool
// definitions and a request body of messages.
type manyRuns struct {
	n   int
	big int
}

func (manyRuns) Name() string       { return "test-format" }
func (manyRuns) Detect(string) bool { return false }
func (f manyRuns) Read(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
	return importers.Collected(f.Stream(ctx, path, opt))
}

func (f manyRuns) Stream(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
	out := make([]*importers.Session, f.n)
	for i := range out {
		s := &importers.Session{Source: src(fmt.Sprint("trace-", i))}
		importers.BuiltLater(s, func() (*importers.Session, error) {
			text := func(what string) string { return fmt.Sprintf("%s of run %d: %s", what, i, strings.Repeat("x", f.big)) }
			body := fmt.Sprintf(`{"model":"m1","messages":[{"role":"user","content":%q}]}`, text("the request"))
			l := llm(1, 2, "done")
			l.LLM.Request = []byte(body)
			return &importers.Session{Source: s.Source, Title: fmt.Sprint("run ", i), Started: at(0), Ended: at(3),
				Project: record.Project{Files: []record.File{{Path: "AGENTS.md", Content: text("the instructions")}}},
				Trunk: &importers.Conversation{Agent: "main", Started: at(0), Ended: at(3), System: text("the system prompt"),
					Tools: []importers.ToolDef{{Name: "read", Description: text("the tool")}},
					Steps: []importers.Step{user(0, "go"), l, final(3, "done")}}}, nil
		})
		out[i] = s
	}
	return out, nil
}

// heldWriter is a store that measures the heap live at each run it
// starts (after a collection).
type heldWriter struct {
	importers.Writer
	heap []uint64
}

func (w *heldWriter) ImportRun(ctx context.Context, r *record.Run, nodes func(add func(*record.Node) error) error) error {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w.heap = append(w.heap, ms.HeapAlloc)
	return w.Writer.ImportRun(ctx, r, nodes)
}

// TestImport_HoldsLittlePerRun: importing a file of many runs keeps
// nothing of a run once written but its result line (docs/import.md: a
// few hundred bytes a run), neither while it imports the next ones nor in
// the results it returns — each run here holds 4 × 32 KiB of texts. Before,
// every session stayed in Import's list until the end and each result
// kept the run's redactor (the last request's messages).
func TestImport_HoldsLittlePerRun(t *testing.T) {
	const runs, big = 120, 32 << 10
	w := &heldWriter{Writer: openDB(t)}
	res, err := importers.Import(context.Background(), w, manyRuns{n: runs, big: big}, "many.jsonl", importers.Options{})
	if err != nil || len(res) != runs {
		t.Fatalf("%d results, %v", len(res), err)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	perRun := func(from, to uint64, n int) int64 { return (int64(to) - int64(from)) / int64(n) }
	during := perRun(w.heap[20], w.heap[runs-1], runs-21)
	after := perRun(w.heap[20], ms.HeapAlloc, runs-20)
	t.Logf("held per run: %d bytes while importing, %d bytes in the results", during, after)
	if during > 2<<10 || after > 2<<10 {
		t.Errorf("the import holds %d bytes a run while importing, %d after (each run's texts are %d KiB): it keeps what it wrote", during, after, 4*big>>10)
	}
	runtime.KeepAlive(res)
}
