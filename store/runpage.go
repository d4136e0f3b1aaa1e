package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/record"
)

// RunOrder is what a page of runs is ordered by.
type RunOrder string

// The orders of a page of runs.
const (
	OrderStarted RunOrder = "started" // when it started (the default)
	OrderElapsed RunOrder = "elapsed" // its wall time, as RunSummary.Elapsed
	OrderTokens  RunOrder = "tokens"  // tokens in and out
	OrderNodes   RunOrder = "nodes"   // its nodes
	OrderStatus  RunOrder = "status"  // its status as read (a dead writer's run is interrupted)
)

// RunOrders lists the orders RunQuery.Order takes.
var RunOrders = []RunOrder{OrderStarted, OrderElapsed, OrderTokens, OrderNodes, OrderStatus}

// RunQuery selects one page of runs for a list that pages (the web's
// runs page): the filters, the order and the page are SQL, so a page
// reads its own rows and a count, not every run.
type RunQuery struct {
	// Status keeps runs of this status as read (interrupted for a running
	// run whose writer is gone); "" keeps all.
	Status record.Status
	// Source keeps runs of this source format; Agent runs in which this
	// agent owned a node.
	Source, Agent string
	// Text keeps runs whose id, project, tasks or agents contain it;
	// letters of ASCII are case folded (SQLite's lower()).
	Text string
	// Order is what the page is ordered by ("" is OrderStarted); Asc
	// orders it smallest first (the default is largest, newest, first).
	// Ties go newest first.
	Order RunOrder
	Asc   bool
	// Offset skips that many runs; Limit keeps at most that many (0 = all).
	Offset, Limit int
}

// RunPage is one page of runs.
type RunPage struct {
	// Runs are the page's runs, in the query's order.
	Runs []RunSummary
	// Matched is how many runs the filters keep (every page's);
	// All is how many the database holds.
	Matched, All int
}

// runExpr are the columns of a run as a list reads them (as Runs does): a
// finished run's totals as written with it, a running run's summed from
// its nodes, counts clamped (:max) and summed with total().
const runExpr = `r.id, r.started_ns, r.ended_ns, r.status, r.tasks, r.project, r.writer_host, r.writer_pid, r.writer_tag, r.source_format,
	coalesce(max(r.totals_in, 0), (SELECT total(min(max(tokens_in, 0), :max)) FROM nodes WHERE run_id = r.id AND kind = 'llm')) AS tin,
	coalesce(max(r.totals_out, 0), (SELECT total(min(max(tokens_out, 0), :max)) FROM nodes WHERE run_id = r.id AND kind = 'llm')) AS tout,
	coalesce(r.totals_llm, (SELECT count(*) FROM nodes WHERE run_id = r.id AND kind = 'llm')) AS llm,
	coalesce(r.totals_nodes, (SELECT count(*) FROM nodes WHERE run_id = r.id)) AS nodes,
	coalesce(r.totals_agents, (SELECT group_concat(agent, char(10)) FROM (SELECT agent, min(seq) s FROM nodes WHERE run_id = r.id AND agent <> '' GROUP BY agent ORDER BY s))) AS agents,
	CASE WHEN r.totals_nodes IS NULL THEN (SELECT max(ended_ns) FROM nodes WHERE run_id = r.id) ELSE r.totals_last_end END AS last_end`

// orderExpr is each order's SQL over the columns of runExpr (and the
// status as read, st).
var orderExpr = map[RunOrder]string{
	OrderStarted: "started_ns",
	OrderElapsed: "CASE WHEN ended_ns IS NOT NULL THEN ended_ns - started_ns WHEN last_end > started_ns THEN last_end - started_ns ELSE 0 END",
	OrderTokens:  "tin + tout",
	OrderNodes:   "nodes",
	OrderStatus:  "st",
}

