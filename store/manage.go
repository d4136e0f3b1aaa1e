package store

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/inspect-dev/inspect/record"
)

// RunFilter selects runs for ListRuns; the zero value selects every run.
type RunFilter struct {
	// Statuses keeps runs with one of these statuses (as read: a run whose
	// writer died reads interrupted); empty keeps all.
	Statuses []record.Status
	// Source keeps runs of this source format ("inspect", "claude-code").
	Source string
	// Agent keeps runs in which this agent owned a node.
	Agent string
	// Since and Until keep runs started at or after Since and before Until.
	Since, Until time.Time
	// Grep keeps runs whose id, project, tasks or tags contain it, case
	// folded.
	Grep string
	// Tags keeps runs carrying every one of these tags; an empty value
	// asks only for the key.
	Tags map[string]string
	// Limit keeps at most this many, newest first; 0 = all.
	Limit int
}

// Filtered reports whether f leaves runs out (other than by Limit).
func (f *RunFilter) Filtered() bool {
	return len(f.Statuses) > 0 || f.Source != "" || f.Agent != "" || !f.Since.IsZero() || !f.Until.IsZero() || f.Grep != "" || len(f.Tags) > 0
}

func (f *RunFilter) keep(s *RunSummary) bool {
	if len(f.Statuses) > 0 && !containsStatus(f.Statuses, s.Status) {
		return false
	}
	if f.Source != "" && s.Source != f.Source {
		return false
	}
	if f.Agent != "" && !containsString(s.Agents, f.Agent) {
		return false
	}
	if !f.Since.IsZero() && s.Started.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && !s.Started.Before(f.Until) {
		return false
	}
	for k, v := range f.Tags {
		have, ok := s.Tags[k]
		if !ok || v != "" && have != v {
			return false
		}
	}
	if f.Grep != "" {
		hay := []string{s.ID, s.Project}
		hay = append(hay, s.Tasks...)
		for k, v := range s.Tags {
			hay = append(hay, k+"="+v)
		}
		needle := strings.ToLower(f.Grep)
		found := false
		for _, h := range hay {
			if strings.Contains(strings.ToLower(h), needle) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func containsStatus(list []record.Status, s record.Status) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ListRuns lists the runs f selects, newest first, each with its tags.
func (db *DB) ListRuns(ctx context.Context, f RunFilter) ([]RunSummary, error) {
	all, err := db.Runs(ctx, 0)
	if err != nil {
		return nil, err
	}
	tags, err := db.allTags(ctx)
	if err != nil {
		return nil, err
	}
	out := []RunSummary{}
	for _, s := range all {
		s.Tags = tags[s.ID]
		if f.keep(&s) {
			out = append(out, s)
			if f.Limit > 0 && len(out) == f.Limit {
				break
			}
		}
	}
	return out, nil
}

func (db *DB) allTags(ctx context.Context) (map[string]map[string]string, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT run_id, key, value FROM tags ORDER BY run_id, key`)
	if err != nil {
		return nil, fmt.Errorf("read tags: %w", err)
	}
	defer rows.Close()
	out := map[string]map[string]string{}
	for rows.Next() {
		var run, k, v string
		if err := rows.Scan(&run, &k, &v); err != nil {
			return nil, err
		}
		if out[run] == nil {
			out[run] = map[string]string{}
		}
		out[run][k] = v
	}
	return out, rows.Err()
}

// Tags returns run's tags.
func (db *DB) Tags(ctx context.Context, run string) (map[string]string, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT key, value FROM tags WHERE run_id = ? ORDER BY key`, run)
	if err != nil {
		return nil, fmt.Errorf("read tags of %s: %w", run, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

// Tag limits.
const (
	MaxTagKey   = 64
	MaxTagValue = 256
)

// CheckTag reports what is wrong with a tag key and value, or nil: a key
// is 1 to MaxTagKey letters, digits and . _ - / :, a value at most
// MaxTagValue characters without control characters.
func CheckTag(key, value string) error {
	if key == "" || len(key) > MaxTagKey {
		return fmt.Errorf("a tag key has 1 to %d characters, got %q", MaxTagKey, key)
	}
	for _, r := range key {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._-/:", r)) {
			return fmt.Errorf("tag key %q: use letters, digits and . _ - / : only", key)
		}
	}
	if len(value) > MaxTagValue {
		return fmt.Errorf("tag %s: a value has at most %d characters", key, MaxTagValue)
	}
	for _, r := range value {
		if unicode.IsControl(r) {
			return fmt.Errorf("tag %s: the value holds a control character", key)
		}
	}
	return nil
}

// SetTags sets run's tags (a key given again takes the new value) and
// removes the keys in remove, in one transaction.
func (db *DB) SetTags(ctx context.Context, run string, set map[string]string, remove []string) (err error) {
	defer db.full(&err)
	if err := db.writable(); err != nil {
		return err
	}
	for k, v := range set {
		if err := CheckTag(k, v); err != nil {
			return err
		}
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("tag %s: %w", run, err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE id = ?`, run).Scan(&n); err != nil || n == 0 {
		if err == nil {
			err = &NotFoundError{Ref: run}
		}
		return err
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, `INSERT INTO tags (run_id, key, value) VALUES (?,?,?)
			ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value`, run, k, set[k]); err != nil {
			return fmt.Errorf("tag %s: %w", run, err)
		}
	}
	for _, k := range remove {
		if _, err := tx.ExecContext(ctx, `DELETE FROM tags WHERE run_id = ? AND key = ?`, run, k); err != nil {
			return fmt.Errorf("untag %s: %w", run, err)
		}
	}
	return tx.Commit()
}

// LiveRunError refuses to delete a run that is still being recorded.
type LiveRunError struct{ ID string }

func (e *LiveRunError) Error() string {
	return fmt.Sprintf("run %s is still running; it can be removed once it has ended", e.ID)
}

// Removed is what DeleteRuns took out of the file.
type Removed struct {
	Runs  int
	Nodes int64
	// Blobs and Links are the stored request parts and project files no
	// run used any longer.
	Blobs, Links int64
}

// DeleteRuns removes the runs ids (their nodes, requests, project
// snapshots, asks and tags) and then every stored blob and message link
// no remaining run uses, in one transaction; the file stays consistent and
// the other runs read as before. A run still being recorded is refused
// (*LiveRunError) and nothing is removed.
func (db *DB) DeleteRuns(ctx context.Context, ids []string) (_ Removed, err error) {
	defer db.full(&err)
	var rm Removed
	if err := db.writable(); err != nil {
		return rm, err
	}
	if len(ids) == 0 {
		return rm, nil
	}
	live, err := db.liveRuns(ctx)
	if err != nil {
		return rm, err
	}
	for _, id := range ids {
		if live[id] {
			return rm, &LiveRunError{ID: id}
		}
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return rm, fmt.Errorf("remove runs: %w", err)
	}
	defer tx.Rollback()
	for _, id := range ids {
		var nodes int64
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM nodes WHERE run_id = ?`, id).Scan(&nodes); err != nil {
			return rm, fmt.Errorf("remove run %s: %w", id, err)
		}
		// the spans a receiver kept of it go with it
		if _, err := tx.ExecContext(ctx, `DELETE FROM trace_spans WHERE source_id IN
				(SELECT source_id FROM runs WHERE id = ? AND source_format = 'otlp' AND source_id <> '')`, id); err != nil {
			return rm, fmt.Errorf("remove run %s: %w", id, err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE id = ?`, id)
		if err != nil {
			return rm, fmt.Errorf("remove run %s: %w", id, err)
		}
		if k, _ := res.RowsAffected(); k == 1 {
			rm.Runs++
			rm.Nodes += nodes
		}
	}
	// A message link is in use while a request ends at it or a link in
	// use follows it; UNION stops a damaged chain that loops.
	res, err := tx.ExecContext(ctx, `WITH RECURSIVE live(id) AS (
			SELECT last FROM requests WHERE last > 0
			UNION
			SELECT c.prev FROM chain c JOIN live l ON c.id = l.id WHERE c.prev > 0)
		DELETE FROM chain WHERE id NOT IN (SELECT id FROM live)`)
	if err != nil {
		return rm, fmt.Errorf("remove unused messages: %w", err)
	}
	rm.Links, _ = res.RowsAffected()
	res, err = tx.ExecContext(ctx, `DELETE FROM blobs WHERE id NOT IN (
			SELECT head FROM requests UNION SELECT tail FROM requests
			UNION SELECT system FROM requests WHERE system > 0
			UNION SELECT blob FROM project_files)`)
	if err != nil {
		return rm, fmt.Errorf("remove unused blobs: %w", err)
	}
	rm.Blobs, _ = res.RowsAffected()
	return rm, tx.Commit()
}

// liveRuns returns the runs still being recorded: marked running by a
// writer that is still there.
func (db *DB) liveRuns(ctx context.Context) (map[string]bool, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id, writer_host, writer_pid, writer_tag FROM runs WHERE status = 'running'`)
	if err != nil {
		return nil, fmt.Errorf("find running runs: %w", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id, host, tag string
		var pid int
		if err := rows.Scan(&id, &host, &pid, &tag); err != nil {
			return nil, err
		}
		if !writerGone(host, pid, tag) {
			out[id] = true
		}
	}
	return out, rows.Err()
}

// Prune says which runs PruneRuns removes: those beyond the Keep newest,
// or those started more than OlderThan before Now (one of the two).
type Prune struct {
	Keep      int
	OlderThan time.Duration
	Now       time.Time
}

// PrunePlan lists the runs p selects for removal (Remove, newest first)
// and the runs it leaves although they were selected because they are
// still running (Running). It changes nothing.
func (db *DB) PrunePlan(ctx context.Context, p Prune) (remove, running []RunSummary, err error) {
	runs, err := db.Runs(ctx, 0)
	if err != nil {
		return nil, nil, err
	}
	for i, r := range runs {
		var selected bool
		switch {
		case p.Keep > 0:
			selected = i >= p.Keep
		case p.OlderThan > 0:
			selected = r.Started.Before(p.Now.Add(-p.OlderThan))
		}
		if !selected {
			continue
		}
		if r.Status == record.StatusRunning {
			running = append(running, r)
		} else {
			remove = append(remove, r)
		}
	}
	return remove, running, nil
}

// Vacuum rebuilds the file without its free pages, so it shrinks after
// runs were removed. It waits for, and fails beside, an open writer.
func (db *DB) Vacuum(ctx context.Context) error {
	if err := db.writable(); err != nil {
		return err
	}
	if _, err := db.w.ExecContext(ctx, `VACUUM`); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	return nil
}
