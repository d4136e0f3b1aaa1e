package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/analysis/storesrc"
	"github.com/inspect-dev/inspect/store"
)

// RunRef is a parsed run reference: [FILE.db:]RUN.
type RunRef = analysis.Ref

// ParseRunRef splits "[FILE.db:]RUN". A reference that is only a database
// file ("base.db") means its latest run.
func ParseRunRef(s string) RunRef { return analysis.ParseRef(s) }

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

// analyzer opens and analyses runs under policy p: a plain run reference
// in --db's database, FILE.db:RUN in that file, each opened read-only once
// (a missing file is a *missingDBError, and is not created).
func analyzer(f *Factory, p *analysis.Policy) *analysis.Analyzer {
	return analysis.NewFiles(func(ctx context.Context, path string) (analysis.Source, error) {
		if err := dbExists(path); err != nil {
			return nil, err
		}
		db, err := f.ReadStore(ctx, path)
		if err != nil {
			return nil, err
		}
		return storesrc.New(db), nil
	}, f.DBPath, p)
}

// refError words analysis' errors as the commands say them: a reference
// a database does not resolve names that database for the hint after it;
// a node the run lacks is a usage error naming the nearest.
func refError(err error) error {
	var re *analysis.ResolveError
	var nn *analysis.NoNodeError
	switch {
	case errors.As(err, &re):
		return &inDBError{Path: re.Path, Err: re.Err}
	case errors.As(err, &nn):
		return &UsageError{Err: nn}
	}
	return err
}

// pinned is run reference ref with its run resolved to id: the same run
// in the same file, however many runs are recorded meanwhile.
func pinned(ref, id string) string {
	if r := ParseRunRef(ref); r.DB != "" {
		return r.DB + ":" + id
	}
	return id
}

// openRun resolves a run reference and returns its database, opened
// read-only, and run id: for the commands that read a run's rows
// themselves (ask, export, completion).
func openRun(ctx context.Context, f *Factory, ref string) (*store.DB, string, error) {
	src, id, err := analyzer(f, nil).Resolve(ctx, ref)
	if err != nil {
		return nil, "", refError(err)
	}
	return src.(*storesrc.Source).DB, id, nil
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

// It is both the store's and the analysis layer's "no runs": the MCP
// server, which reads no store errors, says so in its own terms.
func (e *missingDBError) Unwrap() []error { return []error{store.ErrNoRuns, analysis.ErrNoRuns} }

// dbExists returns a *missingDBError when nothing is at path.
func dbExists(path string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return &missingDBError{Path: path}
	}
	return nil
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
