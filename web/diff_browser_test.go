package web_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/analysis/storesrc"
	"github.com/inspect-dev/inspect/diff"
	"github.com/inspect-dev/inspect/store"
	"github.com/inspect-dev/inspect/web"
)

// markdownAgents are the rows of the per-agent table `inspect diff
// --format markdown` writes for base → new, its header first, each row's
// cells trimmed.
func markdownAgents(t *testing.T, base, new string) [][]string {
	t.Helper()
	ctx := context.Background()
	db, err := store.OpenReadOnly(ctx, runs.path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	an := analysis.New(storesrc.New(db), nil)
	b, err := an.Open(ctx, base, analysis.LoadBrief)
	if err != nil {
		t.Fatal(err)
	}
	n, err := an.Open(ctx, new, analysis.LoadBrief)
	if err != nil {
		t.Fatal(err)
	}
	r, err := analysis.Diff(ctx, &diff.Config{NoMermaid: true}, b, n)
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := diff.WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(md.String(), "<summary>Per agent</summary>")
	if !ok {
		t.Fatalf("the Markdown diff has no per-agent table:\n%s", md.String())
	}
	var rows [][]string
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| ---") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		rows = append(rows, cells)
	}
	return rows
}

// TestBrowser_ComparePage: at 1,400 px the compare page of the demo
// (base) and the failing-branch run (new) has the site's navigation (it
// is not a report: before, its data's Report field, the diff, shadowed
// the page's and the layout dropped the nav), does not overflow the width
// though the selectors list the hostile run's long task (before, an
// option held the whole task and the selects ran off the page), has the
// per-agent table the Markdown diff has, row for row and cell for cell,
// and both runs' graphs, whose boxes share no id.
func TestBrowser_ComparePage(t *testing.T) {
	srv, ids := served(t, web.Options{})
	want := markdownAgents(t, ids["demo"], ids["failing-branch"])
	if len(want) < 2 {
		t.Fatalf("the Markdown diff has %d agent rows, want several: %v", len(want), want)
	}
	tb := newTab(t)
	tb.do(t, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 1400, Height: 1000, DeviceScaleFactor: 1})
		return err
	}))
	tb.do(t, chromedp.Navigate(srv.URL+"/diff?base="+ids["demo"]+"&new="+ids["failing-branch"]))
	if w := eval[int](t, tb, `window.innerWidth`); w != 1400 {
		t.Fatalf("the viewport is %d px wide, want 1400", w)
	}
	if n := eval[int](t, tb, `document.querySelectorAll('header.top nav a[href="/diff"][aria-current="page"], header.top nav a[href="/"]').length`); n != 2 {
		t.Errorf("the compare page's navigation has %d of its links (Runs, Compare current), want 2", n)
	}
	if rep := eval[bool](t, tb, `document.body.dataset.report === '1'`); rep {
		t.Error("the compare page is marked as a report")
	}
	sw := eval[int](t, tb, `document.documentElement.scrollWidth`)
	cw := eval[int](t, tb, `document.documentElement.clientWidth`)
	if sw > cw {
		t.Errorf("the page overflows at 1,400 px: scrollWidth %d > clientWidth %d", sw, cw)
	}
	if r := eval[float64](t, tb, `Math.max(...[...document.querySelectorAll('select')].map(s => s.getBoundingClientRect().right))`); r > 1400 {
		t.Errorf("a selector ends at %.0f px, past the 1,400 px window", r)
	}
	long := eval[int](t, tb, `Math.max(...[...document.querySelectorAll('#pick-base option')].map(o => o.textContent.split(' · ').slice(2).join(' · ').length))`)
	if long > 60 {
		t.Errorf("an option shows %d characters of its task, want at most 60", long)
	}
	if title := eval[string](t, tb, `document.querySelector('#pick-base option[value="`+ids["hostile"]+`"]').title`); !strings.Contains(title, "<script>window.__pwned=10</script>") {
		t.Errorf("the hostile run's option does not carry its task whole, as text, in its title: %q", title)
	}
	got := eval[[][]string](t, tb, `[...document.querySelectorAll('#per-agent tr')].map(tr => [...tr.children].map(c => c.textContent.trim()))`)
	if len(got) != len(want) {
		t.Errorf("the per-agent table has %d rows, the Markdown diff %d:\n%v\n%v", len(got), len(want), got, want)
	}
	for i := range min(len(got), len(want)) {
		if strings.Join(got[i], " | ") != strings.Join(want[i], " | ") {
			t.Errorf("per-agent row %d:\n  page     %s\n  markdown %s", i+1, strings.Join(got[i], " | "), strings.Join(want[i], " | "))
		}
	}
	graphs := eval[[]int](t, tb, `[...document.querySelectorAll('.diff-graph svg.graph-svg')].map(s => s.querySelectorAll('g.node').length)`)
	if len(graphs) != 2 || graphs[0] == 0 || graphs[1] == 0 {
		t.Errorf("the compare page's graphs have %v boxes, want two drawn graphs", graphs)
	}
	if dup := eval[int](t, tb, `(() => { const ids = [...document.querySelectorAll('[id]')].map(e => e.id); return ids.length - new Set(ids).size; })()`); dup != 0 {
		t.Errorf("%d ids repeated on the compare page", dup)
	}
	tb.noErrors(t, "compare page")
}
