package store_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

func openDB(t *testing.T, name string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// snapshot is everything a reader can get of one run: its record, its
// nodes, every request and response body (Request checks each one's hash),
// its asks and tags.
type snapshot struct {
	Run       *record.Run
	Nodes     []*record.Node
	Requests  map[int64][]byte
	Responses map[int64][]byte
	Asks      []string
	Tags      map[string]string
}

func snap(t *testing.T, db *store.DB, id string) snapshot {
	t.Helper()
	ctx := context.Background()
	r, err := db.LoadRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	s := snapshot{Run: r, Requests: map[int64][]byte{}, Responses: map[int64][]byte{}}
	if err := db.ScanNodes(ctx, r, func(n *record.Node) error {
		s.Nodes = append(s.Nodes, n)
		if n.Kind == record.KindLLM {
			body, err := db.Request(ctx, id, n.Seq)
			if err != nil && !errors.Is(err, store.ErrNoRequest) {
				return err
			}
			s.Requests[n.Seq] = body
			if s.Responses[n.Seq], err = db.Response(ctx, id, n.Seq); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	asks, err := db.Asks(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range asks {
		s.Asks = append(s.Asks, a.Question+" → "+a.Answer)
	}
	if s.Tags, err = db.Tags(ctx, id); err != nil {
		t.Fatal(err)
	}
	return s
}

func sound(t *testing.T, db *store.DB) {
	t.Helper()
	if got, err := db.IntegrityCheck(context.Background()); err != nil || got != "ok" {
		t.Fatalf("PRAGMA integrity_check = %q, %v", got, err)
	}
}

func count(t *testing.T, path, table string) int64 {
	t.Helper()
	// a second, plain connection: what another program sees
	db, err := store.OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n, err := db.CountRows(context.Background(), table)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func equalSnap(t *testing.T, what string, got, want snapshot) {
	t.Helper()
	if !reflect.DeepEqual(got.Run, want.Run) {
		t.Errorf("%s: run = %+v, want %+v", what, got.Run, want.Run)
	}
	if len(got.Nodes) != len(want.Nodes) {
		t.Fatalf("%s: %d nodes, want %d", what, len(got.Nodes), len(want.Nodes))
	}
	for i := range want.Nodes {
		if !reflect.DeepEqual(got.Nodes[i], want.Nodes[i]) {
			t.Errorf("%s: node %d = %+v, want %+v", what, i, got.Nodes[i], want.Nodes[i])
		}
	}
	for seq, b := range want.Requests {
		if !bytes.Equal(got.Requests[seq], b) {
			t.Errorf("%s: request of n%d differs (%d bytes, want %d)", what, seq, len(got.Requests[seq]), len(b))
		}
		if !bytes.Equal(got.Responses[seq], want.Responses[seq]) {
			t.Errorf("%s: response of n%d differs", what, seq)
		}
	}
	if !reflect.DeepEqual(got.Asks, want.Asks) || !reflect.DeepEqual(got.Tags, want.Tags) {
		t.Errorf("%s: asks %q tags %v, want %q %v", what, got.Asks, got.Tags, want.Asks, want.Tags)
	}
}

// TestDeleteRuns: removing a run leaves the file sound (PRAGMA
// integrity_check, foreign keys) and every other run reading exactly as
// before, request bytes included, though the runs share stored messages
// and blobs; removing the last run leaves no blob or message behind; a run
// still being recorded is refused.
func TestDeleteRuns(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, "runs.db")
	// two realistic runs (the same conversations: they share every
	// stored message) around one of its own
	var ids []string
	for i := 0; i < 3; i++ {
		var id string
		var err error
		if i == 1 {
			id, err = recordOwn(ctx, db)
		} else {
			id, err = graphtest.RecordRealistic(ctx, db, 400)
		}
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := db.SetTags(ctx, ids[1], map[string]string{"branch": "main"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.AddAsk(ctx, &store.Ask{RunID: ids[1], NodeSeq: 2, Mode: "question", Question: "why?", Answer: "because"}); err != nil {
		t.Fatal(err)
	}
	before := map[string]snapshot{ids[0]: snap(t, db, ids[0]), ids[2]: snap(t, db, ids[2])}
	blobs, links := count(t, db.Path, "blobs"), count(t, db.Path, "chain")

	rm, err := db.DeleteRuns(ctx, []string{ids[1]})
	if err != nil {
		t.Fatal(err)
	}
	if rm.Runs != 1 || rm.Nodes != 3 {
		t.Errorf("Removed = %+v, want 1 run of 3 nodes", rm)
	}
	sound(t, db)
	if fk, err := db.ForeignKeyCheck(ctx); err != nil || fk != "" {
		t.Errorf("foreign_key_check = %q, %v", fk, err)
	}
	for id, s := range before {
		equalSnap(t, "run "+id+" after removing another", snap(t, db, id), s)
	}
	if _, err := db.LoadRun(ctx, ids[1]); !errors.As(err, new(*store.NotFoundError)) {
		t.Errorf("the removed run still loads: %v", err)
	}
	for _, table := range []string{"tags", "asks"} {
		if n := count(t, db.Path, table); n != 0 {
			t.Errorf("%d %s rows left of the removed run", n, table)
		}
	}
	// what only the removed run used went (its request's head, system
	// prompt, tail, project file and 2 messages), no more
	if b, l := count(t, db.Path, "blobs"), count(t, db.Path, "chain"); b != blobs-4 || l != links-2 || rm.Links != 2 || rm.Blobs != 4 {
		t.Errorf("blobs %d → %d, links %d → %d, removed %+v", blobs, b, links, l, rm)
	}

	if _, err := db.DeleteRuns(ctx, []string{ids[0], ids[2]}); err != nil {
		t.Fatal(err)
	}
	sound(t, db)
	for _, table := range []string{"runs", "nodes", "requests", "blobs", "chain", "project_files"} {
		if n := count(t, db.Path, table); n != 0 {
			t.Errorf("%d %s rows left in an empty database", n, table)
		}
	}

	// a run this process is still recording
	rec, err := db.CreateRun(ctx, &record.Run{Tasks: []string{"live"}})
	if err != nil {
		t.Fatal(err)
	}
	var live *store.LiveRunError
	if _, err := db.DeleteRuns(ctx, []string{rec.RunID()}); !errors.As(err, &live) {
		t.Errorf("removing a live run: %v, want a LiveRunError", err)
	}
	if err := rec.Finish(ctx, record.StatusOK, "", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if rm, err := db.DeleteRuns(ctx, []string{rec.RunID()}); err != nil || rm.Runs != 1 {
		t.Errorf("removing it once finished: %+v, %v", rm, err)
	}
}

// recordOwn records a run of 3 nodes whose request and project file no
// other run has.
func recordOwn(ctx context.Context, db *store.DB) (string, error) {
	rec, err := db.CreateRun(ctx, &record.Run{Tasks: []string{"own"}, Project: record.Project{Name: "own",
		Files: []record.File{{Path: "agents.yaml", Content: "agents:\n  - name: own\n"}}}})
	if err != nil {
		return "", err
	}
	body := []byte(`{"model":"own-model","messages":[{"role":"system","content":"own system"},{"role":"user","content":"own question"},{"role":"assistant","content":"own step"}],"tools":[{"type":"function","function":{"name":"own_tool"}}]}`)
	for _, n := range []*record.Node{
		{Kind: record.KindUser, Agent: "own", Text: "own question"},
		{Kind: record.KindLLM, Agent: "own", LLM: &record.LLM{Model: "own-model", Request: body, Response: []byte(`{"own":1}`)}},
		{Kind: record.KindFinal, Agent: "own", Text: "own answer"},
	} {
		if err := rec.AddNode(ctx, n); err != nil {
			return "", err
		}
	}
	return rec.RunID(), rec.Finish(ctx, record.StatusOK, "", time.Time{})
}

// record3 records three small runs a day apart (the newest last), the
// middle one tagged, and one more still running, and returns their ids.
func record3(t *testing.T, db *store.DB) (ids []string, live string) {
	t.Helper()
	ctx := context.Background()
	day := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	for i, src := range []record.Source{{Format: "inspect"}, {Format: "claude-code", ID: "s-1"}, {Format: "inspect"}} {
		started := day.AddDate(0, 0, i)
		rec, err := db.CreateRun(ctx, &record.Run{Started: started, Tasks: []string{[]string{"Compare EU", "Summarise US", "Plan APAC"}[i]},
			Project: record.Project{Name: "p"}, Source: src})
		if err != nil {
			t.Fatal(err)
		}
		agent := []string{"analyst", "researcher", "analyst"}[i]
		if err := rec.AddNode(ctx, &record.Node{Kind: record.KindUser, Agent: agent, Started: started, Ended: started, Text: "go"}); err != nil {
			t.Fatal(err)
		}
		status := []record.Status{record.StatusOK, record.StatusError, record.StatusOK}[i]
		if err := rec.Finish(ctx, status, "", started.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.RunID())
	}
	if err := db.SetTags(ctx, ids[1], map[string]string{"pr": "42", "env": "ci"}, nil); err != nil {
		t.Fatal(err)
	}
	rec, err := db.CreateRun(ctx, &record.Run{Started: day.AddDate(0, 0, -30), Tasks: []string{"still going"}})
	if err != nil {
		t.Fatal(err)
	}
	return ids, rec.RunID()
}

func idsOf(runs []store.RunSummary) []string {
	out := []string{}
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

func TestListRuns(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, "runs.db")
	ids, live := record3(t, db)
	day := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		f    store.RunFilter
		want []string
	}{
		{"all", store.RunFilter{}, []string{ids[2], ids[1], ids[0], live}},
		{"status", store.RunFilter{Statuses: []record.Status{record.StatusError, record.StatusRunning}}, []string{ids[1], live}},
		{"source", store.RunFilter{Source: "claude-code"}, []string{ids[1]}},
		{"agent", store.RunFilter{Agent: "analyst"}, []string{ids[2], ids[0]}},
		{"since", store.RunFilter{Since: day.AddDate(0, 0, 1)}, []string{ids[2], ids[1]}},
		{"until", store.RunFilter{Until: day.AddDate(0, 0, 1)}, []string{ids[0], live}},
		{"grep task", store.RunFilter{Grep: "summarise"}, []string{ids[1]}},
		{"grep tag", store.RunFilter{Grep: "pr=42"}, []string{ids[1]}},
		{"tag", store.RunFilter{Tags: map[string]string{"env": "ci"}}, []string{ids[1]}},
		{"tag key", store.RunFilter{Tags: map[string]string{"pr": ""}}, []string{ids[1]}},
		{"tag other value", store.RunFilter{Tags: map[string]string{"env": "prod"}}, []string{}},
		{"limit", store.RunFilter{Agent: "analyst", Limit: 1}, []string{ids[2]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := db.ListRuns(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(idsOf(got), tt.want) {
				t.Errorf("ListRuns = %v, want %v", idsOf(got), tt.want)
			}
		})
	}
	got, _ := db.ListRuns(ctx, store.RunFilter{Source: "claude-code"})
	if len(got) != 1 || !reflect.DeepEqual(got[0].Tags, map[string]string{"pr": "42", "env": "ci"}) {
		t.Errorf("tags = %+v", got)
	}
}

func TestSetTags(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, "runs.db")
	ids, _ := record3(t, db)
	if err := db.SetTags(ctx, ids[1], map[string]string{"env": "prod"}, []string{"pr"}); err != nil {
		t.Fatal(err)
	}
	if tags, _ := db.Tags(ctx, ids[1]); !reflect.DeepEqual(tags, map[string]string{"env": "prod"}) {
		t.Errorf("tags = %v, want env=prod alone", tags)
	}
	if err := db.SetTags(ctx, "nosuchrun", map[string]string{"a": "b"}, nil); !errors.As(err, new(*store.NotFoundError)) {
		t.Errorf("tagging an unknown run: %v", err)
	}
	for _, kv := range [][2]string{{"", "x"}, {"a b", "x"}, {"k", "line\nbreak"}, {string(bytes.Repeat([]byte("k"), 65)), "x"}} {
		if err := db.SetTags(ctx, ids[0], map[string]string{kv[0]: kv[1]}, nil); err == nil {
			t.Errorf("tag %q=%q accepted", kv[0], kv[1])
		}
	}
}

// TestPrune: --keep N and --older-than select the runs beyond the newest N
// or started before the cut; a running run is never selected for removal;
// removing them leaves the file sound and the kept runs intact.
func TestPrune(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, "runs.db")
	ids, live := record3(t, db)
	day := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)

	rm, running, err := db.PrunePlan(ctx, store.Prune{Keep: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(idsOf(rm), []string{ids[1], ids[0]}) || !reflect.DeepEqual(idsOf(running), []string{live}) {
		t.Errorf("keep 1: remove %v, running %v", idsOf(rm), idsOf(running))
	}
	rm, running, _ = db.PrunePlan(ctx, store.Prune{OlderThan: 36 * time.Hour, Now: day.AddDate(0, 0, 3)})
	if !reflect.DeepEqual(idsOf(rm), []string{ids[1], ids[0]}) || len(running) != 1 {
		t.Errorf("older than 36h: remove %v, running %v", idsOf(rm), idsOf(running))
	}
	keep := snap(t, db, ids[2])
	if _, err := db.DeleteRuns(ctx, idsOf(rm)); err != nil {
		t.Fatal(err)
	}
	sound(t, db)
	equalSnap(t, "the kept run", snap(t, db, ids[2]), keep)
	left, _ := db.ListRuns(ctx, store.RunFilter{})
	if !reflect.DeepEqual(idsOf(left), []string{ids[2], live}) {
		t.Errorf("left %v", idsOf(left))
	}
	if err := db.Vacuum(ctx); err != nil {
		t.Fatal(err)
	}
	sound(t, db)
}

// TestCopyRuns_RoundTrip: runs copied into a new file and back read the
// same (record, nodes, request and response bytes, asks, tags); copying a
// run again, or an imported run whose source the target already has,
// gives one run, not two.
func TestCopyRuns_RoundTrip(t *testing.T) {
	ctx := context.Background()
	src := openDB(t, "src.db")
	a, err := graphtest.RecordRealistic(ctx, src, 300)
	if err != nil {
		t.Fatal(err)
	}
	ids, live := record3(t, src)
	if err := src.AddAsk(ctx, &store.Ask{RunID: a, NodeSeq: 2, Mode: "question", Question: "why one by one?", Answer: "habit",
		Created: time.Unix(1700000000, 0)}); err != nil {
		t.Fatal(err)
	}
	want := map[string]snapshot{a: snap(t, src, a), ids[1]: snap(t, src, ids[1])}

	out := openDB(t, "export.db")
	got, err := store.CopyRuns(ctx, out, src, []string{a, ids[1], live})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Skipped != "" || got[0].Nodes != len(want[a].Nodes) || got[1].Skipped != "" || got[2].Skipped != "still running" {
		t.Errorf("CopyRuns = %+v", got)
	}
	sound(t, out)
	for id, s := range want {
		equalSnap(t, "exported "+id, snap(t, out, id), s)
	}
	if runs, _ := out.ListRuns(ctx, store.RunFilter{}); len(runs) != 2 {
		t.Errorf("the export holds %v, want just the 2 runs", idsOf(runs))
	}

	// back into a database that has other runs: merged, the same again
	back := openDB(t, "back.db")
	other, err := graphtest.RecordRealistic(ctx, back, 50)
	if err != nil {
		t.Fatal(err)
	}
	otherSnap := snap(t, back, other)
	if _, err := store.CopyRuns(ctx, back, out, []string{a, ids[1]}); err != nil {
		t.Fatal(err)
	}
	sound(t, back)
	for id, s := range want {
		equalSnap(t, "merged back "+id, snap(t, back, id), s)
	}
	equalSnap(t, "the run that was there", snap(t, back, other), otherSnap)
	again, err := store.CopyRuns(ctx, back, out, []string{a, ids[1]})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range again {
		if c.Skipped != "already there" {
			t.Errorf("copied twice: %+v", c)
		}
	}
	if runs, _ := back.ListRuns(ctx, store.RunFilter{}); len(runs) != 3 {
		t.Errorf("after merging twice: %d runs, want 3", len(runs))
	}

	// the same imported session under another id
	third := openDB(t, "third.db")
	rec, err := third.CreateRun(ctx, &record.Run{Source: record.Source{Format: "claude-code", ID: "s-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Finish(ctx, record.StatusOK, "", time.Time{}); err != nil {
		t.Fatal(err)
	}
	res, err := store.CopyRuns(ctx, third, out, []string{ids[1]})
	if err != nil || len(res) != 1 || res[0].Skipped != "already there as run "+rec.RunID()+" (the same claude-code source)" {
		t.Errorf("the same source: %+v, %v", res, err)
	}
}

func TestIsDatabase(t *testing.T) {
	db := openDB(t, "runs.db")
	if !store.IsDatabase(db.Path) {
		t.Error("an inspect database is not a database")
	}
	p := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(p, []byte(`{"type":"user"}`+"\n"), 0o644)
	if store.IsDatabase(p) || store.IsDatabase(filepath.Join(t.TempDir(), "none")) {
		t.Error("a session file or a missing file read as a database")
	}
}
