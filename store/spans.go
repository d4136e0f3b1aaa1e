package store

import (
	"context"
	"fmt"
)

// KeepSpans adds a batch of the spans an OTLP receiver took for the run
// of source id key (otlp.RunKey: a trace id, or a Claude Code session's
// key; data: OTLP/protobuf, as otel.EncodeSpans writes it, texts already
// redacted) to what the file keeps of that run.
func (db *DB) KeepSpans(ctx context.Context, key string, data []byte) (err error) {
	defer db.full(&err)
	if err := db.writable(); err != nil {
		return err
	}
	if _, err := db.w.ExecContext(ctx, `INSERT INTO trace_spans (source_id, data) VALUES (?, ?)`, key, data); err != nil {
		return fmt.Errorf("keep the spans of %s: %w", key, err)
	}
	return nil
}

// TraceSpans calls fn with each batch KeepSpans kept for key, in the
// order kept, until fn returns an error (which it returns).
func (db *DB) TraceSpans(ctx context.Context, key string, fn func(data []byte) error) error {
	rows, err := db.r.QueryContext(ctx, `SELECT data FROM trace_spans WHERE source_id = ? ORDER BY id`, key)
	if err != nil {
		return fmt.Errorf("read the spans of %s: %w", key, err)
	}
	defer rows.Close()
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return fmt.Errorf("read the spans of %s: %w", key, err)
		}
		if err := fn(data); err != nil {
			return err
		}
	}
	return rows.Err()
}

// DropSpans forgets the spans KeepSpans kept for key.
func (db *DB) DropSpans(ctx context.Context, key string) (err error) {
	defer db.full(&err)
	if err := db.writable(); err != nil {
		return err
	}
	if _, err := db.w.ExecContext(ctx, `DELETE FROM trace_spans WHERE source_id = ?`, key); err != nil {
		return fmt.Errorf("drop the spans kept of %s: %w", key, err)
	}
	return nil
}
