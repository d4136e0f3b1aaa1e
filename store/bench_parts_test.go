package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"os"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/record"
)

// BenchmarkRecordLLMParts takes BenchmarkRecordLLM's model call apart, at
// 6 KB and 1 MB of history, each part alone and all in the same iteration
// (medians, as BenchmarkRecordLLM; ns/op of each part):
//
// record: StartNode + FinishNode, as BenchmarkRecordLLM. sql: the
// statements they run, with the values they bind, on the store's writer
// connection of a second file of the same schema and history: SQLite's
// work on the rows of a call without any of the recorder's Go work, and
// each of its steps: the start's BEGIN IMMEDIATE (sql-begin), the node
// (sql-node), the lookup of its first new message (sql-lookup), the two
// messages (sql-links), the request (sql-request), COMMIT (sql-commit);
// the finish's BEGIN (sql-begin2), the node (sql-node2), the response
// (sql-response), COMMIT (sql-commit2). floor: one bare INSERT +
// COMMIT of the bytes the call adds (DESIGN §12's floor); floor2: two,
// the new messages then the response: the least the contract allows, an
// open node visible (one commit), then durable once finished (another).
// The recorder's Go work on the request: compare (proving the request
// starts with the previous one: the one pass over the whole request),
// scan (cutting out its new messages), hash (the request's SHA-256 from
// the state after the previous request, over the new bytes).
//
// The *-pages metrics are the WAL frames (database pages) each writes,
// counted after the timed loop on 16 more calls, each after a TRUNCATE
// checkpoint (the timed loop keeps SQLite's own checkpoints).
//
//	go test ./store -run '^$' -bench RecordLLMParts -benchtime 400x
func BenchmarkRecordLLMParts(b *testing.B) {
	for _, size := range []int{0, 2} {
		size := benchSizes[size]
		b.Run(size.name, func(b *testing.B) {
			p := newPartsBench(b, size.history)
			for i := 0; b.Loop(); i++ {
				p.call(i, false)
			}
			n := len(p.parts["record"])
			for i := n; i < n+16; i++ {
				p.call(i, true)
			}
			for _, part := range []string{"record", "sql", "floor", "floor2", "compare", "scan", "hash",
				"sql-begin", "sql-node", "sql-lookup", "sql-links", "sql-request", "sql-commit", "sql-begin2", "sql-node2", "sql-response", "sql-commit2"} {
				b.ReportMetric(float64(median(p.parts[part]).Nanoseconds()), part+"-ns/op")
			}
			for _, part := range []string{"record-start", "record-finish", "sql", "floor", "floor2"} {
				b.ReportMetric(float64(p.pages[part])/float64(p.pageSize+24)/16, part+"-pages/op")
			}
			r := float64(median(p.parts["record"]))
			b.ReportMetric(r/float64(median(p.parts["floor"])), "ratio")
			b.ReportMetric(r/float64(median(p.parts["floor2"])), "ratio2")
		})
	}
}

// partsBench is BenchmarkRecordLLMParts' files and conversation.
type partsBench struct {
	b           *testing.B
	ctx         context.Context
	db, sdb     *DB // the recorder's file, the statements' file
	path, spath string
	rec, srec   *Recorder
	bare, bare2 *bareDB
	conv        *benchConv
	s           sqlCall // the statements' conversation
	pageSize    int64
	parts       map[string][]time.Duration
	pages       map[string]int64
}

func newPartsBench(b *testing.B, history int) *partsBench {
	p := &partsBench{b: b, ctx: context.Background(), conv: newBenchConv(history), parts: map[string][]time.Duration{}, pages: map[string]int64{}}
	p.db, p.path = openTemp(b)
	p.rec = newRun(b, p.db)
	p.sdb, p.spath = openTemp(b)
	p.srec = newRun(b, p.sdb)
	p.bare, p.bare2 = openBare(b), openBare(b)
	if err := p.db.r.QueryRow(`PRAGMA page_size`).Scan(&p.pageSize); err != nil {
		b.Fatal(err)
	}
	return p
}

// frames runs fn and returns the WAL frames it wrote, or times it as part.
func (p *partsBench) frames(count bool, part, path string, checkpoint func(string) error, fn func()) {
	if !count {
		t := time.Now()
		fn()
		p.parts[part] = append(p.parts[part], time.Since(t))
		return
	}
	if err := checkpoint(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		p.b.Fatal(err)
	}
	fn()
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		p.b.Fatal(err)
	}
	p.pages[part] += fi.Size()
}

