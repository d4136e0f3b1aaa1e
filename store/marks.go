package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ImportMark returns the high-water mark an import from a trace backend
// stored for source (inspect import --from: the backend's address and
// the query), or "" when there is none. The mark is the importer's own
// text; the store only keeps it.
func (db *DB) ImportMark(ctx context.Context, source string) (string, error) {
	var mark string
	err := db.r.QueryRowContext(ctx, `SELECT mark FROM import_marks WHERE source = ?`, source).Scan(&mark)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the import mark of %s: %w", source, err)
	}
	return mark, nil
}

// SetImportMark stores mark as source's high-water mark, replacing the one
// before.
func (db *DB) SetImportMark(ctx context.Context, source, mark string) (err error) {
	if err := db.writable(); err != nil {
		return err
	}
	defer db.full(&err)
	if _, err := db.w.ExecContext(ctx, `INSERT INTO import_marks (source, mark, updated_ns) VALUES (?, ?, ?)
		ON CONFLICT (source) DO UPDATE SET mark = excluded.mark, updated_ns = excluded.updated_ns`,
		source, mark, db.Now().UnixNano()); err != nil {
		return fmt.Errorf("store the import mark of %s: %w", source, err)
	}
	return nil
}
