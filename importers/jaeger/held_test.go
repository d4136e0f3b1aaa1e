package jaeger

import (
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/inspect-dev/inspect/store"
)

// liveHeap is the heap live after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestImport_HoldsLittlePerRun: an import of many traces keeps no list of
// the runs it recorded (the summary counts them; OnRun is told of each):
// what an import of 1,400 traces leaves live with its summary is, per trace
// more, no more than an import of 100 leaves (a trace's id and a few bytes:
// the ids seen, so a trace two windows list is fetched once, go with the
// import). Before, the summary's list of runs kept 390–640 B a run (now
// ≈ 100 B, ± 150 B of noise: the median of three is
// compared).
func TestImport_HoldsLittlePerRun(t *testing.T) {
	// the median of three measures: one is ± 150 B a trace of noise
	var per [3]int64
	for k := range per {
		per[k] = heldPerRun(t)
	}
	slices.Sort(per[:])
	perRun := per[1]
	t.Logf("an import leaves %d B a trace more live (median of %d, %d, %d)", perRun, per[0], per[1], per[2])
	if perRun > 275 {
		t.Errorf("an import leaves %d B a trace more live with its summary (median of %d, %d, %d): it keeps something of each run it recorded", perRun, per[0], per[1], per[2])
	}
}

// heldPerRun is what an import of 1,400 traces leaves live, per trace more
// than an import of 100 leaves.
func heldPerRun(t *testing.T) int64 {
	var grew [3]int64
	sizes := [3]int{100, 100, 1400} // one a minute: a day holds 1,440; the first warms up
	for i, n := range sizes {
		before := liveHeap()
		srv := httptest.NewServer(newFake(traces(n, "main")...))
		db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "runs.db"))
		if err != nil {
			t.Fatal(err)
		}
		im := importer(srv, db, 50)
		told := 0
		im.OnRun = func(Run) { told++ }
		sum, err := im.Import(t.Context(), query())
		if err != nil || sum.Imported != n || told != n {
			t.Fatalf("imported %d, told of %d, %v; want %d", sum.Imported, told, err, n)
		}
		// The server, its traces and the store go: what stays is the summary's.
		srv.Close()
		db.Close()
		srv, db, im = nil, nil, nil
		grew[i] = int64(liveHeap()) - int64(before)
		runtime.KeepAlive(sum)
	}
	perRun := (grew[2] - grew[1]) / int64(sizes[2]-sizes[1])
	t.Logf("an import leaves %d KiB live after %d traces, %d KiB after %d: %d B a trace more", grew[1]>>10, sizes[1], grew[2]>>10, sizes[2], perRun)
	return perRun
}
