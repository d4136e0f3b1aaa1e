package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/inspect-dev/inspect/record"
)

// importBatch is how many nodes an import commits at once.
const importBatch = 2000

// runBySourceSQL finds an imported run by its source through index
// runs_source (whose rows are those with a source id: the query says so,
// or SQLite cannot use it for a bound id and reads every run).
const runBySourceSQL = `SELECT id FROM runs WHERE source_format = ? AND source_id = ? AND source_id <> '' ORDER BY started_ns LIMIT 1`

// RunBySource returns the id of the run imported from source id of format,
// or "" when there is none (or id is empty: such a source cannot be
// imported twice).
func (db *DB) RunBySource(ctx context.Context, format, id string) (string, error) {
	if id == "" {
		return "", nil
	}
	var run string
	err := db.r.QueryRowContext(ctx, runBySourceSQL, format, id).Scan(&run)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("find the run of %s %s: %w", format, id, err)
	}
	return run, nil
}

// ImportRun records an imported run (it satisfies importers.Writer): a new
// run, or — when a run from the same source (r.Source.Format and a
// non-empty r.Source.ID) is stored — that run again under its id, its
// project snapshot and nodes replaced, so importing a session twice
// updates its run instead of duplicating it. Questions asked of its nodes
// (asks) are kept. The run reads running while nodes adds its nodes, then
// ends with r.Status, r.Error and r.Ended as they are when nodes returns
// (running with a zero Ended: left running, for a source still growing);
// what else of r nodes changed by then (Started, Tasks, Project, Options,
// Models, Source.Version: an importer that streams a session knows them
// only once it is read) is written too. If nodes fails, the run ends
// interrupted with what was added so far, and the error is returned: a
// run whose import stopped, or whose importer died, never reads finished.
func (db *DB) ImportRun(ctx context.Context, r *record.Run, nodes func(add func(*record.Node) error) error) (err error) {
	if err := db.writable(); err != nil {
		return err
	}
	id, err := db.RunBySource(ctx, r.Source.Format, r.Source.ID)
	if err != nil {
		return err
	}
	status, errMsg := r.Status, r.Error // CreateRun sets running
	var rec *Recorder
	if id == "" {
		rec, err = db.CreateRun(ctx, r)
	} else {
		r.ID = id
		rec, err = db.reopenRun(ctx, r)
	}
	if err != nil {
		return err
	}
	r.Status, r.Error = status, errMsg
	before, err := headerOf(r)
	if err != nil {
		return err
	}
	// Nodes are committed in batches: an import costs its rows, not a
	// commit each, and a reader sees the run grow batch by batch.
	added := 0
	failed := false // a node could not be written (the batch may hold part of it)
	commit := func() error {
		if rec.batch == nil {
			return nil
		}
		err := rec.batch.Commit()
		rec.batch = nil
		return err
	}
	err = nodes(func(n *record.Node) error {
		if rec.batch == nil {
			tx, err := db.w.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			rec.batch = tx
		}
		if err := rec.AddNode(ctx, n); err != nil {
			failed = true
			return err
		}
		if added++; added%importBatch == 0 {
			return commit()
		}
		return nil
	})
	if err == nil {
		err = commit()
	}
	if err != nil {
		// The nodes added so far are whole and kept (an importer that
		// stopped midway leaves what it read), unless writing one failed.
		if rec.batch != nil {
			if failed {
				rec.batch.Rollback()
				rec.batch = nil
			} else {
				commit()
			}
		}
		if ferr := rec.finishImport(context.WithoutCancel(ctx), r, before, record.StatusInterrupted, "the import stopped: "+err.Error()); ferr != nil {
			return errors.Join(err, ferr)
		}
		return err
	}
	status = r.Status
	if status == record.StatusRunning && r.Ended.IsZero() {
		// A source still being written (a trace still receiving spans):
		// the run stays running, with no writer to outlive, until an
		// import finds it ended.
		if err := rec.finishImport(ctx, r, before, status, r.Error); err != nil {
			return err
		}
		return db.leaveRunning(ctx, r.ID)
	}
	if status == "" || status == record.StatusRunning {
		status = record.StatusOK
	}
	return rec.finishImport(ctx, r, before, status, r.Error)
}

