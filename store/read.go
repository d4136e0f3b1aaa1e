package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	jsoniter "github.com/json-iterator/go"

	"github.com/inspect-dev/inspect/record"
)

// RunSummary is one line of `inspect runs`.
type RunSummary struct {
	ID      string
	Started time.Time
	Ended   time.Time // zero while running (or interrupted)
	// LastEnd is the latest end time of its nodes, the elapsed time of a run
	// that has no end (running, or interrupted by a dead writer).
	LastEnd   time.Time
	Status    record.Status
	Tasks     []string
	Project   string
	Agents    []string // in order of first appearance
	TokensIn  int64
	TokensOut int64
	LLMCalls  int64
	Nodes     int64
	Source    string // the source format: inspect, or an importer's
	// Tags are the run's tags; filled by ListRuns (nil from Runs).
	Tags map[string]string
}

// Elapsed is Ended-Started, or, while the run has no end (running or
// interrupted), up to its last node's end (0 without one), as graph.Run does.
func (s *RunSummary) Elapsed() time.Duration {
	switch {
	case !s.Ended.IsZero():
		return s.Ended.Sub(s.Started)
	case s.LastEnd.After(s.Started):
		return s.LastEnd.Sub(s.Started)
	}
	return 0
}

// Runs lists runs newest first, at most limit (0 = all).
func (db *DB) Runs(ctx context.Context, limit int) ([]RunSummary, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	// A finished run's totals were written with it (DESIGN §12: listing
	// costs runs, not nodes); a run still running, or interrupted before a
	// writer repaired it, sums its nodes. Counts are clamped as every reader
	// clamps them and summed with total() (a float), so impossible numbers
	// in a crafted file cannot overflow the sum.
	q := `SELECT r.id, r.started_ns, r.ended_ns, r.status, r.tasks, r.project, r.writer_host, r.writer_pid, r.writer_tag, r.source_format,
			coalesce(max(r.totals_in, 0), (SELECT total(min(max(tokens_in, 0), ?2)) FROM nodes WHERE run_id = r.id AND kind = 'llm')),
			coalesce(max(r.totals_out, 0), (SELECT total(min(max(tokens_out, 0), ?2)) FROM nodes WHERE run_id = r.id AND kind = 'llm')),
			coalesce(r.totals_llm, (SELECT count(*) FROM nodes WHERE run_id = r.id AND kind = 'llm')),
			coalesce(r.totals_nodes, (SELECT count(*) FROM nodes WHERE run_id = r.id)),
			coalesce(r.totals_agents, (SELECT group_concat(agent, char(10)) FROM (SELECT agent, min(seq) s FROM nodes WHERE run_id = r.id AND agent <> '' GROUP BY agent ORDER BY s))),
			CASE WHEN r.totals_nodes IS NULL THEN (SELECT max(ended_ns) FROM nodes WHERE run_id = r.id) ELSE r.totals_last_end END
		FROM runs r
		ORDER BY r.started_ns DESC, r.id LIMIT ?1`
	rows, err := db.r.QueryContext(ctx, q, limit, record.MaxTokens)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []RunSummary
	for rows.Next() {
		var s RunSummary
		var started int64
		var ended sql.NullInt64
		var tasks, host, tag string
		var pid int
		var agents sql.NullString
		var lastEnd sql.NullInt64
		var tin, tout float64
		if err := rows.Scan(&s.ID, &started, &ended, &s.Status, &tasks, &s.Project, &host, &pid, &tag, &s.Source,
			&tin, &tout, &s.LLMCalls, &s.Nodes, &agents, &lastEnd); err != nil {
			return nil, err
		}
		s.TokensIn, s.TokensOut = sumTokens(tin), sumTokens(tout)
		if lastEnd.Valid {
			s.LastEnd = time.Unix(0, lastEnd.Int64)
		}
		s.Started = time.Unix(0, started)
		if ended.Valid {
			s.Ended = time.Unix(0, ended.Int64)
		}
		_ = json.Unmarshal([]byte(tasks), &s.Tasks)
		if agents.Valid && agents.String != "" {
			s.Agents = strings.Split(agents.String, "\n")
		}
		if s.Status == record.StatusRunning && writerGone(host, pid, tag) {
			s.Status = record.StatusInterrupted
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// sumTokens converts a total() of clamped counts back to an int64, capped
// at the largest one.
func sumTokens(f float64) int64 {
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(f)
}

// NotFoundError is returned when a run reference matches no run.
type NotFoundError struct {
	Ref    string
	Recent []string // the newest run ids, to suggest
}

func (e *NotFoundError) Error() string {
	if len(e.Recent) == 0 {
		return fmt.Sprintf("no run matches %q: the database has no runs yet", e.Ref)
	}
	return fmt.Sprintf("no run matches %q; recent runs: %s", e.Ref, strings.Join(e.Recent, ", "))
}

// AmbiguousError is returned when a prefix matches several runs.
type AmbiguousError struct {
	Ref     string
	Matches []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%q matches %d runs (%s); type more of the id", e.Ref, len(e.Matches), strings.Join(e.Matches, ", "))
}

// ErrNoRuns is returned for "latest" when the database holds no run.
var ErrNoRuns = errors.New("the database has no runs yet")

// ResolveRun turns a run reference into a run id: "latest" (or "") for the
// newest run, a full id, or a unique prefix of one.
func (db *DB) ResolveRun(ctx context.Context, ref string) (string, error) {
	if ref == "" || ref == "latest" {
		var id string
		err := db.r.QueryRowContext(ctx, `SELECT id FROM runs ORDER BY started_ns DESC, id LIMIT 1`).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return "", ErrNoRuns
		}
		return id, err
	}
	rows, err := db.r.QueryContext(ctx, `SELECT id FROM runs WHERE substr(id, 1, ?) = ? ORDER BY started_ns DESC LIMIT 11`, len(ref), ref)
	if err != nil {
		return "", err
	}
	var matches []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return "", err
		}
		if id == ref {
			rows.Close()
			return id, nil
		}
		matches = append(matches, id)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return "", fmt.Errorf("resolve run %q: %w", ref, err)
	}
	rows.Close()
	switch len(matches) {
	case 0:
		recent, _ := db.recentIDs(ctx, 5)
		return "", &NotFoundError{Ref: ref, Recent: recent}
	case 1:
		return matches[0], nil
	default:
		return "", &AmbiguousError{Ref: ref, Matches: matches}
	}
}

