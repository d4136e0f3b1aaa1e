package main

import (
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestReaders_LeaveNoFile: every command that only reads, run as a real
// process on a database committed as one file in a fresh folder (the CI
// baseline, of an older schema, and a file of the current schema), leaves
// no file beside it (before: each left FILE-wal and FILE-shm, a dirty
// checkout) and the file's bytes unchanged.
func TestReaders_LeaveNoFile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	dir := t.TempDir()
	ci := filepath.Join(dir, "ci")
	if err := os.Mkdir(ci, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, ciBaseline, filepath.Join(ci, "baseline.db"))
	cur := filepath.Join(ci, "current.db")
	recordInto(t, cur, "fanout-compact", "0123456789ab")
	checkpointToOneFile(t, cur)
	before := listDir(t, ci)
	if !slices.Equal(before, []string{"baseline.db", "current.db"}) {
		t.Fatalf("the folder holds %v before the reads: the test proves nothing", before)
	}
	sums := map[string][32]byte{}
	for _, name := range before {
		sums[name] = sha(t, filepath.Join(ci, name))
	}
	for _, db := range []string{"ci/baseline.db", "ci/current.db"} {
		for _, args := range [][]string{
			{"diff", "ci/baseline.db:latest", "ci/current.db:latest"},
			{"graph", "latest"},
			{"audit", "latest"},
			{"runs"},
			{"show", "latest", "n1"},
			{"timeline", "latest"},
			{"cache", "latest"},
		} {
			argv, _ := json.Marshal(append(args, "--db", db))
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "INSPECT_TEST_ARGS="+string(argv), "OPENAI_API_KEY=", "NO_COLOR=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("inspect %v --db %s: %v\n%s", args, db, err, out)
			}
			if after := listDir(t, ci); !slices.Equal(after, before) {
				t.Fatalf("inspect %v --db %s left %v beside the databases (before: %v)", args, db, after, before)
			}
		}
	}
	for name, sum := range sums {
		if sha(t, filepath.Join(ci, name)) != sum {
			t.Errorf("reading changed %s", name)
		}
	}
}

// checkpointToOneFile folds path's -wal into it, as a file is before it is
// committed: the last connection's close removes the -wal and -shm.
func checkpointToOneFile(t *testing.T, path string) {
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
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
