package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/record"
)

// TestGraph_EntitiesStayText: Graphviz decodes HTML entities in labels, so
// a path `x&#1;y` gave an SVG with a raw 0x01 (not well-formed XML) and a
// PNG that failed, and `&lt;` showed as `<` (issue 11, defect 7). DOT
// labels now escape `&`: the SVG is well-formed and shows the text as
// written, and the PNG renders.
func TestGraph_EntitiesStayText(t *testing.T) {
	ctx := context.Background()
	f, out, errOut := testFactory(t)
	db, err := f.Store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nodes := graphtest.Synthetic(12)
	for _, n := range nodes {
		if n.Kind == record.KindTool {
			n.Tool.Args = `{"path": "x&#1;y &lt;b&gt; &amp;"}`
		}
	}
	if _, err := graphtest.Record(ctx, db, nodes); err != nil {
		t.Fatal(err)
	}
	if code := run(ctx, f, []string{"graph", "--format", "svg"}); code != ExitOK {
		t.Fatalf("graph --format svg: exit %d: %s", code, errOut)
	}
	svg := out.Bytes()
	if bytes.Contains(svg, []byte{1}) {
		t.Error("the SVG holds a raw 0x01")
	}
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		if cd, ok := tok.(xml.CharData); ok {
			text.Write(cd)
		}
	}
	if !strings.Contains(text.String(), "x&#1;y &lt;b&gt; &amp;") {
		t.Errorf("the SVG's text does not show the path as written:\n%s", text.String())
	}
	out.Reset()
	if code := run(ctx, f, []string{"graph", "--format", "png"}); code != ExitOK || !bytes.HasPrefix(out.Bytes(), []byte("\x89PNG")) {
		t.Errorf("graph --format png: exit %d, %d bytes: %s", code, out.Len(), errOut)
	}
}
