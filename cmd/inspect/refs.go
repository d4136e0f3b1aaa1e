package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// RunRef is a parsed run reference: [FILE.db:]RUN.
type RunRef struct {
	DB  string // a database file named in the reference, or "" for --db
	Run string // latest, an id or a unique prefix
}

// ParseRunRef splits "[FILE.db:]RUN". A reference that is only a database
// file ("base.db") means its latest run.
func ParseRunRef(s string) RunRef {
	if i := strings.LastIndex(s, ".db:"); i >= 0 {
		return RunRef{DB: s[:i+3], Run: s[i+4:]}
	}
	if strings.HasSuffix(s, ".db") {
		return RunRef{DB: s, Run: "latest"}
	}
	return RunRef{Run: s}
}

// runArg is the run reference of a command's optional [RUN] argument:
// "latest" without one.
func runArg(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	return "latest"
}

// refPath is the database file a run reference names, else --db's.
func refPath(f *Factory, ref string) string {
	if r := ParseRunRef(ref); r.DB != "" {
		return r.DB
	}
	return f.DBPath
}

// openRun resolves a run reference and returns its database, opened
// read-only, and run id.
func openRun(ctx context.Context, f *Factory, ref string) (*store.DB, string, error) {
	r := ParseRunRef(ref)
	path := refPath(f, ref)
	if err := dbExists(path); err != nil {
		return nil, "", err
	}
	db, err := f.ReadStore(ctx, path)
	if err != nil {
		return nil, "", err
	}
	id, err := db.ResolveRun(ctx, r.Run)
	if err != nil {
		return nil, "", &inDBError{Path: path, Err: err}
	}
	return db, id, nil
}

// inDBError is an error about a run reference in the database at Path, so
// the hint that follows it (`inspect runs --db …`) lists the same file.
type inDBError struct {
	Path string
	Err  error
}

func (e *inDBError) Error() string { return e.Err.Error() }
func (e *inDBError) Unwrap() error { return e.Err }

// missingDBError is a run reference into a database file that does not
// exist. It reads as "no runs" (exit 2) and names the file, and the file is
// not created: a mistyped --db or base.db must not leave an empty database
// behind.
type missingDBError struct{ Path string }

func (e *missingDBError) Error() string {
	return fmt.Sprintf("no runs recorded yet: there is no runs database at %s; record a run first (`inspect demo`, or `inspect run PROJECT --task ...`), or point --db, INSPECT_DB or FILE.db:RUN at an existing file", e.Path)
}

func (e *missingDBError) Unwrap() error { return store.ErrNoRuns }

// dbExists returns a *missingDBError when nothing is at path.
func dbExists(path string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return &missingDBError{Path: path}
	}
	return nil
}

// loadGraph resolves a run reference and loads its graph.
func loadGraph(ctx context.Context, f *Factory, ref string) (*store.DB, *graph.Run, error) {
	db, id, err := openRun(ctx, f, ref)
	if err != nil {
		return nil, nil, err
	}
	g, err := graph.Load(ctx, db, id)
	if err != nil {
		return nil, nil, err
	}
	g.ReadAt = time.Now() // a running run's elapsed time is live
	return db, g, nil
}

// loadNode resolves a run reference and reads node seq of it — one node,
// plus, for a fork, the join that closes it — not the whole run (DESIGN
// §12: one-node commands ≤ 50 ms on a 1M-node run). The node has no
// conversation (Conv is nil).
func loadNode(ctx context.Context, f *Factory, ref string, seq int64) (*store.DB, *record.Run, *graph.Node, error) {
	db, id, err := openRun(ctx, f, ref)
	if err != nil {
		return nil, nil, nil, err
	}
	run, n, err := readNode(ctx, db, id, seq)
	return db, run, n, err
}

// readNode reads run id and its node seq (see loadNode).
func readNode(ctx context.Context, db *store.DB, id string, seq int64) (*record.Run, *graph.Node, error) {
	run, err := db.LoadRun(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	rn, err := db.Node(ctx, run, seq)
	if errors.Is(err, store.ErrNoNode) {
		return nil, nil, unknownNodeIn(ctx, db, id, seq)
	}
	if err != nil {
		return nil, nil, err
	}
	n := &graph.Node{Node: rn}
	if rn.Kind == record.KindFork {
		n.ForkOf = &graph.Fork{Node: n}
		join, err := db.JoinOf(ctx, run, seq)
		if err != nil {
			return nil, nil, err
		}
		if join != nil {
			n.ForkOf.Join = &graph.Node{Node: join, ForkOf: n.ForkOf}
		}
	}
	return run, n, nil
}

// unknownNodeIn is unknownNode read from the store: the nearest nodes by
// index, not by loading the run.
func unknownNodeIn(ctx context.Context, db *store.DB, run string, seq int64) error {
	near, last, err := db.NearestNodes(ctx, run, seq, 5)
	if err != nil {
		return err
	}
	if len(near) == 0 {
		return Usagef("run %s has no nodes", run)
	}
	var names []string
	for _, b := range near {
		names = append(names, fmt.Sprintf("n%d (%s)", b.Seq, b.Kind))
	}
	return Usagef("run %s has no node n%d (it has n1..n%d); nearest: %s", run, seq, last, strings.Join(names, ", "))
}

// ParseNodeRef parses "n12" (or "12") into a sequence number.
func ParseNodeRef(s string) (int64, error) {
	t := strings.TrimPrefix(strings.TrimPrefix(s, "n"), "N")
	seq, err := strconv.ParseInt(t, 10, 64)
	if err != nil || seq <= 0 {
		return 0, Usagef("%q is not a node reference: write n<number> as `inspect graph` shows it (e.g. n7)", s)
	}
	return seq, nil
}

// exactArgs and rangeArgs are cobra argument checks whose errors are usage errors.
func rangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			if lo == hi {
				return &flagError{err: fmt.Errorf("%s takes %d argument(s), got %d", cmd.CommandPath(), lo, len(args))}
			}
			return &flagError{err: fmt.Errorf("%s takes %d to %d arguments, got %d", cmd.CommandPath(), lo, hi, len(args))}
		}
		return nil
	}
}

// shellQuote returns s as one shell word, quoted only when it needs to be,
// so a printed command can be pasted as it is.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./:@%+=,-", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
