package store

import (
	"context"
	"fmt"
	"strings"
)

// CountRows counts table's rows (for the tests of package store_test).
func (db *DB) CountRows(ctx context.Context, table string) (int64, error) {
	var n int64
	err := db.r.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*) FROM %q`, table)).Scan(&n)
	return n, err
}

// ForeignKeyCheck is PRAGMA foreign_key_check's rows, one a line ("" when
// every reference holds).
func (db *DB) ForeignKeyCheck(ctx context.Context) (string, error) {
	rows, err := db.r.QueryContext(ctx, `PRAGMA foreign_key_check`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var table, parent string
		var rowid, fk any
		if err := rows.Scan(&table, &rowid, &parent, &fk); err != nil {
			return "", err
		}
		out = append(out, fmt.Sprintf("%s %v → %s", table, rowid, parent))
	}
	return strings.Join(out, "\n"), rows.Err()
}

// SetHalvesFrom sets the run size from which RequestParts reads a run's
// requests in two halves, until the returned function restores it.
func SetHalvesFrom(n int) func() {
	old := halvesFrom
	halvesFrom = n
	return func() { halvesFrom = old }
}