// leaveRunning marks an imported run running with no end and no writer
// (what a later import of its source completes).
func (db *DB) leaveRunning(ctx context.Context, id string) (err error) {
	defer db.full(&err)
	if _, err := db.w.ExecContext(ctx, `UPDATE runs SET status = 'running', ended_ns = NULL, writer_host = '', writer_pid = 0, writer_tag = '' WHERE id = ?`, id); err != nil {
		return fmt.Errorf("finish run: %w", err)
	}
	return nil
}

// runHeader is what an import may learn of its run while it reads: the
// runs row's columns and the project snapshot's files.
type runHeader struct {
	started                      int64
	tasks, opts, models, project string
	version                      string
	files                        []string // path and SHA-256 of each project file
}

func headerOf(r *record.Run) (runHeader, error) {
	tasks, opts, models, err := runColumns(r)
	if err != nil {
		return runHeader{}, err
	}
	h := runHeader{started: r.Started.UnixNano(), tasks: string(tasks), opts: string(opts), models: string(models),
		project: r.Project.Name, version: r.Source.Version}
	for _, f := range r.Project.Files {
		sum := sha256.Sum256([]byte(f.Content))
		h.files = append(h.files, f.Path+"\x00"+hex.EncodeToString(sum[:]))
	}
	return h, nil
}

// finishImport ends an imported run as Finish does, first writing what of
// its header changed since before (the row as it was created).
func (rec *Recorder) finishImport(ctx context.Context, r *record.Run, before runHeader, status record.Status, errMsg string) (err error) {
	defer rec.db.full(&err)
	if r.Started.IsZero() {
		r.Started = time.Unix(0, before.started)
	}
	after, err := headerOf(r)
	if err != nil {
		return err
	}
	if !slices.Equal(after.files, before.files) {
		tx, err := rec.db.w.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("finish run: %w", err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `DELETE FROM project_files WHERE run_id = ?`, rec.run); err != nil {
			return fmt.Errorf("finish run: %w", err)
		}
		_, w, err := rec.db.storeProject(ctx, tx, r)
		if err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("finish run: %w", err)
		}
		rec.remember(w.p)
	}
	before.files, after.files = nil, nil
	if !reflect.DeepEqual(before, after) {
		if _, err := rec.db.w.ExecContext(ctx, `UPDATE runs SET started_ns = ?, tasks = ?, project = ?, options = ?, models = ?, source_version = ? WHERE id = ?`,
			after.started, after.tasks, after.project, after.opts, after.models, after.version, rec.run); err != nil {
			return fmt.Errorf("finish run: %w", err)
		}
	}
	return rec.Finish(ctx, status, errMsg, r.Ended)
}

// reopenRun empties run r.ID (nodes, their requests, its project snapshot),
// writes r's fields over its row with status running, and returns its
// Recorder.
func (db *DB) reopenRun(ctx context.Context, r *record.Run) (_ *Recorder, err error) {
	defer db.full(&err)
	if err := db.prepare(ctx); err != nil {
		return nil, err
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
		return nil, fmt.Errorf("update run %s: %w", r.ID, err)
	}
	defer tx.Rollback()
	for _, q := range []string{`DELETE FROM nodes WHERE run_id = ?`, `DELETE FROM project_files WHERE run_id = ?`} {
		if _, err := tx.ExecContext(ctx, q, r.ID); err != nil {
			return nil, fmt.Errorf("update run %s: %w", r.ID, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE runs SET started_ns = ?, ended_ns = NULL, status = ?, error = '', tasks = ?, project = ?, options = ?,
		base_url = ?, models = ?, writer_host = ?, writer_pid = ?, writer_tag = ?, source_version = ?, source_path = ?,
		totals_nodes = NULL, totals_llm = NULL, totals_in = NULL, totals_out = NULL, totals_agents = NULL, totals_last_end = NULL
		WHERE id = ?`,
		r.Started.UnixNano(), string(r.Status), string(tasks), r.Project.Name, string(opts), redactURL(r.BaseURL), string(modelsJSON),
		host, pid, tag, r.Source.Version, redactURL(r.Source.Path), r.ID); err != nil {
		return nil, fmt.Errorf("update run %s: %w", r.ID, err)
	}
	rec, w, err := db.storeProject(ctx, tx, r)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("update run %s: %w", r.ID, err)
	}
	rec.remember(w.p)
	return rec, nil
}
