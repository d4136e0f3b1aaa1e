package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/record"
)

// benchResult is the payload both benchmarks write: a tool node with a
// 300-byte result.
var benchResult = strings.Repeat("Region EU: revenue 4.2M. ", 12)

// BenchmarkRecordNode records one tool node the way the runtime does:
// StartNode (visible while open) then FinishNode (durable), two commits.
func BenchmarkRecordNode(b *testing.B) {
	ctx := context.Background()
	db, _ := openTemp(b)
	rec := newRun(b, db)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := &record.Node{Kind: record.KindTool, Agent: "analyst", Started: t0, Tool: &record.Tool{CallID: "call_1", Name: "read_file", Args: `{"path":"regions/eu.md"}`, Research: true}}
		if err := rec.StartNode(ctx, n); err != nil {
			b.Fatal(err)
		}
		n.Tool.Result = benchResult
		if err := rec.FinishNode(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAddNode records a node that is complete when recorded: one commit.
func BenchmarkAddNode(b *testing.B) {
	ctx := context.Background()
	db, _ := openTemp(b)
	rec := newRun(b, db)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := &record.Node{Kind: record.KindTool, Agent: "analyst", Started: t0, Ended: t0, Tool: &record.Tool{CallID: "call_1", Name: "read_file", Args: `{"path":"regions/eu.md"}`, Result: benchResult, Research: true}}
		if err := rec.AddNode(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBareInsertCommit is the floor: a prepared INSERT of the same
// bytes into a table of the same shape, in its own transaction, committed,
// on a connection with the same settings (WAL, synchronous=NORMAL).
func BenchmarkBareInsertCommit(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bare.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_busy_timeout=10000&_synchronous=NORMAL&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE nodes (id INTEGER PRIMARY KEY, run_id TEXT, seq INTEGER, kind TEXT, agent TEXT, started_ns INTEGER, ended_ns INTEGER,
		status TEXT, name TEXT, call_id TEXT, args TEXT, text TEXT, research INTEGER, UNIQUE (run_id, seq))`); err != nil {
		b.Fatal(err)
	}
	st, err := db.Prepare(`INSERT INTO nodes (run_id, seq, kind, agent, started_ns, ended_ns, status, name, call_id, args, text, research) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Stmt(st).Exec("abcdef123456", i+1, "tool", "analyst", t0.UnixNano(), t0.UnixNano(), "ok", "read_file", "call_1", `{"path":"regions/eu.md"}`, benchResult, 1); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}
