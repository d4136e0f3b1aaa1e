package render

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"strings"
	"sync"
	"testing"
)

const twoNodes = `digraph run { n1 [label="user: hi", shape=box]; n2 [label="llm @analyst", shape=box]; %s }`

// paint renders dot as a PNG and decodes it.
func paint(t *testing.T, dot string) image.Image {
	t.Helper()
	var buf bytes.Buffer
	if err := PNG(context.Background(), []byte(dot), &buf); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	return img
}

func darkPixels(img image.Image) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r+g+bl < 3*0x8000 {
				n++
			}
		}
	}
	return n
}

// The painter draws outlines, labels and edges: the chart with an edge has
// more ink than the same layout with the edge invisible (go-graphviz's own
// PNG renderer draws neither outlines nor edges).
func TestPNG(t *testing.T) {
	without := paint(t, strings.Replace(twoNodes, "%s", "n1 -> n2 [style=invis];", 1))
	with := paint(t, strings.Replace(twoNodes, "%s", "n1 -> n2;", 1))
	if b := with.Bounds(); b.Dx() < 50 || b.Dy() < 100 {
		t.Fatalf("image is %v, want two boxes one above the other at scale %v", b, pngScale)
	}
	if d := darkPixels(without); d == 0 {
		t.Fatal("no dark pixels: outlines and labels were not painted")
	}
	if dw, d := darkPixels(with), darkPixels(without); dw <= d {
		t.Errorf("dark pixels with an edge %d, without %d: the edge was not painted", dw, d)
	}
}

func TestSVG(t *testing.T) {
	var buf bytes.Buffer
	if err := SVG(context.Background(), []byte(strings.Replace(twoNodes, "%s", "n1 -> n2;", 1)), &buf); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"<svg", "user: hi", "llm @analyst", `class="edge"`} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("SVG lacks %q", w)
		}
	}
}

func TestRender_BadDOT(t *testing.T) {
	for name, f := range map[string]func(context.Context, []byte, *bytes.Buffer) error{
		"svg": func(ctx context.Context, d []byte, w *bytes.Buffer) error { return SVG(ctx, d, w) },
		"png": func(ctx context.Context, d []byte, w *bytes.Buffer) error { return PNG(ctx, d, w) },
	} {
		if err := f(context.Background(), []byte("digraph {"), new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "graphviz") {
			t.Errorf("%s of broken DOT: err = %v, want a graphviz error", name, err)
		}
	}
}

// TestSVG_Concurrent: Graphviz runs as one WebAssembly instance per
// process, whose memory concurrent calls would share; inspect serve draws
// pages at the same time, so renders take turns. Eight goroutines drawing
// at once each get the one right SVG (without the lock: "wasm error: out
// of bounds memory access", or wrong bytes).
func TestSVG_Concurrent(t *testing.T) {
	dot := []byte(`digraph { rankdir=LR; a -> b -> c; a -> c; b [label="fork · 3 branches"] }`)
	var want bytes.Buffer
	if err := SVG(context.Background(), dot, &want); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8*10)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				var got bytes.Buffer
				if err := SVG(context.Background(), dot, &got); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					errs <- fmt.Errorf("a concurrent render gave %d bytes unlike the %d of a lone one", got.Len(), want.Len())
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
