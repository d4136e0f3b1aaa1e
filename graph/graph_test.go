package graph_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

func run() *record.Run {
	return &record.Run{ID: "r1", Started: graphtest.Start, Ended: graphtest.Start.Add(time.Minute), Status: record.StatusOK}
}

func TestBuild_Synthetic(t *testing.T) {
	nodes := graphtest.Synthetic(200)
	g, err := graph.Build(run(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Nodes) != len(nodes) {
		t.Fatalf("len(Nodes) = %d, want %d", len(g.Nodes), len(nodes))
	}
	if len(g.Forks) == 0 {
		t.Fatal("no forks")
	}
	if got, want := len(g.Conversations), 1+4*len(g.Forks); got != want {
		t.Errorf("len(Conversations) = %d, want %d", got, want)
	}
	failed := 0
	for _, f := range g.Forks {
		if f.Join == nil {
			t.Fatalf("fork %s has no join", f.Node.ID())
		}
		slowest := 0
		for _, b := range f.Branches {
			if b.Conv == nil || len(b.Conv.Nodes) == 0 || b.Conv.Branch != b {
				t.Fatalf("branch %s of %s has no conversation", b.Name, f.Node.ID())
			}
			if b.Conv.Path != b.Name || b.Conv.Depth != 1 {
				t.Errorf("branch %s: Path = %q, Depth = %d", b.Name, b.Conv.Path, b.Conv.Depth)
			}
			if b.Slowest() {
				slowest++
			}
			if b.Status == record.StatusError {
				failed++
			}
			if b.Status == record.StatusRunning {
				t.Errorf("branch %s still running after its join", b.Name)
			}
		}
		if slowest != 1 {
			t.Errorf("fork %s has %d slowest branches, want exactly 1", f.Node.ID(), slowest)
		}
		if f.Slowest.Status != record.StatusError && f.Slowest.Duration != 2*time.Second {
			t.Errorf("slowest of %s = %s %v", f.Node.ID(), f.Slowest.Name, f.Slowest.Duration)
		}
	}
	if failed == 0 {
		t.Error("the synthetic run's failing branches read ok")
	}
	if !g.IsFirstOwned(g.Nodes[0]) || g.FirstOwned("researcher") == nil || g.FirstOwned("researcher").Conv == g.Trunk {
		t.Errorf("first owned nodes wrong: analyst %v, researcher %v", g.FirstOwned("analyst"), g.FirstOwned("researcher"))
	}
	tc := g.ToolCounts()
	if tc.ResearchBeforeFork != 1 || tc.ResearchInBranches != 4*len(g.Forks) || tc.ResearchAfterFork != len(g.Forks)-1 {
		t.Errorf("research split = %d before, %d in branches, %d after", tc.ResearchBeforeFork, tc.ResearchInBranches, tc.ResearchAfterFork)
	}
	if tc.ByName[0].Name != "read_file" || tc.ByName[1].Name != "fork" || tc.ByName[1].Count != len(g.Forks) {
		t.Errorf("ByName = %v", tc.ByName)
	}
	tok := g.Tokens()
	if tok.Calls == 0 || tok.In != int64(tok.Calls-countFailedLLM(g))*1200 || tok.CachedReported {
		t.Errorf("Tokens = %+v", tok)
	}
}

func countFailedLLM(g *graph.Run) int {
	n := 0
	for _, nd := range g.Nodes {
		if nd.Kind == record.KindLLM && nd.Status == record.StatusError {
			n++
		}
	}
	return n
}

func TestBuild_HandoffAndOpenFork(t *testing.T) {
	at := func(s int) time.Time { return graphtest.Start.Add(time.Duration(s) * time.Second) }
	nodes := []*record.Node{
		{Seq: 1, Kind: record.KindUser, Agent: "intake", Started: at(0), Ended: at(0), Status: record.StatusOK, Text: "refund?"},
		{Seq: 2, Kind: record.KindLLM, Agent: "intake", Started: at(0), Ended: at(1), Status: record.StatusOK, LLM: &record.LLM{Calls: []string{"transfer_to_billing"}}},
		{Seq: 3, Kind: record.KindHandoff, Agent: "intake", Started: at(1), Ended: at(1), Status: record.StatusOK, Handoff: &record.Handoff{From: "intake", To: "billing"}},
		{Seq: 4, Kind: record.KindLLM, Agent: "billing", Started: at(1), Ended: at(2), Status: record.StatusOK, LLM: &record.LLM{Calls: []string{"fork"}}},
		{Seq: 5, Kind: record.KindFork, Agent: "billing", Started: at(2), Ended: at(2), Status: record.StatusOK,
			Fork: &record.Fork{Context: "none", Branches: []record.ForkBranch{{Name: "a", Agent: "billing"}, {Name: "b", Agent: "billing"}}}},
		{Seq: 6, Kind: record.KindLLM, Branch: "a", ForkSeq: 5, Depth: 1, Agent: "billing", Started: at(2), Status: record.StatusInterrupted, LLM: &record.LLM{}},
		{Seq: 7, Kind: record.KindLLM, Branch: "b", ForkSeq: 5, Depth: 1, Agent: "billing", Started: at(2), Ended: at(4), Status: record.StatusOK, LLM: &record.LLM{}},
		{Seq: 8, Kind: record.KindFinal, Branch: "b", ForkSeq: 5, Depth: 1, Agent: "billing", Started: at(4), Ended: at(4), Status: record.StatusOK, Text: "done"},
	}
	r := run()
	r.Status = record.StatusInterrupted
	g, err := graph.Build(r, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if g.FirstAgent() != "intake" || g.LastAgent() != "billing" {
		t.Errorf("FirstAgent, LastAgent = %q, %q", g.FirstAgent(), g.LastAgent())
	}
	if len(g.Handoffs) != 1 {
		t.Errorf("len(Handoffs) = %d", len(g.Handoffs))
	}
	f := g.Forks[0]
	a, b := f.Branches[0], f.Branches[1]
	if f.Join != nil || a.Status != record.StatusInterrupted || b.Status != record.StatusOK {
		t.Errorf("open fork: join %v, statuses %s %s; want no join, interrupted, ok", f.Join, a.Status, b.Status)
	}
	// The interrupted branch ran at least until the run's last recorded
	// moment, but it is never the slowest (DESIGN §8, issue 12), and with
	// a branch cut off nobody knows which one the join would have waited
	// for: none is.
	if a.Duration != 2*time.Second || b.Duration != 2*time.Second || f.Slowest != nil || !f.Open() {
		t.Errorf("open fork: durations %v %v, slowest %v, open %v; want 2s, 2s, b, open", a.Duration, b.Duration, f.Slowest, f.Open())
	}
	empty, _ := graph.Build(r, nodes[:5])
	if c := empty.Forks[0].Branches[1].Conv; c == nil || len(c.Nodes) != 0 {
		t.Errorf("a branch that recorded nothing still gets an empty conversation")
	}
	if s := empty.Forks[0].Slowest; s != nil {
		t.Errorf("a fork whose branches were all interrupted has slowest %q, want none", s.Name)
	}
	if _, err := graph.Build(r, append(nodes, &record.Node{Seq: 6, Kind: record.KindUser})); err == nil {
		t.Error("two nodes with one seq were accepted")
	}
}

func TestLoad_MatchesBuild(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	nodes := graphtest.Synthetic(120)
	id, err := graphtest.Record(ctx, db, nodes)
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Load(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := graph.Build(&record.Run{ID: id}, graphtest.Synthetic(120))
	if len(g.Nodes) != len(want.Nodes) || len(g.Forks) != len(want.Forks) || g.Tokens() != want.Tokens() || g.Elapsed() != want.Nodes[len(want.Nodes)-1].Ended.Sub(graphtest.Start) {
		t.Errorf("loaded graph differs: %d nodes, %d forks, %+v, elapsed %v", len(g.Nodes), len(g.Forks), g.Tokens(), g.Elapsed())
	}
	for i, f := range g.Forks {
		if f.Slowest.Name != want.Forks[i].Slowest.Name || f.Slowest.Duration != want.Forks[i].Slowest.Duration {
			t.Errorf("fork %d slowest = %s %v, want %s %v", i, f.Slowest.Name, f.Slowest.Duration, want.Forks[i].Slowest.Name, want.Forks[i].Slowest.Duration)
		}
	}
	// Load reads the two halves of the run at once: the same nodes as one
	// scan, in order, on runs of odd and even sizes and of one node
	for _, size := range []int{1, 2, 121} {
		id, err := graphtest.Record(ctx, db, graphtest.Synthetic(size))
		if err != nil {
			t.Fatal(err)
		}
		g, err := graph.Load(ctx, db, id)
		if err != nil {
			t.Fatal(err)
		}
		r, err := db.LoadRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var one []*record.Node
		if err := db.ScanNodes(ctx, r, func(n *record.Node) error { one = append(one, n); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(g.Nodes) != len(one) {
			t.Fatalf("%d nodes: loaded %d", len(one), len(g.Nodes))
		}
		for i, n := range g.Nodes {
			if !reflect.DeepEqual(n.Node, one[i]) {
				t.Fatalf("node %d of %d: loaded %+v, scanned %+v", i, len(one), n.Node, one[i])
			}
		}
	}
}

// The 100,000-node benchmarks share one database file per process.
var bench struct {
	once sync.Once
	path string
	id   string
	err  error
}

func benchDB(b *testing.B) (string, string) {
	bench.once.Do(func() {
		dir, err := filepathTemp()
		if err != nil {
			bench.err = err
			return
		}
		bench.path = filepath.Join(dir, "bench.db")
		db, err := store.Open(context.Background(), bench.path)
		if err != nil {
			bench.err = err
			return
		}
		defer db.Close()
		bench.id, bench.err = graphtest.Record(context.Background(), db, graphtest.Synthetic(100_000))
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return bench.path, bench.id
}

// BenchmarkLoad100k loads the graph of a 100,000-node run from SQLite.
// Compare with BenchmarkBareScan100k, the floor: the same rows scanned.
func BenchmarkLoad100k(b *testing.B) {
	path, id := benchDB(b)
	ctx := context.Background()
	db, err := store.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := graph.Load(ctx, db, id); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	// Memory the loaded graph keeps: the heap after a GC with it alive,
	// less the heap before loading it.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g, err := graph.Load(ctx, db, id)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(len(g.Nodes)), "heapB/node")
	runtime.KeepAlive(g)
}

// BenchmarkBareScan100k is a bare SELECT of the columns graph.Load reads,
// scanned into locals: the limit Load is measured against.
func BenchmarkBareScan100k(b *testing.B) {
	path, id := benchDB(b)
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_busy_timeout=10000")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rows, err := db.Query(`SELECT seq, kind, branch, fork_seq, agent, depth, started_ns, ended_ns, status, error,
			name, calls, call_id, tokens_in, tokens_out, tokens_cached, research, args, text, data FROM nodes WHERE run_id=? ORDER BY seq`, id)
		if err != nil {
			b.Fatal(err)
		}
		count := 0
		for rows.Next() {
			var seq, forkSeq, depth, started, in, out, research int64
			var ended, cached sql.NullInt64
			var kind, branch, agent, status, errMsg, name, calls, callID, args, text, data string
			if err := rows.Scan(&seq, &kind, &branch, &forkSeq, &agent, &depth, &started, &ended, &status, &errMsg,
				&name, &calls, &callID, &in, &out, &cached, &research, &args, &text, &data); err != nil {
				b.Fatal(err)
			}
			count++
		}
		rows.Close()
		if count < 100_000 {
			b.Fatalf("scanned %d rows", count)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0ms"},
		{950 * time.Millisecond, "950ms"},
		{1200 * time.Millisecond, "1.2s"},
		{59*time.Second + 940*time.Millisecond, "59.9s"},
		{123 * time.Second, "2m03s"},
	}
	for _, tt := range tests {
		if got := graph.FormatDuration(tt.d); got != tt.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// TestBuild_CancelledBranchNeverSlowest: a fork joined after Ctrl-C holds a
// cancelled branch that ran longest (until it was stopped); it is not the
// slowest, nor is the quick branch (the join never waited for it), and the
// fork reads open (issue 12, item 5).
func TestBuild_CancelledBranchNeverSlowest(t *testing.T) {
	at := func(s int) time.Time { return graphtest.Start.Add(time.Duration(s) * time.Second) }
	nodes := []*record.Node{
		{Seq: 1, Kind: record.KindUser, Agent: "a", Started: at(0), Ended: at(0), Status: record.StatusOK, Text: "go"},
		{Seq: 2, Kind: record.KindFork, Agent: "a", Started: at(0), Ended: at(0), Status: record.StatusOK,
			Fork: &record.Fork{Context: "none", Branches: []record.ForkBranch{{Name: "quick", Agent: "a"}, {Name: "slow", Agent: "a"}}}},
		{Seq: 3, Kind: record.KindFinal, Branch: "quick", ForkSeq: 2, Depth: 1, Agent: "a", Started: at(1), Ended: at(1), Status: record.StatusOK, Text: "done"},
		{Seq: 4, Kind: record.KindFinal, Branch: "slow", ForkSeq: 2, Depth: 1, Agent: "a", Started: at(9), Ended: at(9), Status: record.StatusCancelled, Error: "cancelled while waiting for the model"},
		{Seq: 5, Kind: record.KindJoin, Agent: "a", Started: at(9), Ended: at(9), Status: record.StatusOK, Join: &record.Join{ForkSeq: 2, Branches: []record.JoinBranch{
			{Name: "quick", Agent: "a", Status: record.StatusOK, Duration: time.Second},
			{Name: "slow", Agent: "a", Status: record.StatusCancelled, Duration: 9 * time.Second}}}},
	}
	r := run()
	r.Status = record.StatusCancelled
	g, err := graph.Build(r, nodes)
	if err != nil {
		t.Fatal(err)
	}
	f := g.Forks[0]
	if f.Slowest != nil || !f.Open() || f.Branches[0].Slowest() || f.Branches[1].Slowest() {
		t.Errorf("slowest %v, open %v; want none, open", f.Slowest, f.Open())
	}
}

// BenchmarkBuild100k links the nodes of a realistic 100,000-node run in
// memory (Load's work after the rows are read).
func BenchmarkBuild100k(b *testing.B) {
	var nodes []*record.Node
	if err := graphtest.Realistic(100_000, func(n *record.Node) error { nodes = append(nodes, n); return nil }); err != nil {
		b.Fatal(err)
	}
	r := graphtest.RealisticRun()
	for b.Loop() {
		if _, err := graph.Build(r, slices.Clone(nodes)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBuild_NodeBySeq: Node finds every node by its seq, numbered one
// after another or with gaps (a run imported with nodes left out), and
// nothing for a seq the run does not have; Build refuses two nodes of one
// seq in any order given, and interleaved conversations keep their nodes.
func TestBuild_NodeBySeq(t *testing.T) {
	mk := func(seqs ...int64) []*record.Node {
		var nodes []*record.Node
		for i, s := range seqs {
			branch := ""
			if i%3 == 1 { // every third node on another branch, interleaved
				branch = "b"
			}
			nodes = append(nodes, &record.Node{Seq: s, Kind: record.KindTool, Agent: "a" + branch, Branch: branch, Started: graphtest.Start, Status: record.StatusOK})
		}
		return nodes
	}
	for _, tt := range []struct {
		name   string
		seqs   []int64
		absent []int64
	}{
		{"dense", []int64{3, 1, 2, 4, 5, 6}, []int64{0, 7, -1, 100}},
		{"gaps", []int64{1, 2, 5, 9, 10, 40}, []int64{0, 3, 4, 6, 8, 11, 39, 41}},
		{"one", []int64{7}, []int64{6, 8}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g, err := graph.Build(run(), mk(tt.seqs...))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.seqs {
				if n := g.Node(s); n == nil || n.Seq != s {
					t.Errorf("Node(%d) = %v", s, n)
				}
			}
			for _, s := range tt.absent {
				if n := g.Node(s); n != nil {
					t.Errorf("Node(%d) = n%d, want none", s, n.Seq)
				}
			}
			for _, n := range g.Nodes {
				if want := map[bool]string{false: "", true: "b"}[n.Branch == "b"]; n.Conv.Path != want {
					t.Errorf("n%d (branch %q) is in conversation %q", n.Seq, n.Branch, n.Conv.Path)
				}
			}
			if len(g.Agents) != 2 && len(tt.seqs) > 1 {
				t.Errorf("agents %v, want a and ab", g.Agents)
			}
		})
	}
	if g, err := (&graph.Run{}), error(nil); g.Node(1) != nil || err != nil {
		t.Error("an empty run has a node")
	}
	for _, seqs := range [][]int64{{1, 2, 2, 3}, {2, 1, 3, 2}, {5, 5}} {
		if _, err := graph.Build(run(), mk(seqs...)); err == nil || !strings.Contains(err.Error(), "two nodes numbered n") {
			t.Errorf("Build of seqs %v: %v, want two nodes numbered …", seqs, err)
		}
	}
}
