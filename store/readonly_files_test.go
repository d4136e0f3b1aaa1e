package store

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenReadOnly_LeavesNoFile: a reader of a database kept as one file
// removes the -wal and -shm its open created when it closes, and leaves
// them while a writer has the file open: the writer's recording is kept
// and readable, and the writer's close then removes them.
func TestOpenReadOnly_LeavesNoFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs.db")
	w, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	recordOne(t, w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	oneFile(t, path)
	besides := func() (n int) {
		for _, s := range []string{"-wal", "-shm"} {
			if _, err := os.Stat(path + s); err == nil {
				n++
			}
		}
		return n
	}
	runs := func(db *DB) int {
		t.Helper()
		rs, err := db.Runs(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(rs)
	}

	// Alone.
	r, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if runs(r) != 1 {
		t.Fatal("the reader does not see the run")
	}
	if besides() == 0 {
		t.Fatal("no -wal or -shm while the reader is open: the test proves nothing")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if n := besides(); n != 0 {
		t.Fatalf("the reader left %d files beside the database", n)
	}
	if _, err := r.Runs(ctx, 0); err == nil {
		t.Fatal("a closed reader still reads")
	}

	// A writer opens while the reader is open; the reader closes first.
	r, err = OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	w, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	recordOne(t, w)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("the reader's close took the writer's -wal (%v)", err)
	}
	recordOne(t, w)
	if runs(w) != 3 {
		t.Fatal("the writer lost runs after the reader closed")
	}
	r, err = OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if runs(r) != 3 {
		t.Fatal("a new reader does not see the writer's runs")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Fatalf("a reader opened on the writer's -wal removed it: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err = OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if runs(r) != 3 {
		t.Fatal("runs lost")
	}
}

// oneFile folds path's -wal into it, leaving the file alone.
func oneFile(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + s); err == nil {
			t.Fatalf("%s%s is left after a checkpoint", path, s)
		}
	}
}
