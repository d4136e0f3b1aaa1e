package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/internal/tmpfs"
	"github.com/inspect-dev/inspect/store"
)

// writeV1File writes a schema-v1 database at path holding the fanout-compact
// fixture's run as inspect v1 stored it: the v1 schema from the first
// migration, and the v1 columns of every row of a real recording. Later
// schemas keep project files and system prompts as blobs, so those rows are
// written back in v1's form: file contents inline, each request body whole
// as its head (a v1 reader rebuilds head || chain || tail).
func writeV1File(t *testing.T, path string) {
	t.Helper()
	cur := filepath.Join(t.TempDir(), "current.db")
	recordInto(t, cur, "fanout-compact", "0123456789ab")
	schema, err := os.ReadFile(filepath.Join("..", "..", "store", "migrations", "0001_init.sql"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	cols := map[string]string{
		"runs": "id, started_ns, ended_ns, status, error, tasks, project, options, base_url, models, writer_host, writer_pid, writer_tag",
		"nodes": "id, run_id, seq, kind, branch, fork_seq, agent, depth, started_ns, ended_ns, status, error, name, calls, call_id, " +
			"tokens_in, tokens_out, tokens_cached, research, args, text, data",
	}
	stmts := []string{string(schema), "ATTACH DATABASE '" + cur + "' AS cur"}
	for _, table := range []string{"runs", "nodes"} {
		stmts = append(stmts, "INSERT INTO main."+table+" ("+cols[table]+") SELECT "+cols[table]+" FROM cur."+table)
	}
	stmts = append(stmts, `INSERT INTO main.project_files (run_id, path, sha256, content)
		SELECT p.run_id, p.path, p.sha256, CAST(b.data AS TEXT) FROM cur.project_files p JOIN cur.blobs b ON b.id = p.blob`)
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("build the v1 file: %v", err)
		}
	}
	// Each request whole, rebuilt by this build's reader.
	ctx := context.Background()
	src, err := store.OpenReadOnly(ctx, cur)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	rows, err := db.Query(`SELECT n.id, n.run_id, n.seq FROM cur.requests r JOIN cur.nodes n ON n.id = r.node_id ORDER BY n.id`)
	if err != nil {
		t.Fatal(err)
	}
	type req struct {
		id, seq int64
		run     string
	}
	var reqs []req
	for rows.Next() {
		var r req
		if err := rows.Scan(&r.id, &r.run, &r.seq); err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r)
	}
	rows.Close()
	empty := sha256.Sum256(nil)
	if _, err := db.Exec(`INSERT INTO main.blobs (id, hash, data) VALUES (1, ?, x'')`, empty[:]); err != nil {
		t.Fatalf("build the v1 file: %v", err)
	}
	for _, r := range reqs {
		body, err := src.Request(ctx, r.run, r.seq)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := src.Response(ctx, r.run, r.seq)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(body)
		res, err := db.Exec(`INSERT INTO main.blobs (hash, data) VALUES (?, ?) ON CONFLICT (hash) DO UPDATE SET hash = excluded.hash`, sum[:], body)
		if err != nil {
			t.Fatalf("build the v1 file: %v", err)
		}
		var head int64
		if err := db.QueryRow(`SELECT id FROM main.blobs WHERE hash = ?`, sum[:]).Scan(&head); err != nil {
			t.Fatalf("build the v1 file: %v (%v)", err, res)
		}
		if _, err := db.Exec(`INSERT INTO main.requests (node_id, head, last, tail, size, sha256, response) VALUES (?, ?, 0, 1, ?, ?, ?)`,
			r.id, head, len(body), sum[:], resp); err != nil {
			t.Fatalf("build the v1 file: %v", err)
		}
	}
	for _, q := range []string{"DETACH DATABASE cur", "PRAGMA user_version = 1", "PRAGMA application_id = 1768846192"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("build the v1 file: %v", err)
		}
	}
}

