package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/record"
	sqlite3 "github.com/mattn/go-sqlite3"
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

// BenchmarkRecordLLM records a model-call node the way the runtime does
// (StartNode with the request, FinishNode with the response: two commits)
// in a conversation of 6 KB, 100 KB and 1 MB of history, each call adding
// an assistant message and a tool result; next to it, in the same
// iteration, the floor: a bare prepared INSERT + COMMIT of the bytes the
// call adds (its new messages and its response) on the driver's
// connection (bareDB.insert), and the same through database/sql. DESIGN
// §12: ≤ 2× the floor. Reports the medians and the ratio:
//
//	go test ./store -run '^$' -bench RecordLLM -benchtime 400x
//
// BenchmarkRecordLLMParts measures the parts of the same call alone.
func BenchmarkRecordLLM(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			ctx := context.Background()
			db, _ := openTemp(b)
			rec := newRun(b, db)
			bare := openBare(b)
			c := newBenchConv(size.history)
			var recNS, startNS, bareNS, sqlNS []time.Duration
			for i := 0; b.Loop(); i++ {
				call := c.next(i, func(first *record.Node) {
					if err := rec.AddNode(ctx, first); err != nil {
						b.Fatal(err)
					}
				})
				t1 := time.Now()
				n := call.node()
				if err := rec.StartNode(ctx, n); err != nil {
					b.Fatal(err)
				}
				ts := time.Now()
				call.finished(n)
				if err := rec.FinishNode(ctx, n); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				bare.insert(b, i, call.added)
				t3 := time.Now()
				bare.insertSQL(b, i, call.added)
				recNS = append(recNS, t2.Sub(t1))
				startNS = append(startNS, ts.Sub(t1))
				bareNS = append(bareNS, t3.Sub(t2))
				sqlNS = append(sqlNS, time.Since(t3))
			}
			// Medians: a loaded machine's stalls hit single calls, not the typical one.
			r, f := median(recNS), median(bareNS)
			b.ReportMetric(float64(r.Nanoseconds()), "record-ns/op")
			b.ReportMetric(float64(median(startNS).Nanoseconds()), "start-ns/op")
			b.ReportMetric(float64(f.Nanoseconds()), "bare-ns/op")
			b.ReportMetric(float64(median(sqlNS).Nanoseconds()), "bare-sql-ns/op")
			b.ReportMetric(float64(r)/float64(f), "ratio")
		})
	}
}

// benchSizes are the histories the recording benchmarks run at.
var benchSizes = []struct {
	name    string
	history int
}{{"6KB", 6 << 10}, {"100KB", 100 << 10}, {"1MB", 1 << 20}}

// benchConv is the conversation the recording benchmarks record: a system
// message and tool results up to its history, then each call adds an
// assistant message and a tool result. Every eighth call starts a new
// conversation of the same history (a fresh branch), so the history stays
// near its size; that first request is recorded untimed (fresh).
type benchConv struct {
	msgs    []string
	history int // messages of the history
	conv    int
	steps   int
	// Bodies are built in two buffers in turn (the recorder keeps the
	// previous one), so the benchmark itself allocates little.
	bufs [2][]byte
}

const benchTools = `[{"type":"function","function":{"name":"read_file","description":"Read a file of the workspace.","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}]`

func newBenchConv(history int) *benchConv {
	c := &benchConv{msgs: []string{`{"role":"system","content":"You are the analyst. Read the regional reports and answer."}`}, conv: -1, steps: 8}
	for total := 0; total < history; {
		m := fmt.Sprintf(`{"role":"tool","tool_call_id":"call_h%d","content":"Region %d: revenue %d.%dM, up %d%% on Q2; the largest account renewed early."}`, len(c.msgs), len(c.msgs), len(c.msgs)%9, len(c.msgs)%7, len(c.msgs)%13)
		c.msgs = append(c.msgs, m)
		total += len(m) + 1
	}
	c.history = len(c.msgs)
	return c
}