// PageRuns reads one page of the runs q selects, in q's order, with how
// many the filters keep and how many there are.
func (db *DB) PageRuns(ctx context.Context, q RunQuery) (*RunPage, error) {
	if q.Order == "" {
		q.Order = OrderStarted
	}
	order, ok := orderExpr[q.Order]
	if !ok {
		return nil, fmt.Errorf("runs cannot be ordered by %q; use one of %v", q.Order, RunOrders)
	}
	gone, err := db.goneWriters(ctx)
	if err != nil {
		return nil, err
	}
	goneJSON, _ := json.Marshal(gone)
	var where []string
	args := []any{sql.Named("gone", string(goneJSON))}
	if q.Status != "" {
		where = append(where, "st = :status")
		args = append(args, sql.Named("status", string(q.Status)))
	}
	if q.Source != "" {
		where = append(where, "source_format = :source")
		args = append(args, sql.Named("source", q.Source))
	}
	if q.Agent != "" {
		where = append(where, "instr(char(10) || coalesce(agents, '') || char(10), char(10) || :agent || char(10)) > 0")
		args = append(args, sql.Named("agent", q.Agent))
	}
	if q.Text != "" {
		// tasks is a JSON array; a file whose tasks are not is searched as it is
		where = append(where, `instr(lower(id || char(10) || project || char(10) || coalesce(agents, '') || char(10) ||
			coalesce(CASE WHEN json_valid(tasks) AND json_type(tasks) = 'array' THEN (SELECT group_concat(value, char(10)) FROM json_each(tasks)) ELSE tasks END, '')), lower(:text)) > 0`)
		args = append(args, sql.Named("text", q.Text))
	}
	cond := ""
	if len(where) > 0 {
		cond = "WHERE " + strings.Join(where, " AND ")
	}
	dir := "DESC"
	if q.Asc {
		dir = "ASC"
	}
	limit := q.Limit
	if limit <= 0 {
		limit = -1
	}
	query := `WITH s AS (SELECT ` + runExpr + `,
			CASE WHEN r.status = 'running' AND r.id IN (SELECT value FROM json_each(:gone)) THEN 'interrupted' ELSE r.status END AS st
			FROM runs r)
		SELECT id, started_ns, ended_ns, st, tasks, project, source_format, tin, tout, llm, nodes, agents, last_end,
			count(*) OVER (), (SELECT count(*) FROM runs)
		FROM s ` + cond + `
		ORDER BY ` + order + ` ` + dir + `, started_ns DESC, id
		LIMIT :limit OFFSET :offset`
	args = append(args, sql.Named("limit", limit), sql.Named("max", record.MaxTokens), sql.Named("offset", max(q.Offset, 0)))
	rows, err := db.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	p := &RunPage{Runs: []RunSummary{}}
	for rows.Next() {
		var s RunSummary
		var started int64
		var ended, lastEnd sql.NullInt64
		var tasks string
		var agents sql.NullString
		var tin, tout float64
		if err := rows.Scan(&s.ID, &started, &ended, &s.Status, &tasks, &s.Project, &s.Source, &tin, &tout, &s.LLMCalls, &s.Nodes,
			&agents, &lastEnd, &p.Matched, &p.All); err != nil {
			return nil, err
		}
		s.TokensIn, s.TokensOut = sumTokens(tin), sumTokens(tout)
		s.Started = time.Unix(0, started)
		if ended.Valid {
			s.Ended = time.Unix(0, ended.Int64)
		}
		if lastEnd.Valid {
			s.LastEnd = time.Unix(0, lastEnd.Int64)
		}
		_ = json.Unmarshal([]byte(tasks), &s.Tasks)
		if agents.Valid && agents.String != "" {
			s.Agents = strings.Split(agents.String, "\n")
		}
		p.Runs = append(p.Runs, s)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(p.Runs) == 0 {
		// a page past the end has no row to carry the counts
		if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM runs`).Scan(&p.All); err != nil {
			return nil, fmt.Errorf("count runs: %w", err)
		}
		if q.Offset > 0 && len(where) > 0 {
			n, err := db.PageRuns(ctx, RunQuery{Status: q.Status, Source: q.Source, Agent: q.Agent, Text: q.Text, Limit: 1})
			if err != nil {
				return nil, err
			}
			p.Matched = n.Matched
		} else if q.Offset > 0 {
			p.Matched = p.All
		}
	}
	return p, nil
}

// goneWriters are the ids of the runs that read running in the file but
// whose writer is gone: a reader reads them interrupted.
func (db *DB) goneWriters(ctx context.Context) ([]string, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id, writer_host, writer_pid, writer_tag FROM runs WHERE status = 'running'`)
	if err != nil {
		return nil, fmt.Errorf("list running runs: %w", err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var id, host, tag string
		var pid int
		if err := rows.Scan(&id, &host, &pid, &tag); err != nil {
			return nil, err
		}
		if writerGone(host, pid, tag) {
			out = append(out, id)
		}
	}
	return out, rows.Err()
}

// RunFacets are what a list's filters offer: the source formats and the
// agents of all runs, sorted, and whether a run reads running.
type RunFacets struct {
	Sources []string
	Agents  []string
	Running bool
}

// Facets reads the RunFacets of the database: a run's agents and source,
// not its summary.
func (db *DB) Facets(ctx context.Context) (*RunFacets, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT r.source_format, r.status = 'running',
			coalesce(r.totals_agents, (SELECT group_concat(agent, char(10)) FROM (SELECT DISTINCT agent FROM nodes WHERE run_id = r.id AND agent <> '')))
		FROM runs r`)
	if err != nil {
		return nil, fmt.Errorf("read the runs' sources and agents: %w", err)
	}
	defer rows.Close()
	f := &RunFacets{}
	sources, agents := map[string]bool{}, map[string]bool{}
	running := false
	for rows.Next() {
		var src string
		var run bool
		var ag sql.NullString
		if err := rows.Scan(&src, &run, &ag); err != nil {
			return nil, err
		}
		if src == "" {
			src = record.SourceInspect
		}
		sources[src] = true
		running = running || run
		if ag.Valid && ag.String != "" {
			for _, a := range strings.Split(ag.String, "\n") {
				agents[a] = true
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if running {
		// a running run whose writer is gone reads interrupted
		gone, err := db.goneWriters(ctx)
		if err != nil {
			return nil, err
		}
		var n int
		if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE status = 'running'`).Scan(&n); err != nil {
			return nil, err
		}
		f.Running = n > len(gone)
	}
	for s := range sources {
		f.Sources = append(f.Sources, s)
	}
	for a := range agents {
		f.Agents = append(f.Agents, a)
	}
	sort.Strings(f.Sources)
	sort.Strings(f.Agents)
	return f, nil
}
