package main

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/record"
)

// show and ask --dry-run read the node they print (and a fork's join), not
// the run: with a node elsewhere in the run made unreadable, `inspect graph`
// fails and `inspect show` of other nodes still works, the fork's join
// included, as does `inspect ask n2 --dry-run`.
func TestOneNodeCommands_ReadOneNode(t *testing.T) {
	f, out, errOut := testFactory(t)
	g := recordFixture(t, f, "fanout-compact")
	f.Close()
	var fork, last int64
	for _, n := range g.Nodes {
		if n.Kind == record.KindFork && fork == 0 {
			fork = n.Seq
		}
		last = n.Seq
	}
	raw, err := sql.Open("sqlite3", "file:"+f.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE nodes SET data = '{' , kind = 'handoff' WHERE seq = ?`, last); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if code := run(context.Background(), f, []string{"graph", g.ID}); code == ExitOK {
		t.Fatalf("graph of the damaged run succeeded; the test needs a run the whole-run loader cannot read")
	}
	for _, tt := range []struct {
		node string
		want string
	}{
		{"n2", "# n2 · llm"},
		{"n1", "# n1 · user"},
		{nodeRef(fork), "- joined at: n"},
	} {
		out.Reset()
		errOut.Reset()
		if code := run(context.Background(), f, []string{"show", g.ID, tt.node}); code != ExitOK {
			t.Errorf("show %s: exit %d: %s", tt.node, code, errOut)
			continue
		}
		if !strings.Contains(out.String(), tt.want) {
			t.Errorf("show %s printed\n%s\nwant %q in it", tt.node, out, tt.want)
		}
	}
	out.Reset()
	errOut.Reset()
	if code := run(context.Background(), f, []string{"ask", g.ID, "n2", "--dry-run"}); code != ExitOK || !strings.Contains(out.String(), `"messages"`) {
		t.Errorf("ask n2 --dry-run: exit %d, %s%s; want the request body", code, out, errOut)
	}
	out.Reset()
	errOut.Reset()
	if code := run(context.Background(), f, []string{"show", g.ID, "n999"}); code != ExitUsage || !strings.Contains(errOut.String(), "has no node n999") || !strings.Contains(errOut.String(), "nearest: ") {
		t.Errorf("show n999: exit %d, %s; want a usage error naming the nearest nodes", code, errOut)
	}
}

func nodeRef(seq int64) string { return "n" + strconv.FormatInt(seq, 10) }

// Node completion offers the references that start with what was typed, at
// most completionLimit of them, read by index ranges.
func TestCompletion_NodePrefix(t *testing.T) {
	f, out, _ := testFactory(t)
	db, err := f.Store(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	id, err := graphtest.Record(context.Background(), db, graphtest.Synthetic(300))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	complete := func(args ...string) []string { // the node references offered
		t.Helper()
		var nodes []string
		for _, w := range completions(t, f, out, args...) {
			if strings.HasPrefix(w, "n") {
				nodes = append(nodes, w)
			}
		}
		return nodes
	}
	want12 := []string{"n12"}
	for i := 120; i <= 129; i++ {
		want12 = append(want12, "n"+strconv.Itoa(i))
	}
	if got := complete("show", id, "n12"); strings.Join(got, " ") != strings.Join(want12, " ") {
		t.Errorf("complete show RUN n12 = %v, want %v", got, want12)
	}
	if got := complete("show", id, "n"); len(got) != completionLimit || got[0] != "n1" || got[len(got)-1] != "n"+strconv.Itoa(completionLimit) {
		t.Errorf("complete show RUN n = %d references (%v), want n1..n%d", len(got), got, completionLimit)
	}
	if got := complete("show", id, "n0"); len(got) != 0 {
		t.Errorf("complete show RUN n0 = %v, want nothing", got)
	}
}

// ask of a node that is not a model call reads the nodes around it for
// its message (the call that made it, the nearest calls), not the run:
// with the first 2,500 nodes of a 3,000-node run made unreadable, ask of
// late tool, fork, join and hand-off nodes says what it says of the intact
// run (before, it loaded the whole run: 11.8 s and 863 MB for a late fork
// of a 1M-node run, and failed here).
func TestAsk_NotACallReadsItsNeighbours(t *testing.T) {
	f, out, errOut := testFactory(t)
	ctx := context.Background()
	db, err := f.Store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := graphtest.RecordRealistic(ctx, db, 3000)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[record.Kind]int64{}
	if err := db.ScanNodes(ctx, &record.Run{ID: id}, func(n *record.Node) error {
		if n.Seq > 2800 && n.Kind != record.KindLLM {
			kinds[n.Kind] = n.Seq
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(kinds) < 4 {
		t.Fatalf("late nodes of kinds %v; want tool, fork, join and hand-off", kinds)
	}
	ask := func(seq int64) string {
		out.Reset()
		errOut.Reset()
		if code := run(ctx, f, []string{"ask", id, nodeRef(seq), "--dry-run"}); code != ExitUsage {
			t.Fatalf("ask n%d: exit %d, %s%s; want the usage error", seq, code, out, errOut)
		}
		return errOut.String()
	}
	want := map[int64]string{}
	for _, seq := range kinds {
		want[seq] = ask(seq)
	}
	f.Close()
	raw, err := sql.Open("sqlite3", "file:"+f.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE nodes SET data = '{' WHERE seq <= 2500 AND data <> ''`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if code := run(ctx, f, []string{"graph", id}); code == ExitOK {
		t.Fatalf("graph of the damaged run succeeded; the test needs a run the whole-run loader cannot read")
	}
	for kind, seq := range kinds {
		if got := ask(seq); got != want[seq] {
			t.Errorf("ask of %s n%d with earlier nodes unreadable:\n%s\nintact:\n%s", kind, seq, got, want[seq])
		}
	}
}
