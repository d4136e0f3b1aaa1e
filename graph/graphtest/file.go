package graphtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/store"
)

// RealisticFile returns a database file holding one RecordRealistic run
// of n nodes and the run's id, recording it on first use. The files are
// kept in $TMPDIR/inspect-bench between processes, named by Realistic's
// and the schema's versions (1M nodes take a few minutes to record, about
// 1 GB); delete the folder to record them again. Benchmarks share them.
func RealisticFile(tb testing.TB, n int) (path, id string) {
	tb.Helper()
	dir := filepath.Join(os.TempDir(), "inspect-bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	path = filepath.Join(dir, fmt.Sprintf("realistic-g%d-s%d-%d.db", RealisticVersion, store.SchemaVersion(), n))
	ctx := context.Background()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		tmp := path + ".tmp"
		os.Remove(tmp)
		db, err := store.Open(ctx, tmp)
		if err != nil {
			tb.Fatal(err)
		}
		t0 := time.Now()
		if _, err := RecordRealistic(ctx, db, n); err != nil {
			tb.Fatal(err)
		}
		if err := db.Close(); err != nil {
			tb.Fatal(err)
		}
		tb.Logf("recorded %d nodes in %s", n, time.Since(t0).Round(time.Millisecond))
		if err := os.Rename(tmp, path); err != nil {
			tb.Fatal(err)
		}
	}
	db, err := store.Open(ctx, path)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	id, err = db.ResolveRun(ctx, "latest")
	if err != nil {
		tb.Fatal(err)
	}
	return path, id
}
