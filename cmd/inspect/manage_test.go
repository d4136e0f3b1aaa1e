package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// seedManaged records the demo twice, then an imported-looking run and a
// run that failed, a day apart, and returns the ids oldest first.
func seedManaged(t *testing.T, f *Factory) []string {
	t.Helper()
	for i := 0; i < 2; i++ {
		if _, errOut, code := inspectRun(t, f, "demo"); code != ExitOK {
			t.Fatalf("demo: exit %d: %s", code, errOut)
		}
	}
	ctx := context.Background()
	db, err := store.Open(ctx, f.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	day := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	var ids []string
	for i, r := range []*record.Run{
		{Started: day, Tasks: []string{"Summarise the ledger"}, Source: record.Source{Format: "claude-code", ID: "sess-1"}},
		{Started: day.AddDate(0, 0, 1), Tasks: []string{"Plan the APAC launch"}},
	} {
		rec, err := db.CreateRun(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		agent := []string{"archivist", "planner"}[i]
		if err := rec.AddNode(ctx, &record.Node{Kind: record.KindUser, Agent: agent, Started: r.Started, Text: r.Tasks[0]}); err != nil {
			t.Fatal(err)
		}
		status := []record.Status{record.StatusOK, record.StatusError}[i]
		if err := rec.Finish(ctx, status, "", r.Started.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.RunID())
	}
	runs, err := db.Runs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	return append(ids, runs[1].ID, runs[0].ID) // the two demo runs are the newest
}

func runsJSON(t *testing.T, f *Factory, args ...string) []runJSON {
	t.Helper()
	out, errOut, code := inspectRun(t, f, append([]string{"runs", "--json"}, args...)...)
	if code != ExitOK {
		t.Fatalf("runs %v: exit %d: %s", args, code, errOut)
	}
	var list []runJSON
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	return list
}

func jsonIDs(list []runJSON) []string {
	out := []string{}
	for _, r := range list {
		out = append(out, r.ID)
	}
	return out
}

// TestRuns_Filters: inspect runs --status --source --agent --since --until
// --grep --tag --limit, alone and together, and tag setting and removal.
func TestRuns_Filters(t *testing.T) {
	f, _, _ := testFactory(t)
	ids := seedManaged(t, f) // ledger (claude-code), apac (error), demo, demo
	if out, errOut, code := inspectRun(t, f, "tag", ids[1], "pr=482", "branch=fix-fanout"); code != ExitOK || !strings.Contains(out, "branch=fix-fanout pr=482") {
		t.Fatalf("tag: exit %d: %s%s", code, out, errOut)
	}
	tests := []struct {
		args []string
		want []string
	}{
		{nil, []string{ids[3], ids[2], ids[1], ids[0]}},
		{[]string{"--status", "error"}, []string{ids[1]}},
		{[]string{"--status", "ok,error", "--limit", "2"}, []string{ids[3], ids[2]}},
		{[]string{"--source", "claude-code"}, []string{ids[0]}},
		{[]string{"--agent", "writer"}, []string{ids[3], ids[2]}},
		{[]string{"--until", "2025-05-02"}, []string{ids[0]}},
		{[]string{"--since", "2025-05-02", "--until", "2025-05-03"}, []string{ids[1]}},
		{[]string{"--since", "1d"}, []string{ids[3], ids[2]}},
		{[]string{"--grep", "LEDGER"}, []string{ids[0]}},
		{[]string{"--tag", "pr=482"}, []string{ids[1]}},
		{[]string{"--tag", "branch"}, []string{ids[1]}},
		{[]string{"--tag", "pr=1"}, []string{}},
		{[]string{"--grep", "revenue", "--limit", "1"}, []string{ids[3]}},
	}
	for _, tt := range tests {
		if got := jsonIDs(runsJSON(t, f, tt.args...)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("runs %v = %v, want %v", tt.args, got, tt.want)
		}
	}
	if list := runsJSON(t, f, "--tag", "pr=482"); len(list) != 1 || !reflect.DeepEqual(list[0].Tags, map[string]string{"pr": "482", "branch": "fix-fanout"}) {
		t.Errorf("tags in --json = %+v", list)
	}
	if out, _, _ := inspectRun(t, f, "runs", "--tag", "pr=1"); !strings.Contains(out, "No run in") {
		t.Errorf("an empty filter result: %q", out)
	}
	for _, bad := range [][]string{{"--status", "done"}, {"--since", "last tuesday"}, {"--tag", "a b=c"}} {
		if _, errOut, code := inspectRun(t, f, append([]string{"runs"}, bad...)...); code != ExitUsage {
			t.Errorf("runs %v: exit %d, want 2: %s", bad, code, errOut)
		}
	}
	// removing a tag, listing them, bad tags
	if out, _, code := inspectRun(t, f, "tag", ids[1], "--delete", "pr"); code != ExitOK || !strings.Contains(out, "branch=fix-fanout") || strings.Contains(out, "pr=") {
		t.Errorf("tag --delete: %q", out)
	}
	if out, _, _ := inspectRun(t, f, "tag", ids[0]); !strings.Contains(out, "has no tags") {
		t.Errorf("tag listing: %q", out)
	}
	for _, bad := range [][]string{{"tag", ids[0], "novalue"}, {"tag", ids[0], "a b=c"}, {"tag", "zzzz", "a=b"}} {
		if _, errOut, code := inspectRun(t, f, bad...); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2: %s", bad, code, errOut)
		}
	}
}

// TestRmPrune: inspect rm and inspect prune leave the file sound (PRAGMA
// integrity_check) and the other runs as they were; prune --dry-run
// removes nothing; a run still running is never removed.
func TestRmPrune(t *testing.T) {
	f, _, _ := testFactory(t)
	ids := seedManaged(t, f)
	ctx := context.Background()
	audit := func(id string) string {
		t.Helper()
		out, errOut, code := inspectRun(t, f, "audit", id, "--format", "json")
		if code != ExitOK {
			t.Fatalf("audit %s: exit %d: %s", id, code, errOut)
		}
		return out
	}
	graph := func(id string) string {
		t.Helper()
		out, _, _ := inspectRun(t, f, "graph", id)
		return out
	}
	keptAudit, keptGraph := audit(ids[3]), graph(ids[3])
	sound := func() {
		t.Helper()
		db, err := store.OpenReadOnly(ctx, f.DBPath)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if got, err := db.IntegrityCheck(ctx); err != nil || got != "ok" {
			t.Fatalf("integrity_check = %q, %v", got, err)
		}
	}

	out, errOut, code := inspectRun(t, f, "rm", ids[2][:6])
	if code != ExitOK || !strings.Contains(out, "removed run "+ids[2]) || !strings.Contains(errOut, "1 run, 26 nodes") {
		t.Fatalf("rm: exit %d: %s%s", code, out, errOut)
	}
	sound()
	if got := audit(ids[3]); got != keptAudit {
		t.Errorf("the other demo run's audit changed after rm")
	}
	if got := graph(ids[3]); got != keptGraph {
		t.Errorf("the other demo run's graph changed after rm")
	}
	if _, errOut, code := inspectRun(t, f, "rm", ids[2]); code != ExitUsage || !strings.Contains(errOut, "no run matches") {
		t.Errorf("rm of a removed run: exit %d: %s", code, errOut)
	}

	// a run still being recorded, older than everything
	db, err := store.Open(ctx, f.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := db.CreateRun(ctx, &record.Run{Started: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Tasks: []string{"live"}})
	if err != nil {
		t.Fatal(err)
	}
	live := rec.RunID()
	if _, errOut, code := inspectRun(t, f, "rm", live); code != ExitUsage || !strings.Contains(errOut, "is still running") {
		t.Errorf("rm of a live run: exit %d: %s", code, errOut)
	}

	out, errOut, code = inspectRun(t, f, "prune", "--keep", "1", "--dry-run")
	if code != ExitOK || !strings.Contains(out, "would remove run "+ids[1]) || !strings.Contains(out, "would remove run "+ids[0]) ||
		!strings.Contains(errOut, "left run "+live+" alone: it is still running") || !strings.Contains(errOut, "nothing was (--dry-run)") {
		t.Errorf("prune --dry-run: exit %d: %s%s", code, out, errOut)
	}
	if n := len(runsJSON(t, f)); n != 4 {
		t.Errorf("after --dry-run: %d runs, want 4", n)
	}
	out, errOut, code = inspectRun(t, f, "prune", "--older-than", "30d", "--vacuum")
	if code != ExitOK || strings.Count(out, "removed run") != 2 || !strings.Contains(errOut, "compacted") {
		t.Errorf("prune --older-than: exit %d: %s%s", code, out, errOut)
	}
	sound()
	if got := jsonIDs(runsJSON(t, f)); !reflect.DeepEqual(got, []string{ids[3], live}) {
		t.Errorf("left after prune: %v, want the newest demo and the live run", got)
	}
	if audit(ids[3]) != keptAudit {
		t.Errorf("the kept run's audit changed after prune")
	}
	if err := rec.Finish(ctx, record.StatusOK, "", time.Time{}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, bad := range [][]string{{"prune"}, {"prune", "--keep", "2", "--older-than", "1d"}, {"prune", "--older-than", "soon"}, {"prune", "--keep", "0"}} {
		if _, errOut, code := inspectRun(t, f, bad...); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2: %s", bad, code, errOut)
		}
	}
	missing, _, _ := testFactory(t)
	if _, _, code := inspectRun(t, missing, "rm", "latest"); code != ExitUsage {
		t.Errorf("rm on a missing database: exit %d", code)
	}
	if _, err := os.Stat(missing.DBPath); err == nil {
		t.Error("rm created the database it was pointed at")
	}
}

// TestExportImport_RoundTrip: inspect export RUN... -o FILE.db writes a new
// file with just those runs; inspect import FILE.db merges it into another
// database, where graph, audit and show read the same; merging it again
// changes nothing.
func TestExportImport_RoundTrip(t *testing.T) {
	f, _, _ := testFactory(t)
	ids := seedManaged(t, f)
	if _, _, code := inspectRun(t, f, "tag", ids[3], "baseline=yes"); code != ExitOK {
		t.Fatal("tag failed")
	}
	views := func(f *Factory, id string) []string {
		t.Helper()
		var out []string
		args := [][]string{{"graph", id}, {"audit", id, "--format", "json"}, {"show", id, "n1"}, {"graph", id, "--format", "json"}}
		if id == ids[3] { // the demo: its model calls' exact requests
			args = append(args, []string{"show", id, "n2"}, []string{"ask", id, "n4", "--dry-run"})
		}
		for _, args := range args {
			o, errOut, code := inspectRun(t, f, args...)
			if code != ExitOK {
				t.Fatalf("%v: exit %d: %s", args, code, errOut)
			}
			out = append(out, o)
		}
		return out
	}
	want := map[string][]string{ids[0]: views(f, ids[0]), ids[3]: views(f, ids[3])}

	file := filepath.Join(t.TempDir(), "shared.db")
	out, errOut, code := inspectRun(t, f, "export", ids[3], ids[0][:5], "-o", file)
	if code != ExitOK || !strings.Contains(errOut, "wrote 2 runs to "+file) {
		t.Fatalf("export: exit %d: %s%s", code, out, errOut)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(file + suffix); err == nil {
			t.Errorf("export left %s%s beside the file", file, suffix)
		}
	}
	exported, _, _ := testFactory(t)
	exported.DBPath = file
	if got := jsonIDs(runsJSON(t, exported)); !reflect.DeepEqual(got, []string{ids[3], ids[0]}) {
		t.Errorf("the export holds %v", got)
	}
	if _, errOut, code := inspectRun(t, f, "export", ids[3], "-o", file); code != ExitUsage || !strings.Contains(errOut, "already exists") {
		t.Errorf("export over a file: exit %d: %s", code, errOut)
	}

	// another database, with a run of its own
	g, _, _ := testFactory(t)
	if _, _, code := inspectRun(t, g, "demo"); code != ExitOK {
		t.Fatal("demo failed")
	}
	own := runsJSON(t, g)[0].ID
	out, errOut, code = inspectRun(t, g, "import", file)
	if code != ExitOK || strings.Count(out, "merged run") != 2 {
		t.Fatalf("import FILE.db: exit %d: %s%s", code, out, errOut)
	}
	for id, w := range want {
		if got := views(g, id); !reflect.DeepEqual(got, w) {
			t.Errorf("run %s reads differently after export and import", id)
		}
	}
	if list := runsJSON(t, g, "--tag", "baseline=yes"); len(list) != 1 || list[0].ID != ids[3] {
		t.Errorf("the tag did not travel: %+v", list)
	}
	out, _, code = inspectRun(t, g, "import", file)
	if code != ExitOK || strings.Count(out, "already there") != 2 {
		t.Errorf("import twice: %s", out)
	}
	if got := jsonIDs(runsJSON(t, g)); len(got) != 3 || got[2] != own && got[0] != own && got[1] != own {
		t.Errorf("after importing twice: %v, want 3 runs", got)
	}
	ctx := context.Background()
	db, err := store.OpenReadOnly(ctx, g.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if ok, err := db.IntegrityCheck(ctx); ok != "ok" || err != nil {
		t.Errorf("integrity_check after merging = %q, %v", ok, err)
	}

	// a SQLite file that is not inspect's
	other := filepath.Join(t.TempDir(), "other.db")
	writeForeignSQLite(t, other)
	if _, errOut, code := inspectRun(t, g, "import", other); code != ExitUsage || !strings.Contains(errOut, "inspect cannot merge") {
		t.Errorf("import of a foreign SQLite file: exit %d: %s", code, errOut)
	}
}

// writeForeignSQLite writes a SQLite database another program might have.
func writeForeignSQLite(t *testing.T, path string) {
	t.Helper()
	raw, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('hello')`); err != nil {
		t.Fatal(err)
	}
}

// TestPrune_KeepZero: prune --keep 0 names the flag's value and what to do
// (before: "give --keep N or --older-than DUR", as if --keep were not
// given); --keep with --older-than, or neither, asks for one of the two.
func TestPrune_KeepZero(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"prune", "--keep", "0"}, "--keep 0: keep at least 1 run (inspect rm removes runs by name)"},
		{[]string{"prune", "--keep", "-2"}, "--keep -2: keep at least 1 run"},
		{[]string{"prune"}, "give --keep N or --older-than DUR (one of the two)"},
		{[]string{"prune", "--keep", "0", "--older-than", "3d"}, "give --keep N or --older-than DUR (one of the two)"},
	} {
		f, _, _ := testFactory(t)
		_, errOut, code := inspectRun(t, f, tt.args...)
		if code != ExitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d: %s, want %q", tt.args, code, errOut, tt.want)
		}
	}
}