// TestReaders_ReadOnlyV1File: a schema-v1 file on a read-only file system
// (defect 9) is read by every reader — runs, graph in every text format,
// show, audit in every format, diff, ask --dry-run — and its bytes are the
// same afterwards. Before, a reader migrated an old file in place and could
// not open a read-only one at all.
func TestReaders_ReadOnlyV1File(t *testing.T) {
	dir := tmpfs.Mount(t, 16<<20)
	path := filepath.Join(dir, "v1.db")
	writeV1File(t, path)
	before := sha(t, path)
	tmpfs.ReadOnly(t, dir)

	ref := path + ":latest"
	for _, args := range [][]string{
		{"runs"}, {"runs", "--json"},
		{"graph", ref}, {"graph", ref, "--format", "json"}, {"graph", ref, "--format", "dot"},
		{"show", ref, "n2"}, {"show", ref, "n3"},
		{"audit", ref}, {"audit", ref, "--format", "json"}, {"audit", ref, "--format", "sarif"}, {"audit", ref, "--format", "junit"}, {"audit", ref, "--format", "markdown"},
		{"diff", ref, ref}, {"diff", ref, ref, "--format", "json"},
		{"ask", ref, "n2", "--dry-run"},
	} {
		f, out, errOut := testFactory(t)
		f.DBPath = path
		if code := run(context.Background(), f, args); code != ExitOK {
			t.Errorf("inspect %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
			continue
		}
		if out.Len() == 0 {
			t.Errorf("inspect %s printed nothing", strings.Join(args, " "))
		}
		if !strings.Contains(errOut.String(), "schema v1") || !strings.Contains(errOut.String(), "inspect migrate") {
			t.Errorf("inspect %s: stderr lacks the note on the old schema:\n%s", strings.Join(args, " "), errOut)
		}
	}
	if sha(t, path) != before {
		t.Fatal("a reader changed the v1 file")
	}
}

// TestMigrateCommand: `inspect migrate FILE` upgrades a v1 file in place,
// says so, and a second call has nothing to do; readers then read it
// directly, with no note.
func TestMigrateCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	writeV1File(t, path)
	f, out, errOut := testFactory(t)
	if code := run(context.Background(), f, []string{"migrate", path}); code != ExitOK {
		t.Fatalf("migrate: exit %d: %s", code, errOut)
	}
	if want := "upgraded from schema v1 to v"; !strings.Contains(out.String(), want) {
		t.Errorf("migrate said %q, want %q", out, want)
	}
	f, out, errOut = testFactory(t)
	if code := run(context.Background(), f, []string{"migrate", path}); code != ExitOK || !strings.Contains(out.String(), "nothing to do") {
		t.Errorf("second migrate: exit %d, %q %s", code, out, errOut)
	}
	f, _, errOut = testFactory(t)
	f.DBPath = path
	if code := run(context.Background(), f, []string{"graph"}); code != ExitOK || strings.Contains(errOut.String(), "note:") {
		t.Errorf("graph after migrate: exit %d, stderr %q", code, errOut)
	}
	db, err := store.OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.FileVersion != store.SchemaVersion() {
		t.Errorf("after migrate: v%d", db.FileVersion)
	}
	f, _, errOut = testFactory(t)
	if code := run(context.Background(), f, []string{"migrate", filepath.Join(t.TempDir(), "none.db")}); code != ExitUsage {
		t.Errorf("migrate of a missing file: exit %d (%s), want %d", code, errOut, ExitUsage)
	}
}

// TestCIBaselineUnchanged: the committed CI baseline (an older schema) is
// read by diff and never migrated in place.
func TestCIBaselineUnchanged(t *testing.T) {
	before := sha(t, ciBaseline)
	f, _, errOut := diffFactory(t, t.TempDir())
	recordInto(t, f.DBPath, "fanout-compact", "0123456789ab")
	if code := run(context.Background(), f, []string{"diff", ciBaseline + ":latest", "latest"}); code != ExitOK {
		t.Fatalf("diff: exit %d: %s", code, errOut)
	}
	if sha(t, ciBaseline) != before {
		t.Fatal("diff changed the committed baseline")
	}
}

func sha(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestDamagedFiles: the three crafted files of defect 8 through the
// commands that hung or lost data on them. A looping chain made show, ask
// --dry-run, audit and diff run for ever; a recursive view in place of
// runs hung `inspect runs`; a trigger wiped earlier runs at the next
// `inspect run`. Each command now returns, and a refusal says the file is
// damaged.
func TestDamagedFiles(t *testing.T) {
	fixture := filepath.Join("..", "..", "fixtures", "fanout-compact")
	tests := []struct {
		name    string
		craft   []string
		refused bool // every command refuses the file at open
		cmds    [][]string
	}{
		{"looping chain", []string{`UPDATE chain SET prev=id WHERE prev=0`}, false,
			[][]string{{"show", "n2"}, {"ask", "n2", "--dry-run"}, {"audit"}, {"diff", "latest", "latest"}, {"graph"}}},
		{"recursive view in place of runs", []string{
			`ALTER TABLE runs RENAME TO runs_kept`,
			`CREATE VIEW runs AS WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM r)
				SELECT printf('%012d', x) AS id, x AS started_ns, NULL AS ended_ns, 'ok' AS status, '' AS error, '[]' AS tasks, '' AS project,
				'{}' AS options, '' AS base_url, '[]' AS models, '' AS writer_host, 0 AS writer_pid, '' AS writer_tag,
				'inspect' AS source_format, '' AS source_version, '' AS source_id, '' AS source_path FROM r`,
		}, true, [][]string{{"runs"}, {"runs", "--json"}, {"graph"}}},
		{"trigger that wipes nodes", []string{`CREATE TRIGGER wipe AFTER INSERT ON runs BEGIN DELETE FROM nodes; END`}, true,
			[][]string{{"run", fixture, "--script", filepath.Join(fixture, "script.yaml")}, {"runs"}, {"audit"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "runs.db")
			recordInto(t, path, "fanout-compact", "0123456789ab")
			raw, err := sql.Open("sqlite3", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range tt.craft {
				if _, err := raw.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			raw.Close()
			for _, args := range tt.cmds {
				f, _, errOut := testFactory(t)
				f.DBPath = path
				code := run(context.Background(), f, args)
				damaged := strings.Contains(errOut.String(), "damaged")
				if tt.refused && (code != ExitToolError || !damaged) {
					t.Errorf("inspect %s: exit %d, stderr %q; want exit 3 saying the file is damaged", strings.Join(args, " "), code, errOut)
				}
				if code != ExitOK && !damaged {
					t.Errorf("inspect %s: exit %d, stderr %q; a failure must say the file is damaged", strings.Join(args, " "), code, errOut)
				}
			}
			if tt.name == "trigger that wipes nodes" {
				raw, _ := sql.Open("sqlite3", "file:"+path+"?mode=ro")
				defer raw.Close()
				var n int
				if err := raw.QueryRow(`SELECT count(*) FROM nodes`).Scan(&n); err != nil || n == 0 {
					t.Errorf("the earlier run's nodes: %d, %v; the trigger must never fire", n, err)
				}
			}
		})
	}
}
