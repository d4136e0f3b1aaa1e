package web_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/inspect-dev/inspect/analysis/storesrc"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/claudecode"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/mermaid"
	"github.com/inspect-dev/inspect/store"
	"github.com/inspect-dev/inspect/web"
)

// TestBrowser_ParallelGroups: in the run page of real Claude Code
// sessions (tool_heavy's two pairs of calls; the background session's
// groups of two to eight), the calls of each parallel group are drawn in
// the graph side by side — one row, their boxes apart from left to right,
// inside the group's dashed frame, below the response that made them —
// and in the timeline each call is a bar at its own time, stacked in a
// slot of its own. No page logs an error.
func TestBrowser_ParallelGroups(t *testing.T) {
	ctx := context.Background()
	real := importerstest.Transcripts(t)
	sessions := []string{
		filepath.Join(real, "claude-code", "tool_heavy.jsonl"),
		filepath.Join(real, "claude-code", "entire", "2.0.76-background8", "f8", "10e13fce67", "0", "full.jsonl"),
	}
	path := filepath.Join(t.TempDir(), "runs.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range sessions {
		res, err := importers.Import(ctx, db, claudecode.Format{}, s, importers.Options{})
		if err != nil || len(res) != 1 {
			t.Fatalf("import %s: %v (%d runs)", s, err, len(res))
		}
		ids = append(ids, res[0].RunID)
	}
	graphs := map[string]*graph.Run{}
	for _, id := range ids {
		g, err := graph.Load(ctx, db, id)
		if err != nil {
			t.Fatal(err)
		}
		graphs[id] = g
	}
	db.Close()
	ro, err := store.OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	srv := httptest.NewServer(web.New(storesrc.New(ro), web.Options{}))
	t.Cleanup(srv.Close)

	tb := newTab(t)
	for _, id := range ids {
		g := graphs[id]
		tb.reset()
		tb.do(t, chromedp.Navigate(srv.URL+"/runs/"+id))
		if !tb.waitFor(`document.querySelectorAll('#graph svg g.node').length > 0`) {
			t.Fatalf("run %s: no graph", id)
		}
		checked := 0
		for _, gr := range g.Groups {
			if len(gr.Members) < 2 {
				continue
			}
			checked++
			var boxes []string
			for i, m := range gr.Members {
				if i == mermaid.MaxCalls { // the rest are one box, the fifth's
					break
				}
				boxes = append(boxes, m.ID())
			}
			// [top, bottom, left, right] of each box, then of the frame and the response
			rects := eval[[][]float64](t, tb, fmt.Sprintf(`(() => {
				const r = id => { const e = document.getElementById('g-' + id); if (!e) return null; const b = e.getBoundingClientRect(); return [b.top, b.bottom, b.left, b.right]; };
				return [%s].map(r).concat([r(%q), r(%q)]);
			})()`, quoteAll(boxes), gr.ID(), gr.LLM.ID()))
			if len(rects) != len(boxes)+2 {
				t.Fatalf("%s: %d rectangles", gr.ID(), len(rects))
			}
			frame, llm := rects[len(boxes)], rects[len(boxes)+1]
			if frame == nil || llm == nil {
				t.Errorf("run %s: group %s has no frame (g-%s) or its response no box", id, gr.ID(), gr.ID())
				continue
			}
			cls := eval[string](t, tb, fmt.Sprintf(`document.getElementById('g-%s').getAttribute('class')`, gr.ID()))
			if !strings.Contains(cls, "parallel") {
				t.Errorf("%s: the frame's class is %q, want parallel", gr.ID(), cls)
			}
			for i, b := range rects[:len(boxes)] {
				if b == nil {
					t.Errorf("%s: box %s is not drawn", gr.ID(), boxes[i])
					continue
				}
				mid, first := (b[0]+b[1])/2, rects[0]
				if first != nil && abs(mid-(first[0]+first[1])/2) > 1 {
					t.Errorf("%s: box %s is not on the row of %s (centre %.1f, %.1f)", gr.ID(), boxes[i], boxes[0], mid, (first[0]+first[1])/2)
				}
				if i > 0 && rects[i-1] != nil && b[2] < rects[i-1][3] {
					t.Errorf("%s: box %s (x %.0f..%.0f) is not right of %s (x %.0f..%.0f)", gr.ID(), boxes[i], b[2], b[3], boxes[i-1], rects[i-1][2], rects[i-1][3])
				}
				if b[0] < frame[0] || b[1] > frame[1] || b[2] < frame[2] || b[3] > frame[3] {
					t.Errorf("%s: box %s is outside the group's frame", gr.ID(), boxes[i])
				}
				if b[0] < llm[1] {
					t.Errorf("%s: box %s is not below the response %s", gr.ID(), boxes[i], gr.LLM.ID())
				}
			}
			// the timeline: one bar per tool call (a fork is a mark), at its
			// own time, each in a slot of its own
			var calls []string
			for _, m := range gr.Members[:len(boxes)] {
				if m.Kind == "tool" {
					calls = append(calls, m.ID())
				}
			}
			bars := eval[[][]float64](t, tb, fmt.Sprintf(`[%s].map(id => { const e = document.querySelector('.tl-svg rect.bar.parallel[data-box="' + id + '"]'); return e ? [+e.getAttribute('y'), +e.getAttribute('height'), +e.getAttribute('x')] : null; })`, quoteAll(calls)))
			for i, b := range bars {
				if b == nil {
					t.Errorf("%s: no parallel timeline bar for %s", gr.ID(), calls[i])
					continue
				}
				if i > 0 && bars[i-1] != nil && b[0] < bars[i-1][0]+bars[i-1][1]-0.01 {
					t.Errorf("%s: the bar of %s (y %.1f) overlaps the bar of %s (y %.1f, height %.1f)", gr.ID(), calls[i], b[0], calls[i-1], bars[i-1][0], bars[i-1][1])
				}
			}
		}
		if checked == 0 {
			t.Errorf("run %s: no group of two or more calls", id)
		}
		tb.noErrors(t, "run page "+id)
	}
}

func quoteAll(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return strings.Join(q, ",")
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
