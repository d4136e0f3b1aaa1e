package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// The whole-run reads (a run's nodes, its requests and message links) run
// on a read connection below database/sql, as the recorder's writes do
// (writer.go): database/sql converts each column of each row through
// reflection and locks per row, which cost as much as SQLite's own work on
// 100,000 nodes. A rowReader reads the driver's values as Scan would.

// rawQuery runs query q with args on a read connection and calls row with
// each row's values (row reads them with a rowReader; they are the
// driver's fresh copies, so row may keep them).
func (db *DB) rawQuery(ctx context.Context, q string, args []any, row func(*rowReader) error) error {
	conn, err := db.r.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*sqlite3.SQLiteConn)
		if !ok {
			return fmt.Errorf("internal error: a read connection is a %T, not a SQLite connection", dc)
		}
		var e rawExec
		nv, err := e.named(args)
		if err != nil {
			return err
		}
		rows, err := c.QueryContext(ctx, q, nv)
		if err != nil {
			return err
		}
		defer rows.Close()
		r := &rowReader{vals: make([]driver.Value, len(rows.Columns()))}
		for {
			switch err := rows.Next(r.vals); {
			case errors.Is(err, io.EOF):
				return nil
			case err != nil:
				return err
			}
			r.i = 0
			if err := row(r); err != nil {
				return err
			}
			if r.err != nil {
				return r.err
			}
		}
	})
}

// rowReader reads one row's values in column order, converting them as
// database/sql's Scan would for the store's columns; the first value it
// cannot convert sets err (and the rest read as zero values).
type rowReader struct {
	vals []driver.Value
	i    int
	err  error
}

func (r *rowReader) next() driver.Value {
	if r.i >= len(r.vals) {
		r.fail(fmt.Errorf("internal error: column %d of a row of %d", r.i+1, len(r.vals)))
		return nil
	}
	v := r.vals[r.i]
	r.i++
	return v
}

func (r *rowReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *rowReader) nullInt64() sql.NullInt64 {
	switch v := r.next().(type) {
	case nil:
		return sql.NullInt64{}
	case int64:
		return sql.NullInt64{Int64: v, Valid: true}
	case float64:
		if n := int64(v); float64(n) == v {
			return sql.NullInt64{Int64: n, Valid: true}
		}
		r.fail(fmt.Errorf("column %d: %v is not an integer", r.i, v))
	case string:
		return r.parse(v)
	case []byte:
		return r.parse(string(v))
	default:
		r.fail(fmt.Errorf("column %d: a %T is not an integer", r.i, v))
	}
	return sql.NullInt64{}
}

func (r *rowReader) parse(s string) sql.NullInt64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		r.fail(fmt.Errorf("column %d: %q is not an integer", r.i, s))
	}
	return sql.NullInt64{Int64: n, Valid: err == nil}
}

func (r *rowReader) int64() int64 {
	n := r.nullInt64()
	if !n.Valid && r.err == nil {
		r.fail(fmt.Errorf("column %d: converting NULL to int64 is unsupported", r.i))
	}
	return n.Int64
}

func (r *rowReader) int() int { return int(r.int64()) }

func (r *rowReader) string() string {
	switch v := r.next().(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case nil:
		r.fail(fmt.Errorf("column %d: converting NULL to string is unsupported", r.i))
	default:
		r.fail(fmt.Errorf("column %d: a %T is not text", r.i, v))
	}
	return ""
}

// bytes reads a BLOB (nil for NULL).
func (r *rowReader) bytes() []byte {
	switch v := r.next().(type) {
	case []byte:
		return v
	case string:
		return []byte(v)
	case nil:
		return nil
	default:
		r.fail(fmt.Errorf("column %d: a %T is not bytes", r.i, v))
	}
	return nil
}
