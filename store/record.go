package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inspect-dev/inspect/record"
)

// writeStmts are the recording statements prepared once on the writer
// pool, for the transactions database/sql runs (imports, a run's creation).
type writeStmts struct {
	once sync.Once
	err  error
	st   [numStmts]*sql.Stmt
}

func (s *writeStmts) close() {
	for _, st := range s.st {
		if st != nil {
			st.Close()
		}
	}
}

const nodeColumns = `run_id, seq, kind, branch, fork_seq, agent, depth, started_ns, ended_ns, status, error,
	name, calls, call_id, tokens_in, tokens_out, tokens_cached, tokens_cache_write, tokens_reasoning, fidelity, attempts, research, args, text, data, called_by`

func (db *DB) prepare(ctx context.Context) error {
	db.stmts.once.Do(func() {
		s := &db.stmts
		for i, q := range stmtSQL {
			if s.st[i], s.err = db.w.PrepareContext(ctx, q); s.err != nil {
				return
			}
		}
	})
	return db.stmts.err
}

// NewRunID returns a fresh random run id: 12 lower-case hex digits, short
// enough to type and to abbreviate to a unique prefix.
func NewRunID() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("internal error: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// Recorder writes one run. The runtime calls StartNode when a step begins
// (the node is visible, status running), FinishNode when it ends (durable
// from then on), AddNode for a step that is complete when recorded, and
// Finish once. It is safe for concurrent use by the run's goroutines.
type Recorder struct {
	db  *DB
	run string
	seq atomic.Int64

	mu    sync.Mutex
	blobs map[[32]byte]int64     // committed blob ids by hash
	links map[link]int64         // committed chain ids by (prev, hash)
	convs map[convKey]*convState // each open conversation's last stored request
	open  map[int64]int64        // the row ids of nodes started and not finished, by seq

	// batch, when set, is the transaction AddNode writes into (an import
	// commits its nodes in batches; see DB.ImportRun).
	batch *sql.Tx
}

// CreateRun inserts r with status running, together with its project
// snapshot, and returns the Recorder that writes its nodes. An empty r.ID is
// filled with NewRunID; a zero r.Started with db.Now().
func (db *DB) CreateRun(ctx context.Context, r *record.Run) (_ *Recorder, err error) {
	defer db.full(&err)
	if err := db.writable(); err != nil {
		return nil, err
	}
	if err := db.prepare(ctx); err != nil {
		return nil, err
	}
	if r.ID == "" {
		r.ID = NewRunID()
	}
	if r.Started.IsZero() {
		r.Started = db.Now()
	}
	r.Status = record.StatusRunning
	tasks, opts, modelsJSON, err := runColumns(r)
	if err != nil {
		return nil, err
	}
	host, pid, tag := writerIdentity()

	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("create run: %w", err)
	}
	defer tx.Rollback()
	if r.Source.Format == "" {
		r.Source.Format = record.SourceInspect
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO runs (id, started_ns, status, tasks, project, options, base_url, models, writer_host, writer_pid, writer_tag,
		source_format, source_version, source_id, source_path)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		r.ID, r.Started.UnixNano(), string(r.Status), string(tasks), r.Project.Name, string(opts), redactURL(r.BaseURL), string(modelsJSON), host, pid, tag,
		r.Source.Format, r.Source.Version, r.Source.ID, redactURL(r.Source.Path)); err != nil {
		return nil, fmt.Errorf("create run: %w", err)
	}
	rec, w, err := db.storeProject(ctx, tx, r)
	if err != nil {
		return nil, err
	}
	if err := repairTotals(ctx, tx); err != nil {
		return nil, fmt.Errorf("create run: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("create run: %w", err)
	}
	rec.remember(w.p)
	return rec, nil
}

// runColumns are r's tasks, options and models (sorted) as the runs table
// holds them: JSON text.
func runColumns(r *record.Run) (tasks, opts, models []byte, err error) {
	tasks, _ = json.Marshal(nonNil(r.Tasks))
	if opts, err = EncodeOptions(r.Options); err != nil {
		return nil, nil, nil, err
	}
	m := append([]string(nil), r.Models...)
	sort.Strings(m)
	models, _ = json.Marshal(nonNil(m))
	return tasks, opts, models, nil
}

// storeProject stores r's project snapshot inside tx (identical snapshots
// share their blobs) and returns the Recorder of r with the ids it wrote,
// to remember once tx commits.
func (db *DB) storeProject(ctx context.Context, tx *sql.Tx, r *record.Run) (*Recorder, *requestWriter, error) {
	rec := &Recorder{db: db, run: r.ID, blobs: map[[32]byte]int64{}, links: map[link]int64{}, convs: map[convKey]*convState{}, open: map[int64]int64{}}
	w := &requestWriter{e: txExec{ctx, tx, db}, rec: rec, p: &pendingIDs{blobs: map[[32]byte]int64{}, links: map[link]int64{}}}
	for i := range r.Project.Files {
		f := &r.Project.Files[i]
		sum := sha256.Sum256([]byte(f.Content))
		f.SHA256 = hex.EncodeToString(sum[:])
		blob, err := w.blob([]byte(f.Content))
		if err != nil {
			return nil, nil, fmt.Errorf("store project file %s: %w", f.Path, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO project_files (run_id, path, sha256, blob) VALUES (?,?,?,?)`,
			r.ID, f.Path, f.SHA256, blob); err != nil {
			return nil, nil, fmt.Errorf("store project file %s: %w", f.Path, err)
		}
	}
	return rec, w, nil
}

// RunID is the id of the run being recorded.
func (rec *Recorder) RunID() string { return rec.run }

// SetModels records the models the run used (sorted, deduplicated).
func (rec *Recorder) SetModels(ctx context.Context, models []string) (err error) {
	defer rec.db.full(&err)
	set := map[string]bool{}
	var out []string
	for _, m := range models {
		if m != "" && !set[m] {
			set[m] = true
			out = append(out, m)
		}
	}
	sort.Strings(out)
	b, _ := json.Marshal(nonNil(out))
	_, err = rec.db.w.ExecContext(ctx, `UPDATE runs SET models=? WHERE id=?`, string(b), rec.run)
	return err
}

// StartNode assigns n.Seq and inserts n as an open node (status running
// unless set). For an llm node with a Request, the request body is stored in
// the same transaction, so an in-flight call can already be inspected.
func (rec *Recorder) StartNode(ctx context.Context, n *record.Node) error {
	if n.Status == "" {
		n.Status = record.StatusRunning
	}
	return rec.insert(ctx, n)
}

// AddNode records a node that is already complete (Ended set; status ok
// unless set) in one transaction.
func (rec *Recorder) AddNode(ctx context.Context, n *record.Node) error {
	if n.Ended.IsZero() {
		n.Ended = n.Started
	}
	if n.Status == "" || n.Status == record.StatusRunning {
		n.Status = record.StatusOK
	}
	return rec.insert(ctx, n)
}

func (rec *Recorder) insert(ctx context.Context, n *record.Node) (err error) {
	defer rec.db.full(&err)
	if n.Seq == 0 {
		n.Seq = rec.seq.Add(1)
	}
	if n.Started.IsZero() {
		n.Started = rec.db.Now()
	}
	row, err := encodeNode(n)
	if err != nil {
		return err
	}
	args := nodeArgs(rec.run, n, row)
	if n.Kind == record.KindFinal && n.ForkSeq != 0 {
		// A branch ends with its final; the trunk's next turn goes on
		// from its last request, so what the trunk sent stays known.
		rec.forget(convKey{n.ForkSeq, n.Branch})
	}
	if rec.batch != nil {
		_, pending, err := rec.insertIn(txExec{ctx, rec.batch, rec.db}, n, args)
		rec.remember(pending) // the batch's commit makes them durable; a failed one ends the import
		return err
	}
	// A node without a request is one statement, which commits on its own.
	withRequest := n.Kind == record.KindLLM && n.LLM != nil && n.LLM.Request != nil
	var pending *pendingIDs
	var id int64
	err = rec.db.write(ctx, withRequest, "record", n.Seq, func(e execer) error {
		var err error
		id, pending, err = rec.insertIn(e, n, args)
		return err
	})
	if err != nil {
		return err
	}
	rec.remember(pending)
	if n.Ended.IsZero() {
		rec.mu.Lock()
		rec.open[n.Seq] = id
		rec.mu.Unlock()
	}
	return nil
}

// insertIn inserts node n (its row args) and, for an llm node, its request,
// through e, and returns the node's row id; the ids it wrote are to be
// remembered once e's transaction commits.
func (rec *Recorder) insertIn(e execer, n *record.Node, args []any) (int64, *pendingIDs, error) {
	id, _, err := e.exec(stInsertNode, args...)
	if err != nil {
		return 0, nil, fmt.Errorf("record n%d: %w", n.Seq, err)
	}
	if n.Kind != record.KindLLM || n.LLM == nil || n.LLM.Request == nil {
		return id, nil, nil
	}
	var response []byte
	if !n.Ended.IsZero() {
		response = n.LLM.Response
	}
	pending, err := rec.storeRequest(e, id, convKey{n.ForkSeq, n.Branch}, n.LLM.Request, response)
	if err != nil {
		return 0, nil, fmt.Errorf("record request of n%d: %w", n.Seq, err)
	}
	return id, pending, nil
}

// FinishNode closes an open node: its end time (db.Now() when zero), status
// (ok when still running) and the kind's fields as they are now. From this
// call on the node survives a crash.
func (rec *Recorder) FinishNode(ctx context.Context, n *record.Node) (err error) {
	defer rec.db.full(&err)
	if n.Ended.IsZero() {
		n.Ended = rec.db.Now()
	}
	if n.Status == "" || n.Status == record.StatusRunning {
		n.Status = record.StatusOK
	}
	row, err := encodeNode(n)
	if err != nil {
		return err
	}
	// The node's row id, kept from its start, spares both statements a
	// lookup of (run_id, seq).
	rec.mu.Lock()
	id, byID := rec.open[n.Seq]
	rec.mu.Unlock()
	// With a response, two statements in one transaction; else one.
	withResponse := n.Kind == record.KindLLM && n.LLM != nil && n.LLM.Response != nil
	err = rec.db.write(ctx, withResponse, "finish", n.Seq, func(e execer) error {
		if err := execFinish(e, rec.run, n, row, id); err != nil {
			return err
		}
		if withResponse {
			var err error
			if byID {
				_, _, err = e.exec(stSetResponseID, n.LLM.Response, id)
			} else {
				_, _, err = e.exec(stSetResponse, n.LLM.Response, rec.run, n.Seq)
			}
			if err != nil {
				return fmt.Errorf("finish n%d: %w", n.Seq, err)
			}
		}
		return nil
	})
	if err == nil && byID {
		rec.mu.Lock()
		delete(rec.open, n.Seq)
		rec.mu.Unlock()
	}
	return err
}

// nodeArgs are the values stInsertNode binds for n of run.
func nodeArgs(run string, n *record.Node, row nodeRow) []any {
	return []any{run, n.Seq, string(n.Kind), n.Branch, n.ForkSeq, n.Agent, n.Depth, n.Started.UnixNano(), endedNS(n),
		string(n.Status), n.Error, row.name, row.calls, row.callID, row.in, row.out, row.cached, row.cacheWrite, row.reasoning, row.fidelity, row.attempts, row.research, row.args, row.text, row.data, n.CalledBy}
}

// finishArgs are the values stFinishNode binds for n of run, or
// stFinishNodeID's with id, the node's row id, when it is not 0.
func finishArgs(run string, n *record.Node, row nodeRow, id int64) []any {
	args := []any{n.Ended.UnixNano(), string(n.Status), n.Error,
		row.name, row.calls, row.callID, row.in, row.out, row.cached, row.cacheWrite, row.reasoning, row.fidelity, row.attempts, row.research, row.args, row.text, row.data, n.CalledBy, run, n.Seq}
	if id != 0 {
		args = append(args, id)
	}
	return args
}

// execFinish updates node n with its finished fields, by its row id when
// id is not 0.
func execFinish(e execer, run string, n *record.Node, row nodeRow, id int64) error {
	st := stFinishNode
	if id != 0 {
		st = stFinishNodeID
	}
	_, k, err := e.exec(st, finishArgs(run, n, row, id)...)
	if err != nil {
		return fmt.Errorf("finish n%d: %w", n.Seq, err)
	}
	if k != 1 {
		return fmt.Errorf("finish n%d: the node was never started", n.Seq)
	}
	return nil
}

// Finish closes the run with its final status; nodes still open take that
// status too (a cancelled run's in-flight calls read cancelled).
func (rec *Recorder) Finish(ctx context.Context, status record.Status, errMsg string, ended time.Time) (err error) {
	defer rec.db.full(&err)
	if ended.IsZero() {
		ended = rec.db.Now()
	}
	tx, err := rec.db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("finish run: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE runs SET status=?, error=?, ended_ns=? WHERE id=?`,
		string(status), errMsg, ended.UnixNano(), rec.run); err != nil {
		return fmt.Errorf("finish run: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE nodes SET status=?, ended_ns=? WHERE run_id=? AND status='running'`,
		string(status), ended.UnixNano(), rec.run); err != nil {
		return fmt.Errorf("finish run: %w", err)
	}
	if err := writeTotals(ctx, tx, rec.run); err != nil {
		return fmt.Errorf("finish run: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	rec.mu.Lock()
	clear(rec.open) // closed with the run
	rec.mu.Unlock()
	return nil
}

// nodeRow is a node's kind-specific fields in column form.
type nodeRow struct {
	name, calls, callID, args, text, data string
	fidelity                              string
	in, out, attempts                     int64
	cached, cacheWrite, reasoning         sql.NullInt64
	research                              int
}

func encodeNode(n *record.Node) (nodeRow, error) {
	var row nodeRow
	row.text = n.Text
	switch n.Kind {
	case record.KindUser, record.KindFinal:
	case record.KindLLM:
		if l := n.LLM; l != nil {
			row.name = l.Model
			row.calls = strings.Join(l.Calls, " ")
			row.in, row.out = l.Usage.In, l.Usage.Out
			row.cached = sql.NullInt64{Int64: l.Usage.Cached, Valid: l.Usage.CachedReported}
			row.cacheWrite = sql.NullInt64{Int64: l.Usage.CacheWrite, Valid: l.Usage.CacheWriteReported}
			row.reasoning = sql.NullInt64{Int64: l.Usage.Reasoning, Valid: l.Usage.ReasoningReported}
			row.fidelity = string(l.Fidelity)
			row.attempts = int64(l.Attempts)
			row.text = l.Content
		}
	case record.KindTool:
		if t := n.Tool; t != nil {
			row.name, row.callID, row.args, row.text = t.Name, t.CallID, t.Args, t.Result
			if t.Research {
				row.research = 1
			}
		}
	case record.KindHandoff, record.KindFork, record.KindJoin:
		var payload any
		switch {
		case n.Kind == record.KindHandoff && n.Handoff != nil:
			payload = n.Handoff
		case n.Kind == record.KindFork && n.Fork != nil:
			payload = n.Fork
		case n.Kind == record.KindJoin && n.Join != nil:
			payload = n.Join
		}
		if payload != nil {
			b, err := json.Marshal(payload)
			if err != nil {
				return row, fmt.Errorf("encode n%d: %w", n.Seq, err)
			}
			row.data = string(b)
		}
	default:
		return row, fmt.Errorf("record n%d: unknown node kind %q", n.Seq, n.Kind)
	}
	return row, nil
}

func endedNS(n *record.Node) any {
	if n.Ended.IsZero() {
		return nil
	}
	return n.Ended.UnixNano()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// redactURL drops any user:password part of a base URL before it is stored.
func redactURL(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		rest := s[i+3:]
		if at := strings.IndexByte(rest, '@'); at >= 0 && (strings.IndexByte(rest, '/') < 0 || at < strings.IndexByte(rest, '/')) {
			return s[:i+3] + rest[at+1:]
		}
	}
	return s
}

// writerIdentity names this process so a reader can tell whether the writer
// of a running run is still alive.
func writerIdentity() (host string, pid int, tag string) {
	host, _ = os.Hostname()
	pid = os.Getpid()
	return host, pid, processTag(pid)
}

// processTag returns the start time of process pid as the kernel reports it
// (Linux), or "" where it cannot be read; a pid reused by another process
// has another tag.
func processTag(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	// The command name (field 2) may hold spaces; fields after ')' are plain.
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		f := strings.Fields(s[i+1:])
		if len(f) > 19 {
			return f[19] // field 22: starttime
		}
	}
	return ""
}

// totalsSQL sums one run's nodes into its totals columns.
const totalsSQL = `UPDATE runs SET
	totals_nodes = (SELECT count(*) FROM nodes WHERE run_id = runs.id),
	totals_llm = (SELECT count(*) FROM nodes WHERE run_id = runs.id AND kind = 'llm'),
	totals_in = (SELECT total(min(max(tokens_in, 0), 1099511627776)) FROM nodes WHERE run_id = runs.id AND kind = 'llm'),
	totals_out = (SELECT total(min(max(tokens_out, 0), 1099511627776)) FROM nodes WHERE run_id = runs.id AND kind = 'llm'),
	totals_agents = coalesce((SELECT group_concat(agent, char(10)) FROM
		(SELECT agent, min(seq) s FROM nodes WHERE run_id = runs.id AND agent <> '' GROUP BY agent ORDER BY s)), ''),
	totals_last_end = (SELECT max(ended_ns) FROM nodes WHERE run_id = runs.id)
	WHERE id = ?`

// writeTotals writes the per-run totals `inspect runs` lists (one pass over
// the run's nodes, once, when the run finishes).
func writeTotals(ctx context.Context, tx *sql.Tx, run string) error {
	_, err := tx.ExecContext(ctx, totalsSQL, run)
	return err
}

// unfinishedSQL lists the runs still being written, without their totals,
// through index runs_running: those alone, not every run.
const unfinishedSQL = `SELECT id, writer_host, writer_pid, writer_tag FROM runs WHERE status = 'running' AND totals_nodes IS NULL`

// repairTotals writes the totals of runs whose writer died before finishing
// them (interrupted runs), so that listing runs stays a read of runs.
func repairTotals(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, unfinishedSQL)
	if err != nil {
		return err
	}
	var dead []string
	for rows.Next() {
		var id, host, tag string
		var pid int
		if err := rows.Scan(&id, &host, &pid, &tag); err != nil {
			rows.Close()
			return err
		}
		if writerGone(host, pid, tag) {
			dead = append(dead, id)
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range dead {
		if err := writeTotals(ctx, tx, id); err != nil {
			return err
		}
	}
	return nil
}
