package store

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestMigrations_Numbered: a file's schema version is the number of
// migrations applied, in file name order, so the i-th file must be the
// one its header calls schema vi. Two files said "Schema v9" (0009 and
// 0010 landed on two branches): a v9 file of one build would have been
// read as holding the other's v9 objects.
func TestMigrations_Numbered(t *testing.T) {
	head := regexp.MustCompile(`^-- Schema v(\d+)\b`)
	for i, name := range migrations() {
		body, err := migrationFS.ReadFile("migrations/" + name)
		if err != nil {
			t.Fatal(err)
		}
		m := head.FindSubmatch(body)
		if m == nil {
			t.Errorf("%s: no \"-- Schema vN\" header", name)
			continue
		}
		if v, _ := strconv.Atoi(string(m[1])); v != i+1 {
			t.Errorf("%s says schema v%d, but is applied as v%d (file %d in name order)", name, v, i+1, i+1)
		}
	}
}

// TestTraceSpans_V8AndV9Files: files of schema v8 (before nodes_llm_ended)
// and v9 (before trace_spans) are migrated by a writer to the current
// schema, both objects made, and read through a reader's upgraded copy,
// which leaves them at their version; the spans a receiver keeps are then
// kept, read in order, and dropped by key.
func TestTraceSpans_V8AndV9Files(t *testing.T) {
	ctx := context.Background()
	if SchemaVersion() < 10 {
		t.Fatalf("SchemaVersion %d; want trace_spans at v10 at least", SchemaVersion())
	}
	for _, version := range []int{8, 9} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "old.db")
			old, err := open(ctx, path, version)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := old.w.ExecContext(ctx, `INSERT INTO runs (id, started_ns, status, tasks, source_format, source_id) VALUES ('r1', 1, 'ok', '[]', 'otlp', 'claude-code:s1')`); err != nil {
				t.Fatal(err)
			}
			old.Close()
			ro, err := OpenReadOnly(ctx, path)
			if err != nil {
				t.Fatalf("read-only open of a v%d file: %v", version, err)
			}
			if ro.FileVersion != version {
				t.Errorf("FileVersion %d, want %d", ro.FileVersion, version)
			}
			if _, err := ro.LoadRun(ctx, "r1"); err != nil {
				t.Errorf("read through the upgraded copy: %v", err)
			}
			ro.Close()
			db, err := Open(ctx, path)
			if err != nil {
				t.Fatalf("migrate a v%d file: %v", version, err)
			}
			defer db.Close()
			if v, _ := db.Version(ctx); v != SchemaVersion() {
				t.Errorf("after Open: v%d, want v%d", v, SchemaVersion())
			}
			for _, name := range []string{"nodes_llm_ended", "trace_spans", "trace_spans_source"} {
				var n int
				if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = ?`, name).Scan(&n); err != nil || n != 1 {
					t.Errorf("%s after migrating v%d: %d (%v), want it made", name, version, n, err)
				}
			}
			for _, b := range []string{"one", "two"} {
				if err := db.KeepSpans(ctx, "claude-code:s1", []byte(b)); err != nil {
					t.Fatal(err)
				}
			}
			db.KeepSpans(ctx, "other", []byte("x"))
			var got []string
			db.TraceSpans(ctx, "claude-code:s1", func(d []byte) error { got = append(got, string(d)); return nil })
			if fmt.Sprint(got) != "[one two]" {
				t.Errorf("TraceSpans = %q, want [one two] in the order kept", got)
			}
			// they go with the run whose source id they are kept by
			if _, err := db.DeleteRuns(ctx, []string{"r1"}); err != nil {
				t.Fatal(err)
			}
			n := 0
			db.TraceSpans(ctx, "claude-code:s1", func([]byte) error { n++; return nil })
			other := 0
			db.TraceSpans(ctx, "other", func([]byte) error { other++; return nil })
			if n != 0 || other != 1 {
				t.Errorf("after removing the run: %d of its batches kept, %d of another; want 0, 1", n, other)
			}
			if err := db.DropSpans(ctx, "other"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestImport_ReadsNoOtherRuns: what a writer asks of the runs table when
// it imports a run — whether the source was imported before, and which
// runs a dead writer left — goes through an index of those rows, never a
// read of every run (an Agents SDK file of 90,000 traces is 90,000 runs:
// a scan each made the import quadratic). Before, both were `SCAN runs`.
func TestImport_ReadsNoOtherRuns(t *testing.T) {
	db, _ := openTemp(t)
	for name, q := range map[string][]any{"RunBySource": {runBySourceSQL, "openai-agents", "trace_1"}, "repairTotals": {unfinishedSQL}} {
		rows, err := db.r.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q[0].(string), q[1:]...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		text := strings.Join(plan, "; ")
		if !strings.Contains(text, "USING INDEX runs_source") && !strings.Contains(text, "USING INDEX runs_running") {
			t.Errorf("%s reads every run: %s", name, text)
		}
	}
}
