package render

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"strconv"
	"strings"

	"github.com/fogleman/gg"
	"github.com/goccy/go-graphviz"
	"github.com/golang/freetype/truetype"
	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/goregular"
)

// pngScale is the pixels per Graphviz point of `inspect graph --format png`.
const pngScale = 2.0

// PNG lays dot out with Graphviz and paints the layout's drawing
// operations (xdot, from Graphviz's JSON output) with gg. go-graphviz's own
// PNG renderer (v0.2.10) fills shapes but strokes no outline and no edge,
// which leaves a chart without arrows.
func PNG(ctx context.Context, dot []byte, w io.Writer) error {
	var js bytes.Buffer
	if err := graphvizRender(ctx, dot, graphviz.Format("json"), &js); err != nil {
		return err
	}
	var lay xdotGraph
	if err := json.Unmarshal(js.Bytes(), &lay); err != nil {
		return fmt.Errorf("graphviz: read layout: %w", err)
	}
	var bb [4]float64
	for i, f := range strings.Split(lay.BB, ",") {
		if i < 4 {
			bb[i], _ = strconv.ParseFloat(f, 64)
		}
	}
	const pad = 8.0
	width, height := bb[2]-bb[0]+2*pad, bb[3]-bb[1]+2*pad
	p := &painter{
		dc: gg.NewContext(int(width*pngScale+0.5), int(height*pngScale+0.5)),
		x0: bb[0] - pad, top: bb[3] + pad, faces: map[float64]font.Face{},
	}
	ttf, err := truetype.Parse(goregular.TTF)
	if err != nil {
		return err
	}
	p.font = ttf
	p.dc.SetColor(color.White)
	p.dc.Clear()
	p.draw(lay.Draw)
	p.draw(lay.LDraw)
	for _, o := range lay.Objects { // clusters, then nodes
		if o.Nodes != nil {
			p.draw(o.Draw)
			p.draw(o.LDraw)
		}
	}
	for _, e := range lay.Edges {
		p.draw(e.Draw)
		p.draw(e.HDraw)
		p.draw(e.TDraw)
		p.draw(e.LDraw)
	}
	for _, o := range lay.Objects {
		if o.Nodes == nil {
			p.draw(o.Draw)
			p.draw(o.LDraw)
		}
	}
	return p.dc.EncodePNG(w)
}

// xdotGraph is the part of Graphviz's JSON output the painter reads.
type xdotGraph struct {
	BB      string     `json:"bb"`
	Draw    []xdotOp   `json:"_draw_"`
	LDraw   []xdotOp   `json:"_ldraw_"`
	Objects []xdotObj  `json:"objects"`
	Edges   []xdotEdge `json:"edges"`
}

type xdotObj struct {
	Draw  []xdotOp `json:"_draw_"`
	LDraw []xdotOp `json:"_ldraw_"`
	Nodes []int    `json:"nodes"` // set on subgraphs (clusters)
}

type xdotEdge struct {
	Draw  []xdotOp `json:"_draw_"`
	HDraw []xdotOp `json:"_hdraw_"`
	TDraw []xdotOp `json:"_tdraw_"`
	LDraw []xdotOp `json:"_ldraw_"`
}

// xdotOp is one xdot drawing operation.
type xdotOp struct {
	Op     string       `json:"op"`
	Color  string       `json:"color"`
	Points [][2]float64 `json:"points"`
	Rect   [4]float64   `json:"rect"`
	Pt     [2]float64   `json:"pt"`
	Align  string       `json:"align"`
	Width  float64      `json:"width"`
	Text   string       `json:"text"`
	Size   float64      `json:"size"`
	Style  string       `json:"style"`
}

// painter draws xdot operations; Graphviz's y axis points up.
type painter struct {
	dc      *gg.Context
	x0, top float64
	font    *truetype.Font
	faces   map[float64]font.Face

	pen, fill color.Color
	lineWidth float64
	dashed    bool
	fontSize  float64
}

func (p *painter) xy(pt [2]float64) (float64, float64) {
	return (pt[0] - p.x0) * pngScale, (p.top - pt[1]) * pngScale
}

