package store

import (
	"context"
	"fmt"
)

// KeepSpans adds a batch of the spans an OTLP receiver took for trace
// traceID (data: OTLP/protobuf, as otel.EncodeSpans writes it, texts
// already redacted) to what the file keeps of that trace.
func (db *DB) KeepSpans(ctx context.Context, traceID string, data []byte) (err error) {
	defer db.full(&err)
	if err := db.writable(); err != nil {
		return err
	}
	if _, err := db.w.ExecContext(ctx, `INSERT INTO trace_spans (trace_id, data) VALUES (?, ?)`, traceID, data); err != nil {
		return fmt.Errorf("keep the spans of trace %s: %w", traceID, err)
	}
	return nil
}

// TraceSpans calls fn with each batch KeepSpans kept for traceID, in the
// order kept, until fn returns an error (which it returns).
func (db *DB) TraceSpans(ctx context.Context, traceID string, fn func(data []byte) error) error {
	rows, err := db.r.QueryContext(ctx, `SELECT data FROM trace_spans WHERE trace_id = ? ORDER BY id`, traceID)
	if err != nil {
		return fmt.Errorf("read the spans of trace %s: %w", traceID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return fmt.Errorf("read the spans of trace %s: %w", traceID, err)
		}
		if err := fn(data); err != nil {
			return err
		}
	}
	return rows.Err()
}

// DropSpans forgets the spans KeepSpans kept for traceID.
func (db *DB) DropSpans(ctx context.Context, traceID string) (err error) {
	defer db.full(&err)
	if err := db.writable(); err != nil {
		return err
	}
	if _, err := db.w.ExecContext(ctx, `DELETE FROM trace_spans WHERE trace_id = ?`, traceID); err != nil {
		return fmt.Errorf("drop the spans kept of trace %s: %w", traceID, err)
	}
	return nil
}
