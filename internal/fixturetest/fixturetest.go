// Package fixturetest records a folder of fixtures/ into a store the way
// its kind asks: a scripted project (script.yaml) runs in virtual time
// through runtime/runtimetest; another framework's run (trace.otlp.jsonl,
// made by importers/otlp/testdata/gen) is imported through the real OTLP
// importer, as `inspect import` does. Only tests import it.
package fixturetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/otlp"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
	"github.com/inspect-dev/inspect/store"
)

// Trace is the name of an imported fixture's trace in its folder.
const Trace = "trace.otlp.jsonl"

// Imported reports whether fixture folder dir holds another framework's
// trace rather than a script.
func Imported(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, Trace))
	return err == nil
}

// Record records fixture folder dir into db as run id and loads its graph.
// A scripted project is copied under tmp and run from start (see
// runtimetest.RecordFixture); an imported one keeps the times its trace
// recorded, so only its id is fixed.
func Record(ctx context.Context, db *store.DB, dir, tmp, id string, start time.Time) (*graph.Run, error) {
	if !Imported(dir) {
		return runtimetest.RecordFixture(ctx, db, dir, tmp, id, start)
	}
	path := filepath.Join(dir, Trace)
	ss, err := otlp.Format{}.Read(ctx, path, importers.Options{Strict: true})
	if err != nil {
		return nil, fmt.Errorf("import fixture %s: %w", dir, err)
	}
	if len(ss) != 1 {
		return nil, fmt.Errorf("import fixture %s: %d sessions in %s, want one", dir, len(ss), Trace)
	}
	s := ss[0]
	s.Source.Path = filepath.ToSlash(filepath.Join("fixtures", filepath.Base(dir), Trace)) // not this machine's path
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
