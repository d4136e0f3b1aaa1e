package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// The recording path's statements run through an execer: inside an
// import's batch (a database/sql transaction) or, for the runtime's nodes,
// on the writer's own SQLite connection below database/sql, with its own
// BEGIN IMMEDIATE … COMMIT and statements prepared once per connection.
// database/sql's transaction starts a goroutine and a context per
// transaction, wraps each statement and converts each argument: that was
// as much as SQLite's own work on a model call's two small transactions
// (BenchmarkRecordLLM).

// stmtID names a statement of the recording path.
type stmtID int

const (
	stInsertNode stmtID = iota
	stFinishNode
	stSelectBlob
	stInsertBlob
	stSelectLink
	stInsertLink
	stInsertRequest
	stSetResponse
	stFinishNodeID
	stSetResponseID
	numStmts
)

// stmtSQL is each statement's text.
var stmtSQL = [numStmts]string{
	stInsertNode: `INSERT INTO nodes (` + nodeColumns + `) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
	stFinishNode: `UPDATE nodes SET ended_ns=?, status=?, error=?,
		name=?, calls=?, call_id=?, tokens_in=?, tokens_out=?, tokens_cached=?, tokens_cache_write=?, tokens_reasoning=?, fidelity=?, attempts=?, research=?, args=?, text=?, data=?, called_by=?
		WHERE run_id=? AND seq=?`,
	stSelectBlob: `SELECT id FROM blobs WHERE hash=?`,
	stInsertBlob: `INSERT INTO blobs (hash, data) VALUES (?,?)`,
	stSelectLink: `SELECT id FROM chain WHERE prev=? AND hkey=? AND data=?`,
	// Inserted after stSelectLink found none (an INSERT … WHERE NOT EXISTS
	// on the same table costs SQLite a temporary table each time).
	stInsertLink:    `INSERT INTO chain (prev, hkey, data) VALUES (?,?,?)`,
	stInsertRequest: `INSERT INTO requests (node_id, head, system, last, tail, size, sha256, response) VALUES (?,?,?,?,?,?,?,?)`,
	stSetResponse:   `UPDATE requests SET response=? WHERE node_id=(SELECT id FROM nodes WHERE run_id=? AND seq=?)`,
	// The same two by the node's row id, which the recorder keeps from
	// the node's start: no lookup of (run_id, seq) in the finish.
	stFinishNodeID: `UPDATE nodes SET ended_ns=?, status=?, error=?,
		name=?, calls=?, call_id=?, tokens_in=?, tokens_out=?, tokens_cached=?, tokens_cache_write=?, tokens_reasoning=?, fidelity=?, attempts=?, research=?, args=?, text=?, data=?, called_by=?
		WHERE run_id=? AND seq=? AND id=?`,
	stSetResponseID: `UPDATE requests SET response=? WHERE node_id=?`,
}

// execer runs the recording path's statements in one transaction.
type execer interface {
	// exec runs st and returns the last inserted row id and the rows changed.
	exec(st stmtID, args ...any) (id, changed int64, err error)
	// queryID runs st, a query of one integer column, and returns its
	// first row's value (sql.ErrNoRows when it has none).
	queryID(st stmtID, args ...any) (int64, error)
}

// txExec runs statements in a database/sql transaction (an import's
// batch, a run's creation) with the statements prepared on the writer pool.
type txExec struct {
	ctx context.Context
	tx  *sql.Tx
	db  *DB
}

func (e txExec) exec(st stmtID, args ...any) (int64, int64, error) {
	res, err := e.tx.StmtContext(e.ctx, e.db.stmts.st[st]).ExecContext(e.ctx, args...)
	if err != nil {
		return 0, 0, err
	}
	id, _ := res.LastInsertId()
	n, _ := res.RowsAffected()
	return id, n, nil
}

func (e txExec) queryID(st stmtID, args ...any) (int64, error) {
	var id int64
	err := e.tx.StmtContext(e.ctx, e.db.stmts.st[st]).QueryRowContext(e.ctx, args...).Scan(&id)
	return id, err
}

// rawStmts are the recording statements prepared on one driver connection
// of the writer pool (it has one), and the transaction statements.
type rawStmts struct {
	conn                    *sqlite3.SQLiteConn
	st                      [numStmts]driver.Stmt
	begin, commit, rollback driver.Stmt
}

func (r *rawStmts) close() {
	for _, s := range append(r.st[:], r.begin, r.commit, r.rollback) {
		if s != nil {
			s.Close()
		}
	}
	*r = rawStmts{}
}

// rawExec runs statements on the writer's driver connection.
type rawExec struct {
	ctx  context.Context
	s    *rawStmts
	args []driver.NamedValue
	dest [1]driver.Value
}

// named converts args to the driver's values, in e.args.
func (e *rawExec) named(args []any) ([]driver.NamedValue, error) {
	e.args = e.args[:0]
	for i, a := range args {
		var v driver.Value
		switch x := a.(type) {
		case nil, int64, string, []byte, float64, bool:
			v = x
		case int:
			v = int64(x)
		case sql.NullInt64:
			if x.Valid {
				v = x.Int64
			}
		default:
			var err error
			if v, err = driver.DefaultParameterConverter.ConvertValue(a); err != nil {
				return nil, fmt.Errorf("internal error: argument %d: %w", i+1, err)
			}
		}
		e.args = append(e.args, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	return e.args, nil
}

func (e *rawExec) run(s driver.Stmt, args []any) (int64, int64, error) {
	nv, err := e.named(args)
	if err != nil {
		return 0, 0, err
	}
	res, err := s.(driver.StmtExecContext).ExecContext(e.ctx, nv)
	if err != nil {
		return 0, 0, err
	}
	id, _ := res.LastInsertId()
	n, _ := res.RowsAffected()
	return id, n, nil
}

func (e *rawExec) exec(st stmtID, args ...any) (int64, int64, error) {
	return e.run(e.s.st[st], args)
}

func (e *rawExec) queryID(st stmtID, args ...any) (int64, error) {
	nv, err := e.named(args)
	if err != nil {
		return 0, err
	}
	rows, err := e.s.st[st].(driver.StmtQueryContext).QueryContext(e.ctx, nv)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	switch err := rows.Next(e.dest[:]); {
	case errors.Is(err, io.EOF):
		return 0, sql.ErrNoRows
	case err != nil:
		return 0, err
	}
	id, ok := e.dest[0].(int64)
	if !ok {
		return 0, fmt.Errorf("internal error: an id of type %T", e.dest[0])
	}
	return id, nil
}

// write runs fn on the writer's connection: in one transaction (BEGIN
// IMMEDIATE … COMMIT, rolled back when fn or the commit fails) when tx is
// set, else as the single statement fn runs, which commits on its own.
// An error of its own (not fn's) says what of node seq failed: "record",
// "finish".
func (db *DB) write(ctx context.Context, tx bool, what string, seq int64, fn func(execer) error) error {
	wrap := func(err error) error { return fmt.Errorf("%s n%d: %w", what, seq, err) }
	conn, err := db.w.Conn(ctx)
	if err != nil {
		return wrap(err)
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*sqlite3.SQLiteConn)
		if !ok {
			return fmt.Errorf("internal error: the writer is a %T, not a SQLite connection", dc)
		}
		if err := db.raw.prepare(c); err != nil {
			return wrap(err)
		}
		e := &db.rawExec
		e.ctx, e.s = ctx, &db.raw
		defer func() { e.ctx = nil }()
		if !tx {
			return fn(e)
		}
		if _, _, err := e.run(db.raw.begin, nil); err != nil {
			return wrap(err)
		}
		err := fn(e)
		if err == nil {
			if _, _, err = e.run(db.raw.commit, nil); err != nil {
				err = wrap(err)
			}
		}
		if err != nil && !c.AutoCommit() {
			e.run(db.raw.rollback, nil)
		}
		return err
	})
}

// prepare prepares the statements on c unless they are already.
func (r *rawStmts) prepare(c *sqlite3.SQLiteConn) error {
	if r.conn == c {
		return nil
	}
	r.close() // a new connection (the pool replaced its one): start again
	p := func(q string) (driver.Stmt, error) {
		s, err := c.Prepare(q)
		if err != nil {
			return nil, fmt.Errorf("prepare %q: %w", q, err)
		}
		return s, nil
	}
	var err error
	for i, q := range stmtSQL {
		if r.st[i], err = p(q); err != nil {
			r.close()
			return err
		}
	}
	if r.begin, err = p(`BEGIN IMMEDIATE`); err == nil {
		if r.commit, err = p(`COMMIT`); err == nil {
			r.rollback, err = p(`ROLLBACK`)
		}
	}
	if err != nil {
		r.close()
		return err
	}
	r.conn = c
	return nil
}

// closeRaw finalizes the statements prepared on the writer's connection,
// before the pool closes it.
func (db *DB) closeRaw() {
	if db.w == nil || db.raw.conn == nil {
		return
	}
	conn, err := db.w.Conn(context.Background())
	if err != nil {
		return
	}
	defer conn.Close()
	conn.Raw(func(any) error {
		db.raw.close()
		return nil
	})
}