// call is model call i: each part timed, or (count) its pages counted.
func (p *partsBench) call(i int, count bool) {
	b, ctx := p.b, p.ctx
	call := p.conv.next(i, func(first *record.Node) {
		second := *first
		second.LLM = &record.LLM{Model: first.LLM.Model, Request: first.LLM.Request}
		if err := p.rec.AddNode(ctx, first); err != nil {
			b.Fatal(err)
		}
		if err := p.srec.AddNode(ctx, &second); err != nil {
			b.Fatal(err)
		}
		p.s = sqlCall{st: p.srec.conv(convKey{second.ForkSeq, second.Branch})}
	})
	prev := p.rec.conv(convKey{1, call.branch})
	onStore := func(db *DB) func(string) error {
		return func(q string) error { _, err := db.w.Exec(q); return err }
	}
	onBare := func(d *bareDB) func(string) error {
		return func(q string) error { _, err := d.conn.ExecContext(ctx, q); return err }
	}

	n := call.node()
	start := func() {
		if err := p.rec.StartNode(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
	finish := func() {
		call.finished(n)
		if err := p.rec.FinishNode(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
	if count {
		p.frames(true, "record-start", p.path, onStore(p.db), start)
		p.frames(true, "record-finish", p.path, onStore(p.db), finish)
	} else {
		p.frames(false, "record", p.path, nil, func() { start(); finish() })
	}
	p.s.prepare(b, p.srec, call)
	p.frames(count, "sql", p.spath, onStore(p.sdb), func() { p.s.run(b, ctx, p.srec, p.parts) })
	p.frames(count, "floor", p.bare.path, onBare(p.bare), func() { p.bare.insert(b, i, call.added) })
	p.frames(count, "floor2", p.bare2.path, onBare(p.bare2), func() {
		p.bare2.insert(b, 2*i, call.messages)
		p.bare2.insert(b, 2*i+1, call.resp)
	})
	if count {
		return
	}

	// The recorder's Go work on the request, each part alone.
	t := time.Now()
	if !bytes.Equal(call.req[:len(prev.prefix)], prev.prefix) {
		b.Fatal("the request does not extend the previous one")
	}
	p.parts["compare"] = append(p.parts["compare"], time.Since(t))
	t = time.Now()
	added, end, ok := scanElements(call.req, len(prev.prefix), false)
	p.parts["scan"] = append(p.parts["scan"], time.Since(t))
	if !ok || len(added) != 2 {
		b.Fatalf("%d messages added, want 2", len(added))
	}
	t = time.Now()
	benchHash(b, prev.hash, call.req[len(prev.prefix):end], call.req[end:])
	p.parts["hash"] = append(p.parts["hash"], time.Since(t))
}

// benchHash is the hashing a request's recording does: the state after
// the previous request's messages, the new ones written (the state kept
// for the next request), then the tail, summed.
func benchHash(b *testing.B, state, added, tail []byte) {
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
		b.Fatal(err)
	}
	h.Write(added)
	next, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	h = sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(next); err != nil {
		b.Fatal(err)
	}
	h.Write(tail)
	h.Sum(nil)
}

// sqlCall replays a model call's statements on a store: those
// Recorder.StartNode and FinishNode run for BenchmarkRecordLLM's call (a
// conversation whose previous request is remembered, two new messages,
// the tail unchanged), with their values computed beforehand.
type sqlCall struct {
	st            *convState // the conversation's previous request
	prefix        int        // the length of its bytes up to its last message
	seq, nodeID   int64
	start, finish []any
	msgs          [2][]byte
	hkeys         [2]int64
	size          int64
	sum, resp     []byte
}

// prepare computes the values of call's statements.
func (s *sqlCall) prepare(b *testing.B, rec *Recorder, call benchCall) {
	if s.prefix == 0 {
		s.prefix = len(s.st.prefix)
	}
	added, end, ok := scanElements(call.req, s.prefix, false)
	if !ok || len(added) != 2 {
		b.Fatalf("%d messages added, want 2", len(added))
	}
	s.prefix = end
	n := call.node()
	n.Seq, n.Status = rec.seq.Add(1), record.StatusRunning
	row, err := encodeNode(n)
	if err != nil {
		b.Fatal(err)
	}
	s.seq, s.start = n.Seq, nodeArgs(rec.run, n, row)
	call.finished(n)
	n.Ended, n.Status = t0, record.StatusOK
	if row, err = encodeNode(n); err != nil {
		b.Fatal(err)
	}
	s.finish = finishArgs(rec.run, n, row, 0) // and the row id, known once inserted
	for i, m := range added {
		h := sha256.Sum256(m)
		s.msgs[i], s.hkeys[i] = m, int64(binary.BigEndian.Uint64(h[:8]))
	}
	sum := sha256.Sum256(call.req)
	s.size, s.sum, s.resp = int64(len(call.req)), sum[:], call.resp
}

// run runs the statements, each one's time appended to parts: the
// start's transaction (the node, the lookup of its
// first new message, the two messages, the request), then the finish's
// (the node, the response).
func (s *sqlCall) run(b *testing.B, ctx context.Context, rec *Recorder, parts map[string][]time.Duration) {
	t := time.Now()
	lap := func(part string) {
		now := time.Now()
		parts[part] = append(parts[part], now.Sub(t))
		t = now
	}
	err := rec.db.write(ctx, false, "record", s.seq, func(e execer) error {
		r := e.(*rawExec)
		if _, _, err := r.run(r.s.begin, nil); err != nil {
			return err
		}
		lap("sql-begin")
		id, _, err := e.exec(stInsertNode, s.start...)
		if err != nil {
			return err
		}
		s.nodeID = id
		lap("sql-node")
		if _, err := e.queryID(stSelectLink, s.st.last, s.hkeys[0], s.msgs[0]); err == nil {
			b.Fatal("the new message is already stored")
		}
		lap("sql-lookup")
		last := s.st.last
		for i, m := range s.msgs {
			if last, _, err = e.exec(stInsertLink, last, s.hkeys[i], m); err != nil {
				return err
			}
		}
		lap("sql-links")
		s.st = &convState{head: s.st.head, system: s.st.system, last: last, tailID: s.st.tailID}
		if _, _, err = e.exec(stInsertRequest, id, s.st.head, s.st.system, last, s.st.tailID, s.size, s.sum, nil); err != nil {
			return err
		}
		lap("sql-request")
		_, _, err = r.run(r.s.commit, nil)
		lap("sql-commit")
		if err != nil {
			return err
		}
		if _, _, err := r.run(r.s.begin, nil); err != nil {
			return err
		}
		lap("sql-begin2")
		if _, _, err := e.exec(stFinishNodeID, append(s.finish, s.nodeID)...); err != nil {
			return err
		}
		lap("sql-node2")
		if _, _, err = e.exec(stSetResponseID, s.resp, s.nodeID); err != nil {
			return err
		}
		lap("sql-response")
		_, _, err = r.run(r.s.commit, nil)
		lap("sql-commit2")
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}
