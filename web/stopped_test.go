package web_test

import (
	"context"
	"html"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/analysis/storesrc"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/claudecode"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
	"github.com/inspect-dev/inspect/web"
)

// TestRunPage_StoppedNoticeFitsTheSource: the one banner of a stopped run
// says how it stopped in its source's terms: a real Claude Code session
// whose file ends mid-turn (the excerpt of ae4a77f8) that the session ends
// before the conversation finished, one the user interrupted (tool_heavy)
// that the user interrupted the turn (the run's own errors), neither that
// a process died or that Ctrl-C was pressed; our runtime's cancelled run
// without an error of its own says Ctrl-C.
func TestRunPage_StoppedNoticeFitsTheSource(t *testing.T) {
	ctx := context.Background()
	real := importerstest.Transcripts(t)
	path := filepath.Join(t.TempDir(), "runs.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for rel, notice := range map[string]string{
		"claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.lines-43-102.jsonl": "This run was interrupted (the session ends before this conversation finished).",
		"claude-code/tool_heavy.jsonl":                                        "This run was cancelled (the user interrupted the turn).",
	} {
		res, err := importers.Import(ctx, db, claudecode.Format{}, filepath.Join(real, filepath.FromSlash(rel)), importers.Options{})
		if err != nil || len(res) != 1 {
			t.Fatalf("import %s: %v", rel, err)
		}
		want[res[0].RunID] = notice
	}
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	rec, err := db.CreateRun(ctx, &record.Run{Started: at, Tasks: []string{"go"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.AddNode(ctx, &record.Node{Kind: record.KindUser, Agent: "a", Started: at, Ended: at, Text: "go"}); err != nil {
		t.Fatal(err)
	}
	if err := rec.Finish(ctx, record.StatusCancelled, "", at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	want[rec.RunID()] = "This run was cancelled (Ctrl-C) before it finished."
	db.Close()
	ro, err := store.OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	srv := httptest.NewServer(web.New(storesrc.New(ro), web.Options{}))
	t.Cleanup(srv.Close)
	for id, notice := range want {
		_, body := get(t, srv.URL, "/runs/"+id)
		page := html.UnescapeString(body)
		if !strings.Contains(page, notice) {
			t.Errorf("run %s: the page does not say %q", id, notice)
		}
		if !strings.Contains(notice, "Ctrl-C") && (strings.Contains(page, "Ctrl-C") || strings.Contains(page, "process recording")) {
			t.Errorf("run %s, imported: the page speaks of Ctrl-C or a process", id)
		}
	}
}
