package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/otel"
)

// manyRunsFixtures are runs of several stacks whose fleet rows do not
// share a rule × agent across sources (so rows of one source through
// OTLP compare one to one): our runtime's, Claude Code sessions, a
// LangGraph trace.
var (
	manyRunsRecorded = []string{"fanout-compact", "handoff-chain", "audit-fork-uneven", "audit-handoff-loop"}
	manyRunsImported = []string{
		filepath.Join("..", "..", "testdata", "sessions", "claude-code", "parallel-serial-reads", "session.jsonl"),
		filepath.Join("..", "..", "testdata", "sessions", "claude-code", "join-repeat-read", "session.jsonl"),
		filepath.Join("..", "..", "importers", "otlp", "testdata", "langgraph-supervisor.otlp.jsonl"),
	}
)

// manyRuns records and imports manyRuns* into f's database and returns
// the run ids.
func manyRuns(t *testing.T, f *Factory) []string {
	t.Helper()
	recordFixtures(t, f, manyRunsRecorded...)
	for _, p := range manyRunsImported {
		if code := run(t.Context(), f, []string{"import", p, "--db", f.DBPath}); code != ExitOK {
			t.Fatalf("import %s: exit %d: %s", p, code, f.IO.ErrOut)
		}
	}
	db, err := f.Store(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	runs, err := db.Runs(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	if len(ids) != len(manyRunsRecorded)+len(manyRunsImported) {
		t.Fatalf("%d runs, want %d", len(ids), len(manyRunsRecorded)+len(manyRunsImported))
	}
	return ids
}

// sameRunsBack checks that each run of f came back in g as the run of its
// trace, with the same graph and audit, and that inspect fleet --format
// json of both databases is equal but for the run ids (each example is
// the run of the same trace) and the sources (every run of g is otlp:
// the trace's).
func sameRunsBack(t *testing.T, f *Factory, fout *bytes.Buffer, g *Factory, gout *bytes.Buffer, ids []string) {
	t.Helper()
	gdb, err := g.Store(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	back := map[string]string{}
	for _, id := range ids {
		b, err := gdb.RunBySource(t.Context(), "otlp", otel.TraceID(id).String())
		if err != nil || b == "" {
			t.Fatalf("the trace of run %s did not come back (%v)", id, err)
		}
		back[id] = b
	}
	runs, _ := gdb.Runs(t.Context(), 0)
	if len(runs) != len(ids) {
		t.Errorf("%d runs came back, want %d", len(runs), len(ids))
	}
	for _, id := range ids { // each command closes the factory's stores
		b := back[id]
		if a, b := shapeText(commandText(t, f, fout, "graph", id)), shapeText(commandText(t, g, gout, "graph", b)); a != b {
			t.Errorf("run %s: graph after the trip differs:\n%s\nwant:\n%s", id, b, a)
		}
		if a, b := commandText(t, f, fout, "audit", id), commandText(t, g, gout, "audit", b); a != b {
			t.Errorf("run %s: audit after the trip differs:\n%s\nwant:\n%s", id, b, a)
		}
	}
	toTrace := map[string]string{}
	for id, b := range back {
		toTrace[b] = id
	}
	a := fleetDoc(t, f, fout, func(run string) string { return run })
	b := fleetDoc(t, g, gout, func(run string) string { return toTrace[run] })
	if a != b {
		t.Errorf("fleet after the trip:\n%s\nwant:\n%s", b, a)
	}
	if !strings.Contains(a, `"rule": "fanout.missed"`) || !strings.Contains(a, `"rule": "handoff.loop"`) || !strings.Contains(a, `"rule": "join.repeat"`) {
		t.Errorf("the fleet view has fewer rules than the fixtures make:\n%s", a)
	}
}

// fleetDoc is inspect fleet --format json, its rows without their source
// and sorted by rule and agent, each example's run renamed by name, the
// sources map summed up.
func fleetDoc(t *testing.T, f *Factory, out *bytes.Buffer, name func(string) string) string {
	t.Helper()
	text := commandText(t, f, out, "fleet", "--format", "json")
	var doc map[string]any
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("fleet --format json: %v\n%s", err, text)
	}
	total := 0.0
	for _, n := range doc["sources"].(map[string]any) {
		total += n.(float64)
	}
	doc["sources"] = total
	rows, _ := doc["rules"].([]any)
	seen := map[string]bool{}
	for _, r := range rows {
		row := r.(map[string]any)
		key := row["rule"].(string) + " " + row["agent"].(string)
		if seen[key] {
			t.Fatalf("rule × agent %s is in two sources: choose fixtures that keep them apart", key)
		}
		seen[key] = true
		delete(row, "source")
		for _, e := range row["examples"].([]any) {
			ex := e.(map[string]any)
			ex["run"] = name(ex["run"].(string))
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i].(map[string]any), rows[j].(map[string]any)
		return a["rule"].(string)+" "+a["agent"].(string) < b["rule"].(string)+" "+b["agent"].(string)
	})
	s, _ := json.MarshalIndent(doc, "", "  ")
	return string(s)
}

// TestExport_ManyRunsOTLP: inspect export --all --format otlp writes every
// run (ours, Claude Code sessions, a LangGraph trace) as a trace of its
// own in one file; inspect import of the file gives back each run's graph
// and audit and the same fleet view. A filter exports the runs it
// selects; RUNs with --all, or a filter that selects nothing, are usage
// errors.
func TestExport_ManyRunsOTLP(t *testing.T) {
	f, out, errOut := testFactory(t)
	ids := manyRuns(t, f)
	file := filepath.Join(t.TempDir(), "runs.otlp.jsonl")
	if code := run(t.Context(), f, []string{"export", "--all", "--format", "otlp", "-o", file, "--db", f.DBPath}); code != ExitOK {
		t.Fatalf("export --all: exit %d: %s", code, errOut)
	}
	if want := "wrote 7 runs as 7 traces (service inspect) to " + file; !strings.Contains(errOut.String(), want) {
		t.Errorf("export said %q, want %q", errOut, want)
	}
	g, gout, gerr := testFactory(t)
	if code := run(t.Context(), g, []string{"import", file, "--db", g.DBPath}); code != ExitOK {
		t.Fatalf("import: exit %d: %s", code, gerr)
	}
	sameRunsBack(t, f, out, g, gout, ids)

	// a filter: only the Claude Code sessions
	part := filepath.Join(t.TempDir(), "cc.otlp.jsonl")
	errOut.Reset()
	if code := run(t.Context(), f, []string{"export", "--source", "claude-code", "--format", "otlp", "-o", part, "--db", f.DBPath}); code != ExitOK {
		t.Fatalf("export --source claude-code: exit %d: %s", code, errOut)
	}
	h, _, herr := testFactory(t)
	if code := run(t.Context(), h, []string{"import", part, "--db", h.DBPath}); code != ExitOK {
		t.Fatalf("import: exit %d: %s", code, herr)
	}
	hdb, _ := h.Store(t.Context())
	if runs, _ := hdb.Runs(t.Context(), 0); len(runs) != 2 {
		t.Errorf("--source claude-code exported %d runs, want the 2 sessions", len(runs))
	}
	for _, bad := range [][]string{
		{"export", ids[0], "--all", "--format", "otlp"},
		{"export", "--grep", "no run has this text", "--format", "otlp"},
		{"export", "--all", "--format", "otlp", "--otlp-endpoint", "localhost:4318"},
		{"export", "--all", "--otlp-endpoint", "http://127.0.0.1:4318", "-o", file},
	} {
		errOut.Reset()
		if code := run(t.Context(), f, append(bad, "--db", f.DBPath)); code != ExitUsage {
			t.Errorf("inspect %v: exit %d, want %d: %s", bad, code, ExitUsage, errOut)
		}
	}
}
