package graphviz_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-graphviz"
)

// A compilation cache that cannot be used (here a regular file where the
// folder should be) never fails the load: Graphviz is compiled without it
// and draws. (Patched for inspect; see PATCHES.md.)
func TestLoad_UnusableCacheIsSkipped(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "cache")
	if err := os.WriteFile(notADir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := graphviz.Load(notADir); err != nil {
		t.Fatalf("Load with an unusable cache: %v", err)
	}
	ctx := context.Background()
	gv, err := graphviz.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer gv.Close()
	g, err := graphviz.ParseBytes([]byte(`digraph { a -> b }`))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var svg bytes.Buffer
	if err := gv.Render(ctx, g, graphviz.SVG, &svg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg.String(), "<svg") {
		t.Errorf("no SVG drawn:\n%.300s", svg.String())
	}
}
