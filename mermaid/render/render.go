// Package render turns the DOT that package mermaid prints into images:
// SVG through Graphviz (goccy/go-graphviz, Graphviz compiled to
// WebAssembly: no system install needed), and PNG painted from Graphviz's
// layout.
//
// It is a package of its own, next to mermaid's DOT, so that only programs
// that draw images link Graphviz: go-graphviz compiles its WebAssembly
// module in a package init (about 0.5 s without its cache, and a panic when
// $TMPDIR/go-graphviz belongs to another user; cmd/inspect guards against
// that with internal/gvcache), and diff, which prints Mermaid, should pay
// neither.
package render

import (
	"context"
	"fmt"
	"io"
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