func (c *benchConv) body(i int) []byte {
	b := append(c.bufs[i%2][:0], `{"model":"gpt-4.1-mini","messages":[`...)
	for k, m := range c.msgs {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	b = append(append(b, `],"tools":`...), benchTools...)
	c.bufs[i%2] = append(b, '}')
	return c.bufs[i%2]
}

// benchCall is one model call of a benchConv.
type benchCall struct {
	branch   string
	req      []byte
	resp     []byte
	messages []byte // the messages the call adds to the request: ",call,result"
	added    []byte // the bytes the call adds: its messages and its response
}

// next is call i; fresh records the first request of a new conversation.
func (c *benchConv) next(i int, fresh func(*record.Node)) benchCall {
	if c.steps == 8 {
		c.msgs, c.conv, c.steps = c.msgs[:c.history], c.conv+1, 0
		fresh(&record.Node{Kind: record.KindLLM, Branch: fmt.Sprintf("c%d", c.conv), ForkSeq: 1, Started: t0, LLM: &record.LLM{Model: "m", Request: c.body(i + 1)}})
	}
	c.steps++
	call := fmt.Sprintf(`{"role":"assistant","tool_calls":[{"id":"call_%d","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"regions/r%d.md\"}"}}]}`, i, i)
	result := fmt.Sprintf(`{"role":"tool","tool_call_id":"call_%d","content":"Region %d: revenue %d.%dM, up %d%% on Q2; the largest account renewed early."}`, i, i, i%9, i%7, i%13)
	c.msgs = append(c.msgs, call, result)
	req := c.body(i)
	resp := []byte(fmt.Sprintf(`{"id":"chatcmpl-%d","object":"chat.completion","model":"gpt-4.1-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"regions/r%d.md\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":%d,"completion_tokens":21}}`, i, i+1, i+1, len(req)/4))
	messages := []byte("," + call + "," + result)
	return benchCall{branch: fmt.Sprintf("c%d", c.conv), req: req, resp: resp, messages: messages, added: append(slices.Clip(messages), resp...)}
}

// node is the call's node as StartNode gets it.
func (c benchCall) node() *record.Node {
	return &record.Node{Kind: record.KindLLM, Branch: c.branch, ForkSeq: 1, Agent: "analyst", Started: t0, LLM: &record.LLM{Model: "gpt-4.1-mini", Request: c.req}}
}

// finished fills in what FinishNode records.
func (c benchCall) finished(n *record.Node) {
	n.LLM.Calls, n.LLM.Response, n.LLM.Usage = []string{"read_file"}, c.resp, record.Usage{In: int64(len(c.req) / 4), Out: 21}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// bareDB is the floor of the recording benchmarks: one table, one prepared
// INSERT, its own transaction, on a connection with the store's settings
// (WAL, synchronous=NORMAL). insert runs on the driver's connection
// itself, as the recorder does (BEGIN IMMEDIATE, the INSERT, COMMIT, each
// prepared once): the floor. insertSQL runs the same through database/sql
// (a Tx and Stmt), which adds a goroutine per transaction and converts
// every argument: the floor earlier figures were measured against.
type bareDB struct {
	path string
	db   *sql.DB
	st   *sql.Stmt
	conn *sql.Conn
	raw  [3]driver.Stmt // BEGIN IMMEDIATE, INSERT, COMMIT
}

func openBare(b *testing.B) *bareDB {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bare.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_busy_timeout=10000&_synchronous=NORMAL&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(2)
	if _, err := db.Exec(`CREATE TABLE added (id INTEGER PRIMARY KEY, seq INTEGER, data BLOB)`); err != nil {
		b.Fatal(err)
	}
	st, err := db.Prepare(`INSERT INTO added (seq, data) VALUES (?,?)`)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	d := &bareDB{path: path, db: db, st: st}
	if d.conn, err = db.Conn(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.conn.Close() })
	err = d.conn.Raw(func(dc any) error {
		c := dc.(*sqlite3.SQLiteConn)
		for i, q := range []string{`BEGIN IMMEDIATE`, `INSERT INTO added (seq, data) VALUES (?,?)`, `COMMIT`} {
			if d.raw[i], err = c.Prepare(q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		for _, s := range d.raw {
			s.Close()
		}
	})
	return d
}

// insert is the floor: data inserted and committed on the driver's connection.
func (d *bareDB) insert(b *testing.B, seq int, data []byte) {
	args := [][]driver.NamedValue{nil, {{Ordinal: 1, Value: int64(seq)}, {Ordinal: 2, Value: data}}, nil}
	err := d.conn.Raw(func(any) error {
		for i, s := range d.raw {
			if _, err := s.(driver.StmtExecContext).ExecContext(context.Background(), args[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// insertSQL is the same through database/sql.
func (d *bareDB) insertSQL(b *testing.B, seq int, data []byte) {
	tx, err := d.db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Stmt(d.st).Exec(seq, data); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}
