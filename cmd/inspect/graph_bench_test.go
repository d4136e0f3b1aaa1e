package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/mermaid"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// benchNodes is the size of the benchmark run (DESIGN §12).
const benchNodes = 100_000

// recordBigRun records a run of about n nodes through store.Recorder:
// rounds of serial reads, a fork of four branches, a join and a hand-off.
func recordBigRun(tb testing.TB, path string, n int) string {
	tb.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, path)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rec, err := db.CreateRun(ctx, &record.Run{ID: "big", Started: t, Tasks: []string{"a long job"}})
	if err != nil {
		tb.Fatal(err)
	}
	count := 0
	add := func(node *record.Node) *record.Node {
		node.Started, node.Ended = t, t.Add(100*time.Millisecond)
		t = node.Ended
		if err := rec.AddNode(ctx, node); err != nil {
			tb.Fatal(err)
		}
		count++
		return node
	}
	llm := func(branch string, fork int64, depth int, agent string, calls ...string) {
		add(&record.Node{Kind: record.KindLLM, Branch: branch, ForkSeq: fork, Depth: depth, Agent: agent,
			LLM: &record.LLM{Model: "m", Calls: calls, Usage: record.Usage{In: 1000, Out: 20}}})
	}
	tool := func(branch string, fork int64, depth int, agent, name, args string) {
		add(&record.Node{Kind: record.KindTool, Branch: branch, ForkSeq: fork, Depth: depth, Agent: agent,
			Tool: &record.Tool{Name: name, Args: args, Result: "some text the tool returned", Research: true}})
	}
	add(&record.Node{Kind: record.KindUser, Agent: "analyst", Text: "a long job"})
	agent := "analyst"
	for round := 0; count < n; round++ {
		for i := 0; i < 6; i++ {
			llm("", 0, 0, agent, "read_file")
			tool("", 0, 0, agent, "read_file", fmt.Sprintf(`{"path":"r%d/f%d.md"}`, round, i))
		}
		llm("", 0, 0, agent, "fork")
		names := []string{"a", "b", "c", "d"}
		f := &record.Fork{Context: "compact"}
		for _, b := range names {
			f.Branches = append(f.Branches, record.ForkBranch{Name: b, Agent: "researcher", Instructions: "do " + b})
		}
		fork := add(&record.Node{Kind: record.KindFork, Agent: agent, Fork: f})
		j := &record.Join{ForkSeq: fork.Seq}
		for k, b := range names {
			for i := 0; i < 3+k; i++ {
				llm(b, fork.Seq, 1, "researcher", "list_dir")
				tool(b, fork.Seq, 1, "researcher", "list_dir", fmt.Sprintf(`{"path":"d%d"}`, i))
			}
			llm(b, fork.Seq, 1, "researcher")
			add(&record.Node{Kind: record.KindFinal, Branch: b, ForkSeq: fork.Seq, Depth: 1, Agent: "researcher", Text: "done"})
			j.Branches = append(j.Branches, record.JoinBranch{Name: b, Agent: "researcher", Status: record.StatusOK, Duration: time.Second, Answer: "done"})
		}
		add(&record.Node{Kind: record.KindJoin, Agent: agent, Join: j})
		to := "billing"
		if agent == "billing" {
			to = "analyst"
		}
		llm("", 0, 0, agent, "transfer_to_"+to)
		add(&record.Node{Kind: record.KindHandoff, Agent: agent, Handoff: &record.Handoff{From: agent, To: to, Reason: "next"}})
		agent = to
	}
	llm("", 0, 0, agent)
	add(&record.Node{Kind: record.KindFinal, Agent: agent, Text: "all done"})
	if err := rec.Finish(ctx, record.StatusOK, "", t); err != nil {
		tb.Fatal(err)
	}
	return "big"
}

// BenchmarkGraph100k compares `inspect graph` (load the run graph from
// SQLite, render the Mermaid) on a 100,000-node run with a bare SQLite scan
// of the same rows (DESIGN §12: within 3×). Run:
//
//	go test ./cmd/inspect -run '^$' -bench Graph100k -benchtime 5x
func BenchmarkGraph100k(b *testing.B) {
	path := filepath.Join(b.TempDir(), "runs.db")
	id := recordBigRun(b, path, benchNodes)
	ctx := context.Background()

	b.Run("sqlite-scan", func(b *testing.B) {
		raw, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_journal_mode=WAL")
		if err != nil {
			b.Fatal(err)
		}
		defer raw.Close()
		b.ReportAllocs()
		for b.Loop() {
			rows, err := raw.QueryContext(ctx, `SELECT seq, kind, branch, fork_seq, agent, depth, started_ns, ended_ns, status, error,
				name, calls, call_id, tokens_in, tokens_out, tokens_cached, research, args, text, data FROM nodes WHERE run_id=? ORDER BY seq`, id)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				var seq, forkSeq, depth, started, in, out, research int64
				var ended, cached sql.NullInt64
				var kind, branch, agent, status, errText, name, calls, callID, args, text, data string
				if err := rows.Scan(&seq, &kind, &branch, &forkSeq, &agent, &depth, &started, &ended, &status, &errText,
					&name, &calls, &callID, &in, &out, &cached, &research, &args, &text, &data); err != nil {
					b.Fatal(err)
				}
				n++
			}
			if err := rows.Err(); err != nil {
				b.Fatal(err)
			}
			rows.Close()
			if n < benchNodes {
				b.Fatalf("scanned %d rows", n)
			}
		}
	})

	b.Run("inspect-graph", func(b *testing.B) {
		db, err := store.Open(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		b.ReportAllocs()
		for b.Loop() {
			g, err := graph.Load(ctx, db, id)
			if err != nil {
				b.Fatal(err)
			}
			if err := mermaid.Fprint(io.Discard, g); err != nil {
				b.Fatal(err)
			}
		}
	})
}