func (db *DB) recentIDs(ctx context.Context, n int) ([]string, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id FROM runs ORDER BY started_ns DESC LIMIT ?`, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// LoadRun reads one run with its project snapshot. A run still marked
// running whose writer process is gone reads as interrupted.
func (db *DB) LoadRun(ctx context.Context, id string) (*record.Run, error) {
	var r record.Run
	var started int64
	var ended sql.NullInt64
	var tasks, opts, models, host, tag string
	var pid int
	err := db.r.QueryRowContext(ctx, `SELECT id, started_ns, ended_ns, status, error, tasks, project, options, base_url, models,
		writer_host, writer_pid, writer_tag, source_format, source_version, source_id, source_path FROM runs WHERE id=?`, id).
		Scan(&r.ID, &started, &ended, &r.Status, &r.Error, &tasks, &r.Project.Name, &opts, &r.BaseURL, &models, &host, &pid, &tag,
			&r.Source.Format, &r.Source.Version, &r.Source.ID, &r.Source.Path)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &NotFoundError{Ref: id}
	}
	if err != nil {
		return nil, fmt.Errorf("load run %s: %w", id, err)
	}
	r.Started = time.Unix(0, started)
	if ended.Valid {
		r.Ended = time.Unix(0, ended.Int64)
	}
	if err := json.Unmarshal([]byte(tasks), &r.Tasks); err != nil {
		return nil, fmt.Errorf("load run %s: tasks: %w", id, err)
	}
	if r.Options, err = decodeOptions(opts); err != nil {
		return nil, fmt.Errorf("load run %s: options: %w", id, err)
	}
	if err := json.Unmarshal([]byte(models), &r.Models); err != nil {
		return nil, fmt.Errorf("load run %s: models: %w", id, err)
	}
	if r.Status == record.StatusRunning && writerGone(host, pid, tag) {
		r.Status = record.StatusInterrupted
		if r.Error == "" {
			r.Error = "the process recording this run stopped before the run ended"
		}
	}
	rows, err := db.r.QueryContext(ctx, `SELECT p.path, p.sha256, b.data FROM project_files p JOIN blobs b ON b.id = p.blob WHERE p.run_id=? ORDER BY p.path`, id)
	if err != nil {
		return nil, fmt.Errorf("load run %s: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var f record.File
		if err := rows.Scan(&f.Path, &f.SHA256, &f.Content); err != nil {
			return nil, err
		}
		r.Project.Files = append(r.Project.Files, f)
	}
	return &r, rows.Err()
}

// ScanNodes calls fn for each node of run in sequence order, without request
// or response bodies (DB.Request and DB.Response load those). The Node passed
// to fn is fresh for each call; fn may keep it. If the run reads interrupted,
// its open nodes read interrupted too.
func (db *DB) ScanNodes(ctx context.Context, run *record.Run, fn func(*record.Node) error) error {
	return db.ScanNodesTo(ctx, run, 0, fn)
}

// ScanNodesTo is ScanNodes of the nodes up to and including seq last (0:
// all): what a command about one node needs of the run before it.
func (db *DB) ScanNodesTo(ctx context.Context, run *record.Run, last int64, fn func(*record.Node) error) error {
	return db.ScanNodesRange(ctx, run, math.MinInt64, last, fn)
}

// CallWindow is the first seq of what llm node n's neighbourhood in time
// reaches: the llm node before n in n's conversation, and every llm node
// before n that ended from since up to n's start, each with the fork node
// its conversation hangs from (n's too). It reads two index ranges (the
// conversation's previous call walking back from n; the calls by their end,
// nodes_llm_ended), never the nodes between. n.Seq when none is there.
func (db *DB) CallWindow(ctx context.Context, run *record.Run, n *record.Node, since time.Time) (int64, error) {
	lo := n.Seq
	low := func(seq, fork sql.NullInt64) {
		if seq.Valid && seq.Int64 < lo {
			lo = seq.Int64
		}
		if fork.Valid && fork.Int64 > 0 && fork.Int64 < lo {
			lo = fork.Int64
		}
	}
	low(sql.NullInt64{}, sql.NullInt64{Int64: n.ForkSeq, Valid: true})
	var seq, fork sql.NullInt64
	err := db.r.QueryRowContext(ctx, `SELECT seq, fork_seq FROM nodes WHERE run_id=? AND seq<? AND kind='llm' AND fork_seq=? AND branch=?
		ORDER BY seq DESC LIMIT 1`, run.ID, n.Seq, n.ForkSeq, n.Branch).Scan(&seq, &fork)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("load nodes of %s: %w", run.ID, err)
	}
	low(seq, fork)
	if err := db.r.QueryRowContext(ctx, `SELECT min(seq), min(nullif(fork_seq, 0)) FROM nodes INDEXED BY nodes_llm_ended
		WHERE run_id=? AND kind='llm' AND ended_ns>=? AND ended_ns<=? AND seq<?`,
		run.ID, since.UnixNano(), n.Started.UnixNano(), n.Seq).Scan(&seq, &fork); err != nil {
		return 0, fmt.Errorf("load nodes of %s: %w", run.ID, err)
	}
	low(seq, fork)
	return lo, nil
}

// LastSeq is the seq of run's last node (0: none).
func (db *DB) LastSeq(ctx context.Context, run *record.Run) (int64, error) {
	var last sql.NullInt64
	if err := db.r.QueryRowContext(ctx, `SELECT max(seq) FROM nodes WHERE run_id=?`, run.ID).Scan(&last); err != nil {
		return 0, fmt.Errorf("load nodes of %s: %w", run.ID, err)
	}
	return last.Int64, nil
}

// ScanNodesRange is ScanNodes of the nodes whose seq is after from and
// up to and including last (≤ 0: to the end).
func (db *DB) ScanNodesRange(ctx context.Context, run *record.Run, from, last int64, fn func(*record.Node) error) error {
	if last <= 0 {
		last = math.MaxInt64
	}
	var fnErr error
	err := db.rawQuery(ctx, nodeSelect+` WHERE run_id=? AND seq > ? AND seq <= ? ORDER BY seq`, []any{run.ID, from, last}, func(r *rowReader) error {
		n, err := readNode(r, run)
		if err != nil {
			return err
		}
		fnErr = fn(n)
		return fnErr
	})
	switch {
	case fnErr != nil:
		return fnErr
	case err != nil:
		return fmt.Errorf("load nodes of %s: %w", run.ID, err)
	}
	return nil
}

const nodeSelect = `SELECT seq, kind, branch, fork_seq, agent, depth, started_ns, ended_ns, status, error,
	name, calls, call_id, tokens_in, tokens_out, tokens_cached, tokens_cache_write, tokens_reasoning, fidelity, attempts, research, args, text, data, called_by FROM nodes`

// readNode reads one row of nodeSelect.
func readNode(r *rowReader, run *record.Run) (*record.Node, error) {
	n := new(record.Node)
	n.Seq, n.Kind, n.Branch, n.ForkSeq = r.int64(), record.Kind(r.string()), r.string(), r.int64()
	n.Agent, n.Depth = r.string(), r.int()
	started, ended := r.int64(), r.nullInt64()
	n.Status, n.Error = record.Status(r.string()), r.string()
	name, calls, callID := r.string(), r.string(), r.string()
	in, out := r.int64(), r.int64()
	var u usageCols
	u.cached, u.cacheWrite, u.reasoning = r.nullInt64(), r.nullInt64(), r.nullInt64()
	u.fidelity, u.attempts = r.string(), r.int()
	research, args := r.int(), r.string()
	n.Text = r.string()
	data := r.string()
	n.CalledBy = r.int64()
	if r.err != nil {
		return nil, r.err
	}
	n.Started = time.Unix(0, started)
	if ended.Valid {
		n.Ended = time.Unix(0, ended.Int64)
	}
	if n.Status == record.StatusRunning && run.Status == record.StatusInterrupted {
		n.Status = record.StatusInterrupted
	}
	if err := decodeNode(n, name, calls, callID, args, data, in, out, u, research); err != nil {
		return nil, fmt.Errorf("n%d: %w", n.Seq, err)
	}
	return n, nil
}

// usageCols are the nullable usage columns of an llm node, its fidelity
// and its attempts.
type usageCols struct {
	cached, cacheWrite, reasoning sql.NullInt64
	fidelity                      string
	attempts                      int
}

func decodeNode(n *record.Node, name, calls, callID, args, data string, in, out int64, u usageCols, research int) error {
	switch n.Kind {
	case record.KindUser, record.KindFinal:
	case record.KindLLM:
		l := &record.LLM{Model: name, Content: n.Text, Fidelity: record.Fidelity(u.fidelity), Attempts: max(u.attempts, 0), Usage: record.Usage{In: in, Out: out,
			Cached: u.cached.Int64, CachedReported: u.cached.Valid,
			CacheWrite: u.cacheWrite.Int64, CacheWriteReported: u.cacheWrite.Valid,
			Reasoning: u.reasoning.Int64, ReasoningReported: u.reasoning.Valid}}
		l.Usage.Clamp() // a crafted file's impossible numbers read within bounds
		if calls != "" {
			l.Calls = strings.Split(calls, " ")
		}
		n.Text = ""
		n.LLM = l
	case record.KindTool:
		n.Tool = &record.Tool{Name: name, CallID: callID, Args: args, Result: n.Text, Research: research != 0}
		n.Text = ""
	case record.KindHandoff:
		n.Handoff = new(record.Handoff)
		return unmarshalData(data, n.Handoff)
	case record.KindFork:
		n.Fork = new(record.Fork)
		return unmarshalData(data, n.Fork)
	case record.KindJoin:
		n.Join = new(record.Join)
		return unmarshalData(data, n.Join)
	default:
		return fmt.Errorf("unknown node kind %q (written by a newer inspect?)", n.Kind)
	}
	return nil
}

func unmarshalData(data string, v any) error {
	if data == "" {
		return nil
	}
	return nodeJSON.UnmarshalFromString(data, v)
}

// nodeJSON decodes the data column of fork, join and hand-off nodes:
// json-iterator in encoding/json's behaviour, at a fraction of its cost
// (a run's load decodes one a fork and one a join).
var nodeJSON = jsoniter.ConfigCompatibleWithStandardLibrary

// Node loads one node of run by sequence number (without request/response bodies).
func (db *DB) Node(ctx context.Context, run *record.Run, seq int64) (*record.Node, error) {
	var found *record.Node
	if err := db.eachNode(ctx, run, ` WHERE run_id=? AND seq=?`, []any{run.ID, seq}, func(n *record.Node) bool {
		found = n
		return false
	}); err != nil {
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("run %s has no node n%d: %w", run.ID, seq, ErrNoNode)
	}
	return found, nil
}

// eachNode calls fn with each node nodeSelect+where selects, until fn
// returns false.
func (db *DB) eachNode(ctx context.Context, run *record.Run, where string, args []any, fn func(*record.Node) bool) error {
	err := db.rawQuery(ctx, nodeSelect+where, args, func(r *rowReader) error {
		n, err := readNode(r, run)
		if err != nil {
			return err
		}
		if !fn(n) {
			return errStop
		}
		return nil
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// errStop ends a rawQuery early.
var errStop = errors.New("stop")

// ErrNoNode is returned (wrapped) by Node for a sequence number the run
// does not have.
var ErrNoNode = errors.New("no such node")

// JoinOf returns the join node that closes fork node forkSeq of run, or nil
// while the fork is open. It reads forward from the fork to the first join
// whose payload names it: the fork's own nodes, not the run.
func (db *DB) JoinOf(ctx context.Context, run *record.Run, forkSeq int64) (*record.Node, error) {
	var join *record.Node
	err := db.eachNode(ctx, run, ` WHERE run_id=? AND seq>? AND kind='join' ORDER BY seq`, []any{run.ID, forkSeq}, func(n *record.Node) bool {
		if n.Join != nil && n.Join.ForkSeq == forkSeq {
			join = n
			return false
		}
		return true
	})
	return join, err
}

// NodeBrief is what a list of node references shows of each node.
type NodeBrief struct {
	Seq   int64
	Kind  record.Kind
	Agent string
	Calls []string // llm: the names it called
}

// NodeList returns at most limit nodes of run whose reference n<seq> starts
// with prefix ("n12" or "12": n12, n120…n129, n1200…; "" or "n": the first
// ones), in sequence order; llmOnly keeps llm nodes. It reads index ranges,
// never the whole run.
func (db *DB) NodeList(ctx context.Context, run string, prefix string, llmOnly bool, limit int) ([]NodeBrief, error) {
	var last int64
	if err := db.r.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM nodes WHERE run_id=?`, run).Scan(&last); err != nil {
		return nil, err
	}
	q := `SELECT seq, kind, agent, calls FROM nodes WHERE run_id=? AND seq BETWEEN ? AND ?`
	if llmOnly {
		q += ` AND kind='llm'`
	}
	q += ` ORDER BY seq LIMIT ?`
	type span struct{ lo, hi int64 }
	var spans []span
	digits := strings.TrimPrefix(strings.TrimPrefix(prefix, "n"), "N")
	if digits == "" {
		spans = []span{{1, last}}
	} else {
		p, err := strconv.ParseInt(digits, 10, 64)
		if err != nil || p <= 0 || digits[0] == '0' {
			return nil, nil // no node reference starts so
		}
		for lo, hi := p, p; lo <= last && lo > 0; lo, hi = lo*10, hi*10+9 {
			spans = append(spans, span{lo, hi})
		}
	}
	var out []NodeBrief
	for _, sp := range spans {
		if len(out) >= limit {
			break
		}
		rows, err := db.r.QueryContext(ctx, q, run, sp.lo, sp.hi, limit-len(out))
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var b NodeBrief
			var calls string
			if err := rows.Scan(&b.Seq, &b.Kind, &b.Agent, &calls); err != nil {
				rows.Close()
				return nil, err
			}
			if calls != "" {
				b.Calls = strings.Split(calls, " ")
			}
			out = append(out, b)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

// NearestNodes returns the (at most) k nodes of run nearest to seq, in
// sequence order, and the run's last sequence number; for the message
// about a node that does not exist.
func (db *DB) NearestNodes(ctx context.Context, run string, seq int64, k int) ([]NodeBrief, int64, error) {
	var last int64
	if err := db.r.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM nodes WHERE run_id=?`, run).Scan(&last); err != nil {
		return nil, 0, err
	}
	var near []NodeBrief
	for _, q := range []string{
		`SELECT seq, kind FROM nodes WHERE run_id=? AND seq<? ORDER BY seq DESC LIMIT ?`,
		`SELECT seq, kind FROM nodes WHERE run_id=? AND seq>=? ORDER BY seq LIMIT ?`,
	} {
		rows, err := db.r.QueryContext(ctx, q, run, seq, k)
		if err != nil {
			return nil, 0, err
		}
		for rows.Next() {
			var b NodeBrief
			if err := rows.Scan(&b.Seq, &b.Kind); err != nil {
				rows.Close()
				return nil, 0, err
			}
			near = append(near, b)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, 0, err
		}
	}
	dist := func(b NodeBrief) int64 {
		if b.Seq < seq {
			return seq - b.Seq
		}
		return b.Seq - seq
	}
	sort.Slice(near, func(i, j int) bool {
		if di, dj := dist(near[i]), dist(near[j]); di != dj {
			return di < dj
		}
		return near[i].Seq < near[j].Seq
	})
	if len(near) > k {
		near = near[:k]
	}
	sort.Slice(near, func(i, j int) bool { return near[i].Seq < near[j].Seq })
	return near, last, nil
}

// writerGone reports whether the process that recorded a running run has
// certainly stopped. A writer on another host is presumed alive.
func writerGone(host string, pid int, tag string) bool {
	me, _ := os.Hostname()
	if host != me || pid <= 0 {
		return false
	}
	if pid == os.Getpid() {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && errors.Is(err, syscall.ESRCH) {
		return true
	}
	if tag != "" {
		if now := processTag(pid); now != "" && now != tag {
			return true // the pid now belongs to another process
		}
	}
	return false
}

// Ask is one question (or replay) put to a recorded model call.
type Ask struct {
	ID       int64
	RunID    string
	NodeSeq  int64
	Mode     string // question, replay, prompt
	Question string
	Answer   string
	Model    string
	BaseURL  string
	Created  time.Time
	// Incomplete says why Answer is not the whole answer ("the answer was
	// cut off after 412 bytes"); "" when it is.
	Incomplete string
}

// AddAsk stores an ask with its run. The base URL is stored without credentials.
func (db *DB) AddAsk(ctx context.Context, a *Ask) (err error) {
	defer db.full(&err)
	if err := db.writable(); err != nil {
		return err
	}
	if a.Created.IsZero() {
		a.Created = db.Now()
	}
	res, err := db.w.ExecContext(ctx, `INSERT INTO asks (run_id, node_seq, mode, question, answer, model, base_url, created_ns, incomplete)
		VALUES (?,?,?,?,?,?,?,?,?)`, a.RunID, a.NodeSeq, a.Mode, a.Question, a.Answer, a.Model, redactURL(a.BaseURL), a.Created.UnixNano(), a.Incomplete)
	if err != nil {
		return fmt.Errorf("store ask: %w", err)
	}
	a.ID, _ = res.LastInsertId()
	return nil
}

// Asks lists the asks of one node (seq > 0) or of the whole run (seq = 0), oldest first.
func (db *DB) Asks(ctx context.Context, run string, seq int64) ([]Ask, error) {
	q := `SELECT id, run_id, node_seq, mode, question, answer, model, base_url, created_ns, incomplete FROM asks WHERE run_id=?`
	args := []any{run}
	if seq > 0 {
		q += ` AND node_seq=?`
		args = append(args, seq)
	}
	rows, err := db.r.QueryContext(ctx, q+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("load asks: %w", err)
	}
	defer rows.Close()
	var out []Ask
	for rows.Next() {
		var a Ask
		var created int64
		if err := rows.Scan(&a.ID, &a.RunID, &a.NodeSeq, &a.Mode, &a.Question, &a.Answer, &a.Model, &a.BaseURL, &created, &a.Incomplete); err != nil {
			return nil, err
		}
		a.Created = time.Unix(0, created)
		out = append(out, a)
	}
	return out, rows.Err()
}

// Seqs returns every node sequence number of run, sorted; used to suggest
// the nearest nodes to a reference that does not exist.
func (db *DB) Seqs(ctx context.Context, run string) ([]int64, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT seq FROM nodes WHERE run_id=? ORDER BY seq`, run)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var s int64
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, rows.Err()
}
