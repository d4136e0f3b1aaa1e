// Package render turns the DOT that package mermaid prints into images:
// SVG through Graphviz (goccy/go-graphviz, Graphviz compiled to
// WebAssembly: no system install needed), and PNG painted from Graphviz's
// layout.
//
// It is a package of its own, next to mermaid's DOT, so that only programs
// that draw images link Graphviz. go-graphviz (third_party/go-graphviz,
// patched) compiles its WebAssembly module at the first drawing, not in a
// package init: about a second, or a few milliseconds from its compilation
// cache, which this package keeps in the user cache folder
// (…/inspect/go-graphviz, private to the user; CacheDir). A module that
// fails to load makes every drawing return that error; a cache that cannot
// be used only makes it slower.
package render

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/goccy/go-graphviz"
)

// SVG renders dot as SVG.
func SVG(ctx context.Context, dot []byte, w io.Writer) error {
	return graphvizRender(ctx, dot, graphviz.SVG, w)
}

// graphvizMu makes Graphviz calls take turns: go-graphviz runs Graphviz as
// one WebAssembly instance per process, and two calls at once share its
// memory and stack and corrupt them ("wasm error: out of bounds memory
// access"). inspect serve draws pages concurrently (TestSVG_Concurrent).
var graphvizMu sync.Mutex

// graphvizRender runs Graphviz on dot with one of its output formats.
func graphvizRender(ctx context.Context, dot []byte, format graphviz.Format, w io.Writer) error {
	graphvizMu.Lock()
	defer graphvizMu.Unlock()
	if err := loadGraphviz(); err != nil {
		return fmt.Errorf("start graphviz: %w", err)
	}
	gv, err := graphviz.New(ctx)
	if err != nil {
		return fmt.Errorf("start graphviz: %w", err)
	}
	defer gv.Close()
	gr, err := graphviz.ParseBytes(dot)
	if err != nil {
		return fmt.Errorf("graphviz: parse DOT: %w", err)
	}
	defer gr.Close()
	if err := gv.Render(ctx, gr, format, w); err != nil {
		return fmt.Errorf("graphviz: render %s: %w", format, err)
	}
	return nil
}

// loadGraphviz loads Graphviz once, with its compilation cache in CacheDir;
// every later call returns the first one's error.
var loadGraphviz = sync.OnceValue(func() error { return graphviz.Load(CacheDir()) })

// CacheDir is the folder where Graphviz's compiled module is kept: inspect/
// go-graphviz in the user cache folder (os.UserCacheDir), created private to
// this user. The cache holds machine code that the process runs, so a folder
// there that another user owns, or that others may write, is not used: it
// returns "" (no cache; each process compiles Graphviz again), as it does
// when there is no user cache folder. It never creates the user cache
// folder itself, and never looks at $TMPDIR.
func CacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	if fi, err := os.Stat(base); err != nil || !fi.IsDir() {
		return ""
	}
	dir := base
	for _, name := range []string{"inspect", "go-graphviz"} {
		dir = filepath.Join(dir, name)
		if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
			return ""
		}
		if !private(dir) {
			return ""
		}
	}
	return dir
}

// private reports whether dir is a folder (not a link) of this process's
// user that no one else may write, and that this user can enter and write.
func private(dir string) bool {
	fi, err := os.Lstat(dir)
	return err == nil && fi.IsDir() && privateToMe(fi)
}
