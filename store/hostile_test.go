package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/internal/tmpfs"
	"github.com/inspect-dev/inspect/record"
)

// Crafted and damaged files (issue 11, defects 8, 9, 10, 12): each is
// refused with "the file is damaged", or read within bounds, never a hang.

// recordOne writes a finished run with an llm node whose request has a
// message chain, and closes the database.
func recordOne(t *testing.T, db *DB) {
	t.Helper()
	ctx := context.Background()
	rec := newRun(t, db)
	for _, n := range everyKind() {
		if err := rec.AddNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Finish(ctx, record.StatusOK, "", t0.Add(8*time.Second)); err != nil {
		t.Fatal(err)
	}
}

// craft runs SQL on the closed database file at path with a plain
// connection, as a hostile or broken program would.
func craft(t *testing.T, path string, stmts ...string) {
	t.Helper()
	raw, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range stmts {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestRequest_ChainLoopIsBounded: `UPDATE chain SET prev=id WHERE prev=0`
// made every rebuild recurse for ever (a temp file growing at 100 MB/s);
// the walk now stops at the recorded size and says the file is damaged.
func TestRequest_ChainLoopIsBounded(t *testing.T) {
	db, path := openTemp(t)
	recordOne(t, db)
	db.Close()
	craft(t, path, `UPDATE chain SET prev=id WHERE prev=0`)
	ro, err := OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails instead of blocking the suite
	defer cancel()
	if _, err = ro.Request(ctx, mustResolve(t, ro), 2); err == nil || !strings.Contains(err.Error(), "the database is damaged") {
		t.Fatalf("Request(looping chain) = %v, want 'the database is damaged'", err)
	}
}

func mustResolve(t *testing.T, db *DB) string {
	t.Helper()
	id, err := db.ResolveRun(context.Background(), "latest")
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestOpen_RefusesObjectsWeDidNotCreate: a recursive view in place of runs
// hung `inspect runs`; a trigger on runs wiped every earlier run at the next
// `inspect run`; an unknown table is someone else's. Readers and writers
// refuse all three at open, saying the file is damaged.
func TestOpen_RefusesObjectsWeDidNotCreate(t *testing.T) {
	tests := []struct {
		name  string
		craft []string
		want  string
	}{
		{"recursive view in place of runs", []string{
			`ALTER TABLE runs RENAME TO runs_kept`,
			`CREATE VIEW runs AS WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM r)
				SELECT printf('%012d', x) AS id, x AS started_ns, NULL AS ended_ns, 'ok' AS status, '' AS error, '[]' AS tasks, '' AS project,
				'{}' AS options, '' AS base_url, '[]' AS models, '' AS writer_host, 0 AS writer_pid, '' AS writer_tag,
				'inspect' AS source_format, '' AS source_version, '' AS source_id, '' AS source_path FROM r`,
		}, `"runs" is a view where inspect keeps a table`},
		{"trigger that wipes runs", []string{
			`CREATE TRIGGER wipe AFTER INSERT ON runs BEGIN DELETE FROM nodes; END`,
		}, `a trigger "wipe" on runs that inspect did not create`},
		{"unknown table", []string{`CREATE TABLE extra (x)`}, `a table "extra" inspect did not create`},
		{"missing index", []string{`DROP INDEX chain_lookup`}, `its index "chain_lookup" is missing`},
		// issue 23, item 4: the same names and kinds, other definitions.
		// A node's attempts read as a 300 MB blob: show took 2 GB.
		{"generated column in place of one of ours", []string{
			`PRAGMA writable_schema = ON`,
			`UPDATE sqlite_master SET sql = replace(sql, 'attempts INTEGER NOT NULL DEFAULT 0', 'attempts INTEGER AS (zeroblob(300000000))') WHERE name = 'nodes'`,
		}, `table "nodes" is not defined as inspect defines it`},
		{"generated column added", []string{`ALTER TABLE runs ADD COLUMN pad AS (zeroblob(300000000))`}, `table "runs" is not defined as inspect defines it`},
		{"index on another expression", []string{`DROP INDEX runs_started`, `CREATE INDEX runs_started ON runs(zeroblob(1000000))`},
			`index "runs_started" is not defined as inspect defines it`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, path := openTemp(t)
			recordOne(t, db)
			db.Close()
			craft(t, path, tt.craft...)
			before := fileHash(t, path)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for name, open := range map[string]func(context.Context, string) (*DB, error){"OpenReadOnly": OpenReadOnly, "Open": Open} {
				d, err := open(ctx, path)
				if err == nil {
					d.Close()
					t.Fatalf("%s(crafted) = nil error, want a refusal", name)
				}
				var se *SchemaError
				if !errors.As(err, &se) || !strings.Contains(err.Error(), "the file is damaged") || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("%s(crafted) = %v, want a SchemaError saying the file is damaged and %q", name, err, tt.want)
				}
			}
			if fileHash(t, path) != before {
				t.Error("a refused file was changed")
			}
		})
	}
}

// TestOpenReadOnly_OldSchemaUnchanged: a reader of a schema-v1 file reads
// it (every reader method) and leaves its bytes as they were; it never
// migrates in place. Migrate then upgrades it.
func TestOpenReadOnly_OldSchemaUnchanged(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	writeV1(t, path)
	before := fileHash(t, path)

	db, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, db, 1)
	if err := db.AddAsk(ctx, &Ask{RunID: "oldrun", NodeSeq: 2, Mode: "question"}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("AddAsk on a read-only database = %v, want ErrReadOnly", err)
	}
	if _, err := db.CreateRun(ctx, &record.Run{}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("CreateRun on a read-only database = %v, want ErrReadOnly", err)
	}
	db.Close()
	if fileHash(t, path) != before {
		t.Fatal("reading a v1 file changed it")
	}

	from, to, err := Migrate(ctx, path)
	if err != nil || from != 1 || to != SchemaVersion() {
		t.Fatalf("Migrate = %d, %d, %v; want 1, %d", from, to, err, SchemaVersion())
	}
	db, err = OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.FileVersion != SchemaVersion() {
		t.Errorf("after Migrate FileVersion = %d", db.FileVersion)
	}
	readAll(t, db, SchemaVersion())
}

// TestOpenReadOnly_ReadOnlyFileSystem: a v1 file on a file system mounted
// read-only (root cannot write it either, unlike chmod) is readable; no
// -shm or -wal can be created there, so it is read as immutable.
func TestOpenReadOnly_ReadOnlyFileSystem(t *testing.T) {
	ctx := context.Background()
	dir := tmpfs.Mount(t, 8<<20)
	path := filepath.Join(dir, "v1.db")
	writeV1(t, path)
	cur := filepath.Join(dir, "current.db")
	db, err := Open(ctx, cur)
	if err != nil {
		t.Fatal(err)
	}
	recordOne(t, db)
	db.Close()
	before := fileHash(t, path)
	tmpfs.ReadOnly(t, dir)

	for _, p := range []string{path, cur} {
		db, err := OpenReadOnly(ctx, p)
		if err != nil {
			t.Fatalf("OpenReadOnly(%s on a read-only file system): %v", filepath.Base(p), err)
		}
		if _, err := db.Runs(ctx, 0); err != nil {
			t.Errorf("Runs: %v", err)
		}
		db.Close()
	}
	db, err = OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, db, 1)
	db.Close()
	if fileHash(t, path) != before {
		t.Error("reading changed the file")
	}
	if _, err := Open(ctx, cur); err == nil || !strings.Contains(err.Error(), "copy it somewhere writable") {
		t.Errorf("Open(read-only file system) for writing = %v, want advice to copy it somewhere writable", err)
	}
}

