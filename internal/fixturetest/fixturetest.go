// Package fixturetest records a folder of fixtures/ into a store the way
// its kind asks: a scripted project (script.yaml) runs in virtual time
// through runtime/runtimetest; another framework's run (trace.otlp.jsonl,
// made by importers/otlp/testdata/gen) is imported through the real OTLP
// importer, as `inspect import` does; a real session another tool wrote
// (session.txt naming its file in the repository, such as a Claude Code
// session of testdata/agents) is imported through the importer its
// format detects. Only tests import it.
package fixturetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/all"
	"github.com/inspect-dev/inspect/importers/otlp"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
	"github.com/inspect-dev/inspect/store"
)

// Trace is the name of an imported fixture's trace in its folder.
const Trace = "trace.otlp.jsonl"

// Session is the name of the file of a fixture folder that names, by its
// slash path from the repository's root, the session file to import (the
// session stays where the harness wrote it, with its sub-agents' files).
const Session = "session.txt"

// Imported reports whether fixture folder dir holds another framework's
// trace, or names a session, rather than a script.
func Imported(dir string) bool {
	for _, f := range []string{Trace, Session} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// session reads fixture folder dir's session.txt: the session's path on
// this machine and as the run names it (from the repository's root).
func session(dir string) (path, name string, ok bool, err error) {
	raw, err := os.ReadFile(filepath.Join(dir, Session))
	if os.IsNotExist(err) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	name = strings.TrimSpace(string(raw))
	if name == "" || filepath.IsAbs(name) || strings.Contains(name, "..") {
		return "", "", false, fmt.Errorf("%s: want a slash path from the repository's root, got %q", filepath.Join(dir, Session), name)
	}
	// dir is <root>/fixtures/<name>
	return filepath.Join(dir, "..", "..", filepath.FromSlash(name)), name, true, nil
}

// Record records fixture folder dir into db as run id and loads its graph.
// A scripted project is copied under tmp and run from start (see
// runtimetest.RecordFixture); an imported one keeps the times its trace
// recorded, so only its id is fixed.
func Record(ctx context.Context, db *store.DB, dir, tmp, id string, start time.Time) (*graph.Run, error) {
	if !Imported(dir) {
		return runtimetest.RecordFixture(ctx, db, dir, tmp, id, start)
	}
	path, name, isSession, err := session(dir)
	if err != nil {
		return nil, err
	}
	var format importers.Format = otlp.Format{}
	if isSession {
		if format, err = importers.Detect(all.Formats(), path); err != nil {
			return nil, fmt.Errorf("import fixture %s: %w", dir, err)
		}
	} else {
		path, name = filepath.Join(dir, Trace), filepath.ToSlash(filepath.Join("fixtures", filepath.Base(dir), Trace))
	}
	ss, err := format.Read(ctx, path, importers.Options{Strict: true})
	if err != nil {
		return nil, fmt.Errorf("import fixture %s: %w", dir, err)
	}
	if len(ss) != 1 {
		return nil, fmt.Errorf("import fixture %s: %d sessions in %s, want one", dir, len(ss), name)
	}
	s := ss[0]
	s.Source.Path = name // not this machine's path
	if s.Project.Name == "" {
		s.Project.Name = filepath.Base(dir)
	}
	got, err := importers.Write(ctx, withID{db, id}, s)
	if err != nil {
		return nil, fmt.Errorf("import fixture %s: %w", dir, err)
	}
	g, err := graph.Load(ctx, db, got)
	if err != nil {
		return nil, fmt.Errorf("load fixture %s: %w", dir, err)
	}
	return g, nil
}

// withID imports a run under a fixed id (goldens name it).
type withID struct {
	db *store.DB
	id string
}

func (w withID) ImportRun(ctx context.Context, r *record.Run, nodes func(add func(*record.Node) error) error) error {
	r.ID = w.id
	return w.db.ImportRun(ctx, r, nodes)
}
