package web_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/inspect-dev/inspect/analysis/storesrc"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
	"github.com/inspect-dev/inspect/web"
)

// manyRuns records n runs into a real SQLite file through the store and
// serves it: run i (id r0000…) starts i minutes after t0, takes i%100
// seconds, has 10000-i tokens in, and is an error when i%500 == 7, else
// ok. Run 3 has a task of 12 lines.
func manyRuns(t *testing.T, n int) *httptest.Server {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "many.db")
	w, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		start := t0.Add(time.Duration(i) * time.Minute)
		task := fmt.Sprintf("task %d", i)
		if i == 3 {
			task = strings.TrimSpace(strings.Repeat("a long line of the task that goes on and on, as pasted prompts do\n", 12))
		}
		rec, err := w.CreateRun(ctx, &record.Run{ID: fmt.Sprintf("r%04d", i), Started: start, Tasks: []string{task}})
		if err != nil {
			t.Fatal(err)
		}
		if err := rec.AddNode(ctx, &record.Node{Kind: record.KindLLM, Agent: "solo", Started: start, Ended: start.Add(time.Second),
			LLM: &record.LLM{Model: "m", Usage: record.Usage{In: int64(10000 - i), Out: 1}}}); err != nil {
			t.Fatal(err)
		}
		st := record.StatusOK
		if i%500 == 7 {
			st = record.StatusError
		}
		if err := rec.Finish(ctx, st, "", start.Add(time.Duration(i%100)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	ro, err := store.OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	srv := httptest.NewServer(web.New(storesrc.New(ro), web.Options{}))
	t.Cleanup(srv.Close)
	return srv
}

// rowIDs are the runs the list shows, in order.
const rowIDs = `[...document.querySelectorAll('tr[data-run]')].map(tr => tr.dataset.run)`

// TestBrowser_RunsPaging: 2,500 runs in a real file are listed 50 a page
// (before: all of them on one page, no pager), paged with the pager's
// links, sorted by the column headers (time, status, elapsed, tokens,
// nodes; before: no sorting), and a 12-line task takes at most two lines
// with its whole text on hover and a click away (before: a row 12 lines
// tall).
func TestBrowser_RunsPaging(t *testing.T) {
	srv := manyRuns(t, 2500)
	tb := newTab(t)
	start := time.Now()
	tb.do(t, chromedp.Navigate(srv.URL+"/"))
	t.Logf("the first page of 2,500 runs loads in %v", time.Since(start).Round(time.Millisecond))
	rows := eval[[]string](t, tb, rowIDs)
	if len(rows) != 50 || rows[0] != "r2499" || rows[49] != "r2450" {
		t.Fatalf("the first page lists %d runs (%v…), want 50: r2499 to r2450", len(rows), rows[:min(3, len(rows))])
	}
	if got := eval[string](t, tb, `document.getElementById('page-of').textContent`); got != "runs 1–50 of 2,500 · page 1 of 50" {
		t.Errorf("the pager says %q", got)
	}
	tb.do(t, chromedp.Click(chromedp.CSS(`#pager a[rel=next]`)))
	if !tb.waitFor(`location.search === '?page=2' && document.readyState === 'complete'`) {
		t.Fatal("next page does not open page 2")
	}
	if rows := eval[[]string](t, tb, rowIDs); len(rows) != 50 || rows[0] != "r2449" {
		t.Errorf("page 2 lists %d runs from %v, want 50 from r2449", len(rows), rows[:min(1, len(rows))])
	}
	tb.do(t, chromedp.Click(chromedp.CSS(`#pager a[data-page="50"]`)))
	if !tb.waitFor(`location.search === '?page=50' && document.readyState === 'complete'`) {
		t.Fatal("last does not open page 50")
	}
	if rows := eval[[]string](t, tb, rowIDs); len(rows) != 50 || rows[49] != "r0000" {
		t.Errorf("the last page lists %d runs to %v, want 50 to r0000", len(rows), rows[max(0, len(rows)-1):])
	}
	// The long task: two lines at most, the whole text in its title, a click shows it.
	tb.do(t, chromedp.Navigate(srv.URL+"/?page=50"))
	h := eval[float64](t, tb, `document.querySelector('tr[data-run="r0003"]').getBoundingClientRect().height`)
	line := eval[float64](t, tb, `parseFloat(getComputedStyle(document.querySelector('tr[data-run="r0003"] .cut')).lineHeight)`)
	if h > 3*line+12 {
		t.Errorf("the row of a 12-line task is %.0f px tall, more than two lines of %.1f px and a project line", h, line)
	}
	if title := eval[string](t, tb, `document.querySelector('tr[data-run="r0003"] .cut').title`); strings.Count(title, "goes on and on") != 12 {
		t.Errorf("the cut task's title does not hold the whole task: %q", title)
	}
	tb.do(t, chromedp.Click(chromedp.CSS(`tr[data-run="r0003"] .cut`)))
	if open := eval[float64](t, tb, `document.querySelector('tr[data-run="r0003"] .cut').getBoundingClientRect().height`); open < 10*line {
		t.Errorf("a click shows the task %.0f px tall, want its 12 lines", open)
	}
	// Sorting by the headers, each first in its natural direction, again reversed.
	tb.do(t, chromedp.Navigate(srv.URL+"/"))
	sorts := []struct {
		key, search string
		want        []string
	}{
		{"tokens", "?dir=desc&sort=tokens", []string{"r0000", "r0001", "r0002"}},
		{"tokens", "?dir=asc&sort=tokens", []string{"r2499", "r2498", "r2497"}},
		{"elapsed", "?dir=desc&sort=elapsed", []string{"r2499", "r2399", "r2299"}},
		{"status", "?dir=asc&sort=status", []string{"r2007", "r1507", "r1007", "r0507", "r0007", "r2499"}},
		{"started", "", []string{"r2499", "r2498"}},
		{"started", "?dir=asc&sort=started", []string{"r0000", "r0001"}},
		{"nodes", "?dir=desc&sort=nodes", []string{"r2499", "r2498"}},
	}
	for _, s := range sorts {
		tb.do(t, chromedp.Click(chromedp.CSS(`a.sort[data-sort="`+s.key+`"]`)))
		if !tb.waitFor(`location.search === '` + s.search + `' && document.readyState === 'complete'`) {
			t.Fatalf("the %s header does not order by %s (address %s)", s.key, s.search, eval[string](t, tb, `location.search`))
		}
		rows := eval[[]string](t, tb, rowIDs)
		if len(rows) < len(s.want) || strings.Join(rows[:len(s.want)], " ") != strings.Join(s.want, " ") {
			t.Errorf("%s: rows %v…, want %v", s.search, rows[:min(len(rows), len(s.want))], s.want)
		}
		aria := eval[string](t, tb, `document.querySelector('a.sort[data-sort="`+s.key+`"]').parentElement.getAttribute('aria-sort')`)
		if want := map[bool]string{true: "ascending", false: "descending"}[strings.Contains(s.search, "=asc")]; aria != want {
			t.Errorf("%s: the header's aria-sort is %q, want %q", s.search, aria, want)
		}
	}
	// Paging keeps the order; a filter typed on page 2 starts again at page 1.
	tb.do(t, chromedp.Navigate(srv.URL+"/?sort=tokens&dir=asc&page=2"))
	if rows := eval[[]string](t, tb, rowIDs); len(rows) != 50 || rows[0] != "r2449" {
		t.Errorf("page 2 by fewest tokens starts at %v, want r2449", rows[:min(1, len(rows))])
	}
	tb.do(t, chromedp.SendKeys(chromedp.CSS("#q"), "task 12"))
	if !tb.waitFor(`document.getElementById('page-of').textContent === 'runs 1–50 of 111 (2,500 in all) · page 1 of 3'`) {
		t.Errorf("typing a filter on page 2: the pager says %q", eval[string](t, tb, `document.getElementById('page-of').textContent`))
	}
	if q := eval[string](t, tb, `location.search`); q != "?q=task+12&sort=tokens&dir=asc" {
		t.Errorf("the filtered address is %q", q)
	}
	tb.noErrors(t, "runs list")
}

// screenFont is the size in screen pixels of the smallest box label of
// the run page's graph.
const screenFont = `(() => { const svg = document.querySelector('#graph svg'); const k = svg.getScreenCTM().a;
	return Math.min(...[...svg.querySelectorAll('g.node text')].map(t => parseFloat(t.getAttribute('font-size')) * k)); })()`

// TestBrowser_GraphReadable: the demo's graph labels are at least 12
// screen pixels when the page opens and after Fit (before: about 8 px at
// Fit), and - still zooms out past that.
func TestBrowser_GraphReadable(t *testing.T) {
	srv, ids := served(t, web.Options{})
	tb := newTab(t)
	tb.do(t, chromedp.Navigate(srv.URL+"/runs/"+ids["demo"]))
	if px := eval[float64](t, tb, screenFont); px < 11.99 {
		t.Errorf("the graph opens with %.1f px labels, want at least 12", px)
	}
	tb.do(t, chromedp.Click(chromedp.CSS(`[data-zoom="fit"]`)))
	fit := eval[float64](t, tb, screenFont)
	if fit < 11.99 {
		t.Errorf("Fit draws %.1f px labels, want at least 12", fit)
	}
	tb.do(t, chromedp.Click(chromedp.CSS(`[data-zoom="out"]`)))
	if out := eval[float64](t, tb, screenFont); out >= fit {
		t.Errorf("zooming out after Fit leaves %.1f px labels (Fit: %.1f)", out, fit)
	}
	tb.noErrors(t, "run page")
}

// TestBrowser_SmallGraphBox: a run of three nodes gets a graph box as
// tall as its drawing (before: a 22rem box with the drawing floating in
// it).
func TestBrowser_SmallGraphBox(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "small.db")
	w, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	id, err := graphtest.Record(ctx, w, graphtest.Synthetic(3))
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	ro, err := store.OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	srv := httptest.NewServer(web.New(storesrc.New(ro), web.Options{}))
	defer srv.Close()
	tb := newTab(t)
	tb.do(t, chromedp.Navigate(srv.URL+"/runs/"+id))
	box := eval[float64](t, tb, `document.getElementById('graph').getBoundingClientRect().height`)
	drawn := eval[float64](t, tb, `document.querySelector('#graph svg g.graph').getBoundingClientRect().height`)
	if box-drawn > 40 {
		t.Errorf("the graph box is %.0f px tall for a drawing of %.0f px", box, drawn)
	}
	if px := eval[float64](t, tb, screenFont); px < 11.99 {
		t.Errorf("the small graph's labels are %.1f px", px)
	}
	tb.noErrors(t, "small run page")
}
