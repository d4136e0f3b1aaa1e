package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/inspect-dev/inspect/internal/regfile"
	"github.com/inspect-dev/inspect/record"
)

// Copied is what CopyRuns did with one run.
type Copied struct {
	ID string
	// Skipped says why the run was not copied ("" = copied): it is already
	// in the target (the same id, or the same imported source), or it is
	// still being recorded.
	Skipped string
	Nodes   int
}

// CopyRuns copies runs ids of src into dst (`inspect export RUN... -o
// FILE.db`, and `inspect import FILE.db` with every run): each run with
// its id, source, project snapshot, nodes, exact request and response
// bodies, asks and tags, written through dst's own recording path (so dst
// shares what it can with its other runs). A run dst already has (the
// same id, or an imported run of the same source) is skipped: copying a
// run twice gives one. A run src is still recording is skipped too, and
// so is a run whose id is not valid (ValidRunID).
func CopyRuns(ctx context.Context, dst, src *DB, ids []string) ([]Copied, error) {
	var out []Copied
	for _, id := range ids {
		c, err := copyRun(ctx, dst, src, id)
		if err != nil {
			return out, fmt.Errorf("copy run %s: %w", id, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// ValidRunID reports whether id can name a run: 1 to 64 ASCII letters,
// digits, '.', '_' or '-', starting with a letter or digit, and not
// "latest" (the newest run's name). The runs inspect records have 12 hex
// digits (NewRunID); a run merged from another file (`inspect import
// FILE.db`) must have a valid id too, for a crafted one could hold
// terminal escapes, a shell command in a pasted next: line, a ':' read as
// FILE.db:RUN, or a name shadowing latest.
func ValidRunID(id string) bool {
	if id == "" || len(id) > 64 || id == "latest" {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

func copyRun(ctx context.Context, dst, src *DB, id string) (Copied, error) {
	c := Copied{ID: id}
	if !ValidRunID(id) {
		c.Skipped = fmt.Sprintf("not copied: %q is not a valid run id (1 to 64 letters, digits, '.', '_' or '-', not latest); the file was not written by inspect", id)
		return c, nil
	}
	r, err := src.LoadRun(ctx, id)
	if err != nil {
		return c, err
	}
	if r.Status == record.StatusRunning {
		c.Skipped = "still running"
		return c, nil
	}
	if have, err := dst.hasRun(ctx, id); err != nil {
		return c, err
	} else if have {
		c.Skipped = "already there"
		return c, nil
	}
	if !r.Source.IsInspect() && r.Source.ID != "" {
		if other, err := dst.RunBySource(ctx, r.Source.Format, r.Source.ID); err != nil {
			return c, err
		} else if other != "" {
			c.Skipped = "already there as run " + other + " (the same " + r.Source.Format + " source)"
			return c, nil
		}
	}
	if r.Ended.IsZero() { // interrupted: it ends where its last node did
		var last int64
		_ = src.r.QueryRowContext(ctx, `SELECT coalesce(max(ended_ns), 0) FROM nodes WHERE run_id = ?`, id).Scan(&last)
		if last > 0 {
			r.Ended = time.Unix(0, last)
		}
	}
	// The options column goes across as it is: this version writes only
	// the keys it knows (decodeOptions), and a key a newer one wrote
	// must not be lost on the way.
	var opts string
	if err := src.r.QueryRowContext(ctx, `SELECT options FROM runs WHERE id = ?`, id).Scan(&opts); err != nil {
		return c, fmt.Errorf("read the options of run %s: %w", id, err)
	}
	err = dst.ImportRun(ctx, r, func(add func(*record.Node) error) error {
		return src.ScanNodes(ctx, r, func(n *record.Node) error {
			if n.Kind == record.KindLLM && n.LLM != nil {
				body, err := src.Request(ctx, id, n.Seq)
				switch {
				case errors.Is(err, ErrNoRequest):
				case err != nil:
					return err
				default:
					n.LLM.Request = body
				}
				if n.LLM.Response, err = src.Response(ctx, id, n.Seq); err != nil {
					return err
				}
			}
			c.Nodes++
			return add(n)
		})
	})
	if err != nil {
		return c, err
	}
	if err := dst.keepOptions(ctx, r.ID, opts); err != nil {
		return c, err
	}
	asks, err := src.Asks(ctx, id, 0)
	if err != nil {
		return c, err
	}
	for i := range asks {
		if err := dst.AddAsk(ctx, &asks[i]); err != nil {
			return c, err
		}
	}
	tags, err := src.Tags(ctx, id)
	if err != nil {
		return c, err
	}
	if len(tags) > 0 {
		return c, dst.SetTags(ctx, id, tags, nil)
	}
	return c, nil
}

// keepOptions writes opts, an options column read from another file, as
// run id's, when it differs from what recording the run wrote.
func (db *DB) keepOptions(ctx context.Context, id, opts string) (err error) {
	defer db.full(&err)
	if _, err := db.w.ExecContext(ctx, `UPDATE runs SET options = ? WHERE id = ? AND options IS NOT ?`, opts, id, opts); err != nil {
		return fmt.Errorf("write the options of run %s: %w", id, err)
	}
	return nil
}

func (db *DB) hasRun(ctx context.Context, id string) (bool, error) {
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE id = ?`, id).Scan(&n); err != nil {
		return false, fmt.Errorf("look for run %s: %w", id, err)
	}
	return n > 0, nil
}

// IsDatabase reports whether the file at path is a SQLite database (its
// header says so), whatever program wrote it: `inspect import` merges one
// instead of reading it as a session. Only a regular file is one: a FIFO
// is not opened for a writer that never comes.
func IsDatabase(path string) bool {
	f, err := regfile.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 16)
	if _, err := io.ReadFull(f, head); err != nil {
		return false
	}
	return string(head) == "SQLite format 3\x00"
}
