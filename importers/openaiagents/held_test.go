package openaiagents

import (
	"context"
	"runtime"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/record"
)

// peakWriter is a store that samples the live heap (after a collection)
// every few runs it starts, keeping the highest.
type peakWriter struct {
	importers.Writer
	runs int
	peak uint64
}

func (w *peakWriter) ImportRun(ctx context.Context, r *record.Run, nodes func(add func(*record.Node) error) error) error {
	if w.runs%16 == 0 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		w.peak = max(w.peak, ms.HeapAlloc)
	}
	w.runs++
	return w.Writer.ImportRun(ctx, r, nodes)
}

// TestStreamEach_HoldsLittlePerRun: importing a generated Agents SDK file
// of many traces (importerstest.BigAgents, 12 KB a trace, each a run) eight
// times as large as another adds, per run more, no more to the peak live
// heap than the first pass's count of the trace's spans and the few
// strings its session needs (its id, group, workflow name): no session is
// made before its trace is built, and no result is held (ImportEach).
// Before, each run added ≈ 1,080 B (now 180–225 B): the sessions made up front
// (importers.BuiltLater, with their closures), the first pass's traces
// and Import's results.
func TestStreamEach_HoldsLittlePerRun(t *testing.T) {
	if testing.Short() {
		t.Skip("imports 1,600 generated runs")
	}
	var runs [2]int
	var peak [2]uint64
	for i, size := range []int64{2 << 20, 16 << 20} {
		dir := t.TempDir()
		path, err := importerstest.BigAgents(dir, size)
		if err != nil {
			t.Fatal(err)
		}
		w := &peakWriter{Writer: importerstest.Store(t)}
		n := 0
		err = importers.ImportEach(context.Background(), w, Format{}, path, importers.Options{}, func(importers.Result) error {
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		runs[i], peak[i] = n, w.peak
	}
	perRun := (int64(peak[1]) - int64(peak[0])) / int64(runs[1]-runs[0])
	t.Logf("peak live heap %d KiB at %d runs, %d KiB at %d runs: %d B a run more", peak[0]>>10, runs[0], peak[1]>>10, runs[1], perRun)
	if runs[1] < 6*runs[0] {
		t.Fatalf("%d and %d runs: the larger file should hold eight times as many", runs[0], runs[1])
	}
	if perRun > 400 {
		t.Errorf("each run more adds %d B to the peak live heap: the import holds something per run beyond its span count and ids", perRun)
	}
}
