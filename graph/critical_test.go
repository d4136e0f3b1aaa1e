package graph_test

import (
	"testing"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/record"
)

// TestRun_CriticalPath: the trunk forks a and b (b slower); b forks x and
// y (x slower); a forks p and q. The run's end waited on the trunk, b and
// b/x — not on a, its branches or y, however long a's own fork took.
func TestRun_CriticalPath(t *testing.T) {
	at := func(s int) time.Time { return graphtest.Start.Add(time.Duration(s) * time.Second) }
	seq := int64(0)
	var nodes []*record.Node
	add := func(n record.Node, from, to int) int64 {
		seq++
		n.Seq, n.Started, n.Ended, n.Status = seq, at(from), at(to), record.StatusOK
		if n.Agent == "" {
			n.Agent = "a1"
		}
		nodes = append(nodes, &n)
		return seq
	}
	fork := func(names ...string) *record.Fork {
		f := &record.Fork{Context: "none"}
		for _, nm := range names {
			f.Branches = append(f.Branches, record.ForkBranch{Name: nm, Agent: "a1"})
		}
		return f
	}
	join := func(branch string, forkSeq int64, depth, at int, durs map[string]int, names ...string) {
		j := &record.Join{ForkSeq: forkSeq}
		for _, nm := range names {
			j.Branches = append(j.Branches, record.JoinBranch{Name: nm, Status: record.StatusOK, Duration: time.Duration(durs[nm]) * time.Second})
		}
		add(record.Node{Kind: record.KindJoin, Branch: branch, ForkSeq: forkSeq, Depth: depth, Join: j}, at, at)
	}
	add(record.Node{Kind: record.KindUser, Text: "go"}, 0, 0)
	f1 := add(record.Node{Kind: record.KindFork, Fork: fork("a", "b")}, 0, 0)
	// branch a: forks p, q (q slower), ends at 5
	fa := add(record.Node{Kind: record.KindFork, Branch: "a", ForkSeq: f1, Depth: 1, Fork: fork("p", "q")}, 0, 0)
	add(record.Node{Kind: record.KindLLM, Branch: "a/p", ForkSeq: fa, Depth: 2, LLM: &record.LLM{}}, 0, 1)
	add(record.Node{Kind: record.KindLLM, Branch: "a/q", ForkSeq: fa, Depth: 2, LLM: &record.LLM{}}, 0, 4)
	join("a", fa, 1, 4, map[string]int{"p": 1, "q": 4}, "p", "q")
	add(record.Node{Kind: record.KindFinal, Branch: "a", ForkSeq: f1, Depth: 1, Text: "a"}, 5, 5)
	// branch b: forks x, y (x slower), ends at 9
	fb := add(record.Node{Kind: record.KindFork, Branch: "b", ForkSeq: f1, Depth: 1, Fork: fork("x", "y")}, 0, 0)
	add(record.Node{Kind: record.KindLLM, Branch: "b/x", ForkSeq: fb, Depth: 2, LLM: &record.LLM{}}, 0, 8)
	add(record.Node{Kind: record.KindLLM, Branch: "b/y", ForkSeq: fb, Depth: 2, LLM: &record.LLM{}}, 0, 2)
	join("b", fb, 1, 8, map[string]int{"x": 8, "y": 2}, "x", "y")
	add(record.Node{Kind: record.KindFinal, Branch: "b", ForkSeq: f1, Depth: 1, Text: "b"}, 9, 9)
	join("", f1, 0, 9, map[string]int{"a": 5, "b": 9}, "a", "b")
	add(record.Node{Kind: record.KindFinal, Text: "done"}, 9, 10)

	g, err := graph.Build(run(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range g.CriticalPath() {
		got = append(got, "<"+c.Path+">")
	}
	want := []string{"<>", "<b>", "<b/x>"}
	if len(got) != len(want) {
		t.Fatalf("CriticalPath() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("CriticalPath() = %v, want %v", got, want)
		}
	}
}
