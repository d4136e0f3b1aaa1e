// Package runtimetest records fixture projects for other packages' tests:
// a scripted project copied out of the repository, run in virtual time at a
// fixed clock and run id, and loaded as a graph.
package runtimetest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/runtime"
	"github.com/inspect-dev/inspect/store"
)

// RecordFixture copies the scripted project src into a fresh folder under
// tmp (so its tools never write into the repository), runs its script.yaml
// in virtual time from start with run id id into db, and loads the graph.
func RecordFixture(ctx context.Context, db *store.DB, src, tmp, id string, start time.Time) (*graph.Run, error) {
	dst := filepath.Join(tmp, filepath.Base(src))
	if err := CopyDir(src, dst); err != nil {
		return nil, fmt.Errorf("copy fixture %s: %w", src, err)
	}
	res, err := runtime.Run(ctx, runtime.Config{Project: dst, Script: filepath.Join(dst, "script.yaml"), DB: db,
		Now: func() time.Time { return start }, RunID: id})
	if err != nil {
		return nil, fmt.Errorf("record fixture %s: %w", src, err)
	}
	g, err := graph.Load(ctx, db, res.RunID)
	if err != nil {
		return nil, fmt.Errorf("load fixture %s: %w", src, err)
	}
	return g, nil
}

// CopyDir copies the tree at src to dst, creating dst.
func CopyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil // links and devices stay behind
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
}
