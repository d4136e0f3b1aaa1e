package timeline

import (
	"sort"
	"time"

	"github.com/inspect-dev/inspect/graph"
)

// Axis maps the times of a timeline to positions across a drawing of a
// given width: linearly, except that the long elided gaps of a collapsed
// run (a trunk's middle of thousands of nodes stands for most of its time)
// are drawn narrow — a broken axis — so the parts the chart shows keep
// their room.
type Axis struct {
	start, end time.Time
	width      float64
	segs       []segment
}

// segment is one stretch of the axis: a gap or a linear part.
type segment struct {
	from, to time.Time
	x0, x1   float64
	gap      bool
}

// Tick is one mark of the axis.
type Tick struct {
	X float64
	// Label is the time since the run's start ("6.2s", "143m32s").
	Label string
}

// Span is a stretch of the drawing.
type Span struct{ X0, X1 float64 }

// A gap is drawn narrow when it covers at least minGapShare of the run's
// time; it then takes gapShare of the width.
const (
	minGapShare = 0.1
	gapShare    = 0.04
)

// Axis returns the axis of t across width (columns, or drawing units).
func (t *Timeline) Axis(width float64) *Axis {
	a := &Axis{start: t.Start, end: t.End, width: width}
	span := t.End.Sub(t.Start)
	var gaps []segment
	for _, l := range t.Lanes {
		for _, b := range l.Bars {
			if b.Gap && span > 0 && float64(b.End.Sub(b.Start)) >= minGapShare*float64(span) {
				gaps = append(gaps, segment{from: b.Start, to: b.End, gap: true})
			}
		}
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i].from.Before(gaps[j].from) })
	var merged []segment
	for _, g := range gaps {
		if n := len(merged); n > 0 && !g.from.After(merged[n-1].to) {
			if g.to.After(merged[n-1].to) {
				merged[n-1].to = g.to
			}
			continue
		}
		merged = append(merged, g)
	}
	// The linear parts between the gaps share what the gaps leave.
	var parts []segment
	at := t.Start
	for _, g := range merged {
		if g.from.After(at) {
			parts = append(parts, segment{from: at, to: g.from})
		}
		parts = append(parts, g)
		at = g.to
	}
	if t.End.After(at) || len(parts) == 0 {
		parts = append(parts, segment{from: at, to: t.End})
	}
	var linear time.Duration
	for _, p := range parts {
		if !p.gap {
			linear += p.to.Sub(p.from)
		}
	}
	gapW := gapShare * width
	rest := width - gapW*float64(len(merged))
	if linear <= 0 || rest <= 0 || len(merged) == 0 {
		// nothing to break: one linear axis
		a.segs = []segment{{from: t.Start, to: t.End, x0: 0, x1: width}}
		return a
	}
	x := 0.0
	for _, p := range parts {
		w := gapW
		if !p.gap {
			w = rest * float64(p.to.Sub(p.from)) / float64(linear)
		}
		p.x0, p.x1 = x, x+w
		x += w
		a.segs = append(a.segs, p)
	}
	return a
}

// X is the position of time at (clamped to the drawing).
func (a *Axis) X(at time.Time) float64 {
	if !at.After(a.start) {
		return 0
	}
	for _, s := range a.segs {
		if at.After(s.to) {
			continue
		}
		d := s.to.Sub(s.from)
		if d <= 0 {
			return s.x0
		}
		return s.x0 + (s.x1-s.x0)*float64(at.Sub(s.from))/float64(d)
	}
	return a.width
}

// Gaps are the stretches drawn narrow, in order.
func (a *Axis) Gaps() []Span {
	var out []Span
	for _, s := range a.segs {
		if s.gap {
			out = append(out, Span{s.x0, s.x1})
		}
	}
	return out
}

// Ticks are the axis' marks: the start and end of each linear part, and
// inside a wide one its quarters.
func (a *Axis) Ticks() []Tick {
	var out []Tick
	add := func(at time.Time) {
		x := a.X(at)
		for _, t := range out {
			if t.X == x {
				return
			}
		}
		out = append(out, Tick{X: x, Label: graph.FormatDuration(at.Sub(a.start))})
	}
	for _, s := range a.segs {
		if s.gap {
			continue
		}
		add(s.from)
		if w := s.x1 - s.x0; w >= a.width/3 {
			n := int(4 * w / a.width)
			for i := 1; i < n; i++ {
				add(s.from.Add(s.to.Sub(s.from) * time.Duration(i) / time.Duration(n)))
			}
		}
		add(s.to)
	}
	return out
}
