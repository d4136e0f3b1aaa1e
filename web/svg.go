package web

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"html/template"
	"io"
	"strings"
)

// svgElem is one element of a drawing, rebuilt from Graphviz's SVG with
// only the elements and attributes a chart needs, so that the page writes
// every name, value and text through html/template itself: nothing of the
// SVG Graphviz wrote reaches the page as markup.
type svgElem struct {
	Name  string
	Attrs []svgAttr
	Text  string
	Kids  []*svgElem
}

// svgAttr is one kept attribute; Name comes from svgAttrs (never from the
// input), so it may be written as an attribute name.
type svgAttr struct {
	Name  template.HTMLAttr
	Value string
}

// svgElems are the elements kept; any other is dropped with its content.
var svgElems = map[string]bool{
	"svg": true, "g": true, "title": true, "path": true, "polygon": true,
	"polyline": true, "ellipse": true, "text": true,
}

// svgAttrs are the attributes kept (geometry, paint, type, the hooks'
// id and class), as constant names.
var svgAttrs = func() map[string]template.HTMLAttr {
	m := map[string]template.HTMLAttr{}
	for _, a := range []string{"id", "class", "transform", "fill", "stroke", "stroke-width",
		"stroke-dasharray", "fill-opacity", "stroke-opacity", "d", "points", "cx", "cy", "rx", "ry",
		"x", "y", "text-anchor", "font-family", "font-size", "font-weight", "font-style", "viewBox"} {
		m[a] = template.HTMLAttr(a)
	}
	return m
}()

// maxSVGDepth bounds the nesting read from the SVG.
const maxSVGDepth = 64

// cleanSVG reads Graphviz's SVG into a tree of kept elements. The root's
// width and height are dropped (the page sizes the drawing), and so is
// the white background polygon Graphviz paints first.
func cleanSVG(b []byte) (*svgElem, error) {
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	var root *svgElem
	var stack []*svgElem
	skip := 0 // depth inside a dropped element
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read the drawing: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if skip > 0 || !svgElems[t.Name.Local] || len(stack) >= maxSVGDepth {
				skip++
				continue
			}
			e := &svgElem{Name: t.Name.Local}
			for _, a := range t.Attr {
				if a.Name.Space != "" {
					continue
				}
				name, ok := svgAttrs[a.Name.Local]
				if !ok || (e.Name == "svg" && a.Name.Local != "viewBox") {
					continue
				}
				e.Attrs = append(e.Attrs, svgAttr{name, a.Value})
			}
			if len(stack) == 0 {
				if root != nil || e.Name != "svg" {
					return nil, errors.New("read the drawing: not one svg element")
				}
				root = e
			} else {
				parent := stack[len(stack)-1]
				parent.Kids = append(parent.Kids, e)
			}
			stack = append(stack, e)
		case xml.EndElement:
			if skip > 0 {
				skip--
				continue
			}
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case xml.CharData:
			if skip == 0 && len(stack) > 0 {
				if e := stack[len(stack)-1]; e.Name == "text" || e.Name == "title" {
					e.Text += string(t)
				}
			}
		}
	}
	if root == nil {
		return nil, errors.New("read the drawing: no svg element")
	}
	// Graphviz's first shape in the graph group is the page background.
	for _, g := range root.Kids {
		if g.Name == "g" && g.attr("class") == "graph" {
			for i, k := range g.Kids {
				if k.Name == "polygon" {
					g.Kids = append(g.Kids[:i:i], g.Kids[i+1:]...)
					break
				}
			}
		}
	}
	return root, nil
}

func (e *svgElem) attr(name string) string {
	for _, a := range e.Attrs {
		if string(a.Name) == name {
			return a.Value
		}
	}
	return ""
}

// Title is the text of the element's title child (Graphviz names each
// node and cluster group with one), or "".
func (e *svgElem) Title() string {
	for _, k := range e.Kids {
		if k.Name == "title" {
			return strings.TrimSpace(k.Text)
		}
	}
	return ""
}

// prefixed is a copy of the drawing whose ids start with prefix: two
// drawings on one page (the compare page's) then share no id.
func (e *svgElem) prefixed(prefix string) *svgElem {
	c := &svgElem{Name: e.Name, Text: e.Text, Attrs: make([]svgAttr, len(e.Attrs)), Kids: make([]*svgElem, len(e.Kids))}
	for i, a := range e.Attrs {
		if a.Name == "id" && a.Value != "" {
			a.Value = prefix + a.Value
		}
		c.Attrs[i] = a
	}
	for i, k := range e.Kids {
		c.Kids[i] = k.prefixed(prefix)
	}
	return c
}
