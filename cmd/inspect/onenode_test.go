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