func (p *painter) draw(ops []xdotOp) {
	p.pen, p.fill, p.lineWidth, p.dashed, p.fontSize = color.Black, color.Transparent, 1, false, 14
	for _, op := range ops {
		switch op.Op {
		case "c":
			p.pen = parseColor(op.Color)
		case "C":
			p.fill = parseColor(op.Color)
		case "S":
			switch s := op.Style; {
			case s == "dashed":
				p.dashed = true
			case s == "dotted":
				p.dashed = true
			case s == "solid":
				p.dashed = false
			case s == "bold":
				p.lineWidth = 2
			case strings.HasPrefix(s, "setlinewidth("):
				if v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(s, "setlinewidth("), ")"), 64); err == nil {
					p.lineWidth = v
				}
			}
		case "F":
			p.fontSize = op.Size
		case "P", "p", "L":
			p.path(op.Points, false, op.Op != "L")
			p.finish(op.Op == "P")
		case "B", "b":
			// Graphviz writes the outline of a filled rounded box as "B":
			// a closed curve after a fill colour is filled too.
			pts := op.Points
			closed := len(pts) > 1 && pts[0] == pts[len(pts)-1]
			filled := op.Op == "b" || (closed && p.fill != color.Transparent)
			p.path(pts, true, closed)
			p.finish(filled)
		case "E", "e":
			x, y := p.xy([2]float64{op.Rect[0], op.Rect[1]})
			p.dc.DrawEllipse(x, y, op.Rect[2]*pngScale, op.Rect[3]*pngScale)
			p.finish(op.Op == "E")
		case "T":
			p.text(op)
		}
	}
}

// path traces points as straight segments or as cubic Bézier pieces.
func (p *painter) path(pts [][2]float64, bezier, closed bool) {
	if len(pts) == 0 {
		return
	}
	p.dc.NewSubPath()
	p.dc.MoveTo(p.xy(pts[0]))
	if bezier {
		for i := 1; i+2 < len(pts); i += 3 {
			x1, y1 := p.xy(pts[i])
			x2, y2 := p.xy(pts[i+1])
			x3, y3 := p.xy(pts[i+2])
			p.dc.CubicTo(x1, y1, x2, y2, x3, y3)
		}
	} else {
		for _, pt := range pts[1:] {
			p.dc.LineTo(p.xy(pt))
		}
	}
	if closed {
		p.dc.ClosePath()
	}
}

// finish fills (when filled) and strokes the current path.
func (p *painter) finish(filled bool) {
	if filled {
		p.dc.SetColor(p.fill)
		p.dc.FillPreserve()
	}
	p.dc.SetColor(p.pen)
	p.dc.SetLineWidth(p.lineWidth * pngScale)
	if p.dashed {
		p.dc.SetDash(5*pngScale, 3*pngScale)
	} else {
		p.dc.SetDash()
	}
	p.dc.Stroke()
}

// text draws a label line at its baseline, shrinking the font when Go
// Regular is wider than the Helvetica metrics Graphviz laid it out with.
func (p *painter) text(op xdotOp) {
	size := p.fontSize * pngScale
	p.dc.SetFontFace(p.face(size))
	w, _ := p.dc.MeasureString(op.Text)
	if want := op.Width * pngScale; w > want && want > 0 {
		size *= want / w
		p.dc.SetFontFace(p.face(size))
	}
	ax := 0.5
	switch op.Align {
	case "l":
		ax = 0
	case "r":
		ax = 1
	}
	x, y := p.xy(op.Pt)
	p.dc.SetColor(p.pen)
	p.dc.DrawStringAnchored(op.Text, x, y, ax, 0)
}

func (p *painter) face(size float64) font.Face {
	size = float64(int(size*4)) / 4 // a few sizes, cached
	if f, ok := p.faces[size]; ok {
		return f
	}
	f := truetype.NewFace(p.font, &truetype.Options{Size: size, Hinting: font.HintingFull})
	p.faces[size] = f
	return f
}

// parseColor reads #rrggbb, #rrggbbaa and the few names Graphviz writes.
func parseColor(s string) color.Color {
	switch s {
	case "black":
		return color.Black
	case "white":
		return color.White
	case "none", "transparent", "":
		return color.Transparent
	}
	s = strings.TrimPrefix(s, "#")
	if len(s) != 6 && len(s) != 8 {
		return color.Black
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return color.Black
	}
	if len(s) == 6 {
		return color.NRGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 255}
	}
	return color.NRGBA{uint8(v >> 24), uint8(v >> 16), uint8(v >> 8), uint8(v)}
}
