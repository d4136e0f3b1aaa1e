package findings_test

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// DESIGN §12: every rule linear (or n log n) in nodes. Runs of the realistic
// shape and one ever-growing conversation, recorded in real SQLite files at
// two sizes eight times apart, are loaded and audited (graph.Load + every
// rule, the request frames read from the store as `inspect audit` reads
// them); the larger may cost at most 20× the smaller: linear costs 8×,
// n log n about 10×, quadratic 64×. Not a timed assertion on absolute
// numbers: a ratio of the least CPU time (this process's, so other processes
// on a loaded 2-core machine count little) of five repetitions of each size,
// with a margin a loaded machine does not eat (a 2.5× bar per doubling
// failed under load). The figures per size are logged (-v).
func TestAudit_Scaling(t *testing.T) {
	if testing.Short() {
		t.Skip("records runs of up to 8,000 nodes")
	}
	shapes := []struct {
		name         string
		gen          func(int, func(*record.Node) error) error
		small, large int
	}{
		{"realistic", graphtest.Realistic, 1_000, 8_000},
		{"long conversation", graphtest.LongConversation, 500, 4_000},
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			small := auditTime(t, sh.gen, sh.small)
			large := auditTime(t, sh.gen, sh.large)
			ratio := float64(large) / float64(small)
			t.Logf("%d nodes: %s; %d nodes: %s (%.1f×)", sh.small, small, sh.large, large, ratio)
			if ratio > 20 {
				t.Errorf("%d → %d nodes: audit %s → %s (%.1f×), more than 20× for eight times the nodes: something is quadratic", sh.small, sh.large, small, large, ratio)
			}
		})
	}
}

// auditTime records gen(n) into a fresh file and returns the least CPU
// time of five loads and audits of it.
func auditTime(t *testing.T, gen func(int, func(*record.Node) error) error, n int) time.Duration {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), fmt.Sprintf("run%d.db", n)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rec, err := db.CreateRun(ctx, graphtest.RealisticRun())
	if err != nil {
		t.Fatal(err)
	}
	if err := gen(n, func(nd *record.Node) error { return rec.AddNode(ctx, nd) }); err != nil {
		t.Fatal(err)
	}
	if err := rec.Finish(ctx, record.StatusOK, "", graphtest.Start.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	id := rec.RunID()
	best := time.Duration(1<<63 - 1)
	for range 5 {
		t0 := cpuTime(t)
		g, err := graph.Load(ctx, db, id)
		if err != nil {
			t.Fatal(err)
		}
		cfg := &findings.Config{
			Rules:    rules.All,
			Requests: func(seq int64) ([]byte, error) { return db.Request(ctx, id, seq) },
			Frames:   func(seq int64) ([]byte, error) { return db.RequestFrame(ctx, id, seq) },
		}
		if _, err := cfg.Audit(g); err != nil {
			t.Fatal(err)
		}
		best = min(best, cpuTime(t)-t0)
	}
	return best
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestAudit_ScalingSeriesInOneTurn: one conversation of n nodes under a
// single user turn, made of series of three independent reads each closed
// by a write (graphtest.LongConversation's shape), built in memory without
// request bodies so that what the rules do per series shows: a rule that
// reads the conversation from its start for each series (the turn's
// request of fanout.missed did) is quadratic, 64× for eight times the
// nodes; every rule together must stay within 20×. CPU time of this
// process, least of five, as TestAudit_Scaling.
func TestAudit_ScalingSeriesInOneTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("audits runs of up to 80,000 nodes")
	}
	const small, large = 10_000, 80_000
	s, l := auditMemTime(t, seriesInOneTurn(small)), auditMemTime(t, seriesInOneTurn(large))
	ratio := float64(l) / float64(s)
	t.Logf("%d nodes: %s; %d nodes: %s (%.1f×)", small, s, large, l, ratio)
	if ratio > 20 {
		t.Errorf("%d → %d nodes in one turn: audit %s → %s (%.1f×), more than 20× for eight times the nodes: something is quadratic", small, large, s, l, ratio)
	}
}

// seriesInOneTurn is a run of about n nodes: a user turn, then series of
// three independent reads, each in its own response, closed by a write.
func seriesInOneTurn(n int) *graph.Run {
	var nodes []*record.Node
	at := graphtest.Start
	add := func(nd *record.Node) {
		nd.Seq, nd.Agent, nd.Status = int64(len(nodes)+1), "analyst", record.StatusOK
		nd.Started, nd.Ended = at, at.Add(time.Second)
		at = nd.Ended
		nodes = append(nodes, nd)
	}
	call := func(tool, args string, research bool) {
		add(&record.Node{Kind: record.KindLLM, LLM: &record.LLM{Model: "gpt-4.1-mini", Calls: []string{tool}, Usage: record.Usage{In: 1000, Out: 20}}})
		add(&record.Node{Kind: record.KindTool, Tool: &record.Tool{CallID: fmt.Sprintf("call_%d", len(nodes)), Name: tool, Args: args, Result: "Revenue was 4.2M.", Research: research}})
	}
	add(&record.Node{Kind: record.KindUser, Text: "Summarise every note"})
	for i := 0; len(nodes)+8 <= n; i++ {
		for k := range 3 {
			call("read_file", fmt.Sprintf(`{"path":"notes/n%d-%d.md"}`, i, k), true)
		}
		call("write_file", fmt.Sprintf(`{"path":"summary-%d.md"}`, i), false)
	}
	add(&record.Node{Kind: record.KindLLM, LLM: &record.LLM{Model: "gpt-4.1-mini", Content: "Done."}})
	add(&record.Node{Kind: record.KindFinal, Text: "Done."})
	g, err := graph.Build(graphtest.RealisticRun(), nodes)
	if err != nil {
		panic(err)
	}
	return g
}

// auditMemTime is the least CPU time of five audits of g by every rule.
func auditMemTime(t *testing.T, g *graph.Run) time.Duration {
	t.Helper()
	best := time.Duration(1<<63 - 1)
	for range 5 {
		t0 := cpuTime(t)
		rep, err := (&findings.Config{Rules: rules.All}).Audit(g)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Findings) == 0 {
			t.Fatal("no findings: the shape no longer makes series")
		}
		best = min(best, cpuTime(t)-t0)
	}
	return best
}