// writeV1 builds a schema-v1 file with one run, as inspect v1 wrote it.
func writeV1(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	old, err := open(ctx, path, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO runs (id, started_ns, ended_ns, status, tasks) VALUES ('oldrun', 1, 9, 'ok', '["go"]')`,
		`INSERT INTO project_files (run_id, path, sha256, content) VALUES ('oldrun', 'agents.yaml', '', 'agents: []')`,
		`INSERT INTO nodes (run_id, seq, kind, started_ns, ended_ns, status, text) VALUES ('oldrun', 1, 'user', 1, 2, 'ok', 'kept')`,
		`INSERT INTO nodes (run_id, seq, kind, started_ns, ended_ns, status, name, tokens_in, tokens_out) VALUES ('oldrun', 2, 'llm', 2, 3, 'ok', 'm', 10, 2)`,
	} {
		if _, err := old.w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
}

// readAll calls every reader method on the v1 run.
func readAll(t *testing.T, db *DB, version int) {
	t.Helper()
	ctx := context.Background()
	if db.FileVersion != version {
		t.Errorf("FileVersion = %d, want %d", db.FileVersion, version)
	}
	runs, err := db.Runs(ctx, 0)
	if err != nil || len(runs) != 1 || runs[0].TokensIn != 10 {
		t.Fatalf("Runs = %+v, %v", runs, err)
	}
	id, err := db.ResolveRun(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	run, err := db.LoadRun(ctx, id)
	if err != nil || run.Tasks[0] != "go" {
		t.Fatalf("LoadRun = %+v, %v", run, err)
	}
	var seen int
	if err := db.ScanNodes(ctx, run, func(*record.Node) error { seen++; return nil }); err != nil || seen != 2 {
		t.Errorf("ScanNodes: %d nodes, %v", seen, err)
	}
	if _, err := db.Node(ctx, run, 2); err != nil {
		t.Error(err)
	}
	if _, err := db.Request(ctx, id, 2); !errors.Is(err, ErrNoRequest) {
		t.Errorf("Request = %v, want ErrNoRequest", err)
	}
	if _, err := db.Asks(ctx, id, 0); err != nil {
		t.Error(err)
	}
	if _, err := db.Seqs(ctx, id); err != nil {
		t.Error(err)
	}
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestRuns_ImpossibleNumbers: usage `in: 9223372036854775807` twice made
// `inspect runs` fail for the whole file (integer overflow) and negative
// usage summed in; counts read clamped to [0, MaxTokens].
func TestRuns_ImpossibleNumbers(t *testing.T) {
	db, path := openTemp(t)
	recordOne(t, db)
	db.Close()
	// Without written totals (as a run interrupted before a writer repaired
	// it), so Runs sums the crafted nodes.
	craft(t, path,
		`UPDATE nodes SET tokens_in = 9223372036854775807, tokens_out = -5 WHERE kind = 'llm'`,
		`UPDATE runs SET totals_nodes = NULL, totals_llm = NULL, totals_in = NULL, totals_out = NULL, totals_agents = NULL, totals_last_end = NULL`)
	ro, err := OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	runs, err := ro.Runs(context.Background(), 0)
	if err != nil {
		t.Fatalf("Runs: %v", err)
	}
	if got := runs[0].TokensIn; got != 3*record.MaxTokens || got < 0 || got == math.MaxInt64 {
		t.Errorf("TokensIn = %d, want 3 clamped calls = %d", got, 3*record.MaxTokens)
	}
	if got := runs[0].TokensOut; got != 0 {
		t.Errorf("TokensOut = %d, want negative counts read as 0", got)
	}
	run, _ := ro.LoadRun(context.Background(), runs[0].ID)
	n, err := ro.Node(context.Background(), run, 2)
	if err != nil || n.LLM.Usage.In != record.MaxTokens || n.LLM.Usage.Out != 0 {
		t.Errorf("Node usage = %+v, %v; want clamped", n.LLM.Usage, err)
	}
}

// TestDiskFull: a write on a full disk (a real 1 MiB tmpfs) says what to
// do, and the file stays sound: integrity_check ok, every node committed
// before it readable.
func TestDiskFull(t *testing.T) {
	ctx := context.Background()
	dir := tmpfs.Mount(t, 1<<20)
	path := filepath.Join(dir, "runs.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRun(t, db)
	big := strings.Repeat("x", 64<<10)
	var committed int64
	var werr error
	for i := 0; i < 100; i++ {
		n := &record.Node{Kind: record.KindTool, Started: t0, Tool: &record.Tool{Name: "read_file", Result: big + string(rune('a'+i%26))}}
		if werr = rec.AddNode(ctx, n); werr != nil {
			break
		}
		committed = n.Seq
	}
	var df *DiskFullError
	if !errors.As(werr, &df) {
		t.Fatalf("writing past a full disk = %v, want a *DiskFullError", werr)
	}
	for _, want := range []string{"database or disk is full", "the disk holding it is full", "free some space", "run again", "intact"} {
		if !strings.Contains(werr.Error(), want) {
			t.Errorf("error %q lacks %q", werr, want)
		}
	}
	db.Close()
	if committed == 0 {
		t.Fatal("nothing was committed before the disk filled")
	}
	ro, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if v, err := ro.IntegrityCheck(ctx); err != nil || v != "ok" {
		t.Errorf("integrity_check after a full disk = %q, %v", v, err)
	}
	run, err := ro.LoadRun(ctx, mustResolve(t, ro))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := ro.Node(ctx, run, committed); err != nil || n.Tool.Result[:10] != big[:10] {
		t.Errorf("last committed node n%d: %v", committed, err)
	}
}

// TestCopyRuns_RefusesInvalidIDs: `inspect import FILE.db` merged every run
// of a crafted file under the id it held — terminal escapes, a shell
// command a pasted next: line would run, a ':' read as FILE.db:RUN, a
// name shadowing latest (issue 23, item 4). Such runs are skipped, saying
// why; a run with a valid id is merged.
func TestCopyRuns_RefusesInvalidIDs(t *testing.T) {
	ctx := context.Background()
	src, srcPath := openTemp(t)
	recordOne(t, src) // a valid id
	src.Close()
	bad := []string{"x\x1b]0;pwned\x07", "$(touch pwned)", "base.db:latest", "latest", "../../etc", "-rf", "", strings.Repeat("a", 65), "a b", "é"}
	var stmts []string
	for i, id := range bad {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO runs (id, started_ns, ended_ns, status) VALUES (%s, %d, %d, 'ok')`, sqlQuote(id), i+1, i+2))
	}
	craft(t, srcPath, stmts...)
	src, err := OpenReadOnly(ctx, srcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, _ := openTemp(t)
	defer dst.Close()
	runs, err := src.Runs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	got, err := CopyRuns(ctx, dst, src, ids)
	if err != nil {
		t.Fatal(err)
	}
	copied := 0
	for _, c := range got {
		if ValidRunID(c.ID) {
			if c.Skipped != "" {
				t.Errorf("run %q skipped: %s; want it merged", c.ID, c.Skipped)
			}
			copied++
			continue
		}
		if !strings.Contains(c.Skipped, "is not a valid run id") {
			t.Errorf("run %q: skipped %q; want it refused as not a valid run id", c.ID, c.Skipped)
		}
	}
	have, err := dst.Runs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if copied != 1 || len(have) != 1 {
		t.Errorf("%d valid runs, %d in the target; want the one valid run alone", copied, len(have))
	}
	for _, id := range bad {
		if ValidRunID(id) {
			t.Errorf("ValidRunID(%q) = true", id)
		}
	}
	for _, id := range []string{NewRunID(), "fff000aaa111", "oldrun", "fanout-compact", "run_2.v1"} {
		if !ValidRunID(id) {
			t.Errorf("ValidRunID(%q) = false", id)
		}
	}
}

func sqlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
