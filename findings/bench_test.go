package findings_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// bench100k records, once per benchmark, a 100,000-node run in a real
// SQLite file: a trunk that forks 8 researcher branches again and again,
// each branch reading, so every rule has work to do.
func bench100k(b *testing.B) (*store.DB, string) {
	b.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(b.TempDir(), "runs.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	t := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	db.Now = func() time.Time { return t }
	rec, err := db.CreateRun(ctx, &record.Run{ID: "big", Tasks: []string{"Compare every region"}, Started: t,
		Project: record.Project{Name: "big", Files: []record.File{{Path: "agents.yaml", Content: "agents:\n  - name: analyst\n    tools: [read_file]\n    fork: {agents: [researcher]}\n  - name: researcher\n    tools: [read_file]\n"}}}})
	if err != nil {
		b.Fatal(err)
	}
	const total = 100_000
	n := 0
	add := func(node *record.Node, d time.Duration) {
		node.Started, node.Ended = t, t.Add(d)
		if err := rec.AddNode(ctx, node); err != nil {
			b.Fatal(err)
		}
		n++
	}
	add(&record.Node{Kind: record.KindUser, Agent: "analyst", Text: "Compare every region"}, 0)
	for round := 0; n+34 <= total-2; round++ {
		add(&record.Node{Kind: record.KindLLM, Agent: "analyst", LLM: &record.LLM{Calls: []string{"fork"}, Usage: record.Usage{In: 1000, Out: 50}}}, time.Second)
		fork := &record.Node{Kind: record.KindFork, Agent: "analyst", Fork: &record.Fork{Context: "none"}}
		for i := 0; i < 8; i++ {
			fork.Fork.Branches = append(fork.Fork.Branches, record.ForkBranch{Name: fmt.Sprintf("r%d", i), Agent: "researcher", Instructions: fmt.Sprintf("Read regions/r%d-%d.md", round, i)})
		}
		add(fork, 0)
		join := &record.Node{Kind: record.KindJoin, Agent: "analyst", Depth: 0, Join: &record.Join{ForkSeq: fork.Seq}}
		for i, br := range fork.Fork.Branches {
			path := fmt.Sprintf("regions/r%d-%d.md", round, i)
			c := func(k record.Kind) *record.Node {
				return &record.Node{Kind: k, Branch: br.Name, ForkSeq: fork.Seq, Agent: "researcher", Depth: 1}
			}
			l := c(record.KindLLM)
			l.LLM = &record.LLM{Calls: []string{"read_file"}, Usage: record.Usage{In: 400, Out: 20}}
			add(l, time.Second)
			tl := c(record.KindTool)
			tl.Tool = &record.Tool{Name: "read_file", Args: `{"path":"` + path + `"}`, Result: "revenue 1M", Research: true}
			add(tl, 0)
			l2 := c(record.KindLLM)
			l2.LLM = &record.LLM{Usage: record.Usage{In: 450, Out: 10}}
			add(l2, time.Second)
			fin := c(record.KindFinal)
			fin.Text = "1M"
			add(fin, 0)
			join.Join.Branches = append(join.Join.Branches, record.JoinBranch{Name: br.Name, Agent: br.Agent, Status: record.StatusOK, Duration: 2 * time.Second, Answer: "1M"})
		}
		add(join, 0)
	}
	for n < total-2 { // pad to exactly 100,000 with trunk reads of one index
		add(&record.Node{Kind: record.KindLLM, Agent: "analyst", LLM: &record.LLM{Calls: []string{"write_file"}, Usage: record.Usage{In: 100, Out: 5}}}, time.Second)
		add(&record.Node{Kind: record.KindTool, Agent: "analyst", Tool: &record.Tool{Name: "write_file", Args: `{"path":"notes.md"}`}}, 0)
	}
	add(&record.Node{Kind: record.KindLLM, Agent: "analyst", LLM: &record.LLM{Usage: record.Usage{In: 2000, Out: 80}}}, time.Second)
	add(&record.Node{Kind: record.KindFinal, Agent: "analyst", Text: "done"}, 0)
	if err := rec.Finish(ctx, record.StatusOK, "", t.Add(time.Hour)); err != nil {
		b.Fatal(err)
	}
	return db, "big"
}

// BenchmarkAudit100k measures `inspect audit` (graph load + every rule) on
// a 100,000-node run next to a bare SQLite scan of the same rows; it reports
// both in ns/op and their ratio (DESIGN §12: at most 3×).
func BenchmarkAudit100k(b *testing.B) {
	db, id := bench100k(b)
	ctx := context.Background()
	sqlDB, err := sql.Open("sqlite3", "file:"+db.Path+"?mode=ro") // the driver store registers
	if err != nil {
		b.Fatal(err)
	}
	defer sqlDB.Close()
	scan := func() int {
		rows, err := sqlDB.QueryContext(ctx, `SELECT seq, kind, branch, fork_seq, agent, depth, started_ns, ended_ns, status, error,
			name, calls, call_id, tokens_in, tokens_out, tokens_cached, research, args, text, data FROM nodes WHERE run_id=? ORDER BY seq`, id)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		k := 0
		for rows.Next() {
			var seq, forkSeq, depth, started, in, out, research int64
			var ended, cached *int64
			var kind, branch, agent, status, errS, name, calls, callID, args, text, data string
			if err := rows.Scan(&seq, &kind, &branch, &forkSeq, &agent, &depth, &started, &ended, &status, &errS,
				&name, &calls, &callID, &in, &out, &cached, &research, &args, &text, &data); err != nil {
				b.Fatal(err)
			}
			k++
		}
		return k
	}
	audit := func() *findings.Report {
		g, err := graph.Load(ctx, db, id)
		if err != nil {
			b.Fatal(err)
		}
		rep, err := findings.Audit(g, func(seq int64) ([]byte, error) { return db.Request(ctx, id, seq) })
		if err != nil {
			b.Fatal(err)
		}
		return rep
	}
	if k := scan(); k != 100_000 {
		b.Fatalf("scan read %d rows, want 100000", k)
	}
	var scanNS, auditNS time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		scan()
		scanNS += time.Since(t0)
		t1 := time.Now()
		audit()
		auditNS += time.Since(t1)
	}
	b.StopTimer()
	b.ReportMetric(float64(scanNS.Nanoseconds())/float64(b.N), "scan-ns/op")
	b.ReportMetric(float64(auditNS.Nanoseconds())/float64(b.N), "audit-ns/op")
	b.ReportMetric(float64(auditNS)/float64(scanNS), "ratio")
}
