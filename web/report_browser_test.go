package web_test

import (
	"bytes"
	"context"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/net/html"

	"github.com/inspect-dev/inspect/analysis/storesrc"
	"github.com/inspect-dev/inspect/runtime/examples"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
	"github.com/inspect-dev/inspect/store"
	"github.com/inspect-dev/inspect/web"
)

// openReport writes run id's report to a file and opens it in a tab.
func openReport(t *testing.T, id string) (*tab, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, report(t, id), 0o644); err != nil {
		t.Fatal(err)
	}
	tb := newTab(t)
	u := (&url.URL{Scheme: "file", Path: path}).String()
	tb.do(t, chromedp.Navigate(u))
	return tb, u
}

// TestBrowser_ReportNodes: the report holds the nodes its findings name
// in full, folded: the demo's first finding (n2..n7) links to each; a
// click on the link opens the node's details (request folded, response,
// usage), a click on a node's summary opens it too, and a tool node shows
// its arguments and result. Before, the report had no prompt or response
// at all. It opens from file:// with no request but itself.
func TestBrowser_ReportNodes(t *testing.T) {
	_, ids := served(t, web.Options{})
	tb, u := openReport(t, ids["demo"])
	got := eval[[]string](t, tb, `[...document.querySelectorAll('details.node-detail')].map(d => d.id)`)
	if strings.Join(got, " ") != "node-n2 node-n3 node-n4 node-n5 node-n6 node-n7 node-n9 node-n14 node-n20 node-n22 node-n23 node-n25" {
		t.Errorf("the report holds nodes %v in full, want the findings' n2..n7, n9 n14 n20, n22 n23 n25", got)
	}
	if open := eval[int](t, tb, `document.querySelectorAll('details.node-detail[open]').length`); open != 0 {
		t.Errorf("%d node details open when the report opens, want all folded", open)
	}
	links := eval[[]string](t, tb, `[...document.querySelectorAll('#finding-1 a.node-open')].map(a => a.textContent)`)
	if strings.Join(links, " ") != "n2 n3 n4 n5 n6 n7" {
		t.Errorf("the first finding links to %v in full, want n2..n7", links)
	}
	// the finding's link to n2 opens its details, scrolled to
	tb.do(t, chromedp.Click(chromedp.CSS(`#finding-1 a.node-open[href="#node-n2"]`)))
	if !tb.waitFor(`document.getElementById('node-n2').open && location.hash === '#node-n2'`) {
		t.Fatal("the finding's link to n2 does not open its details")
	}
	n2 := eval[string](t, tb, `document.getElementById('node-n2').innerText`)
	for _, want := range []string{"tokens in", "1,382", "Request", "System prompt", "Messages", "Write a Q3 revenue brief", "Response", "finish_reason tool_calls", "regions/eu.md"} {
		if !strings.Contains(n2, want) {
			t.Errorf("n2's details lack %q:\n%.2000s", want, n2)
		}
	}
	folds := eval[[]string](t, tb, `[...document.querySelectorAll('#node-n2 details.fold')].map(d => d.querySelector('summary').textContent.trim().split(/\s+/)[0] + (d.open ? ':open' : ''))`)
	if strings.Join(folds, " ") != "System Tools Messages:open" {
		t.Errorf("n2's request folds %v, want the system prompt and tools folded, the messages open", folds)
	}
	if vis := eval[bool](t, tb, `(() => { const r = document.querySelector('#node-n2 .node-full').getBoundingClientRect(); return r.height > 0 && r.top < innerHeight && r.bottom > 0; })()`); !vis {
		t.Error("n2's details are not in view after the click")
	}
	// a click on a node's summary opens it: n3 is a tool call
	tb.do(t, chromedp.Click(chromedp.CSS(`#node-n3 > summary`)))
	if !eval[bool](t, tb, `document.getElementById('node-n3').open`) {
		t.Error("a click on n3's summary does not open it")
	}
	n3 := eval[string](t, tb, `document.getElementById('node-n3').innerText`)
	for _, want := range []string{"Tool read_file", "Arguments", `"path": "regions/eu.md"`, "Result"} {
		if !strings.Contains(n3, want) {
			t.Errorf("the tool node n3's details lack %q:\n%.1500s", want, n3)
		}
	}
	// a box of the graph links to its node in full
	tb.do(t, chromedp.Click(chromedp.CSS(`#g-n9`)))
	if href := eval[string](t, tb, `(document.querySelector('#info-n9 a.node-open') || {}).hash || ''`); href != "#node-n9" {
		t.Errorf("the box of n9 links to %q, want #node-n9", href)
	}
	tb.do(t, chromedp.Sleep(200*time.Millisecond))
	reqs, _, _ := tb.seen()
	for _, r := range reqs {
		if r != u && !strings.HasPrefix(r, u+"#") {
			t.Errorf("the report made a request: %s", r)
		}
	}
	tb.noErrors(t, "report")
}

// TestBrowser_ReportNodesHostile: the hostile project's prompts and tool
// traffic in a report's node details stay text: its task, which closes a
// </details>, a </summary> and a </pre> and opens a <details open>, reads
// as written inside n16's request, no element of its own appears, no
// script of its own runs, every node stays folded.
func TestBrowser_ReportNodesHostile(t *testing.T) {
	_, ids := served(t, web.Options{})
	tb, _ := openReport(t, ids["hostile"])
	if pwned := eval[string](t, tb, `String(window.__pwned)`); pwned != "undefined" {
		t.Errorf("a script of the content ran (window.__pwned = %s)", pwned)
	}
	if n := eval[int](t, tb, `document.scripts.length`); n != 1 {
		t.Errorf("%d script elements, want the report's own", n)
	}
	if n := eval[int](t, tb, `document.querySelectorAll('details.node-detail').length`); n == 0 {
		t.Fatal("the hostile report holds no node in full")
	}
	if n := eval[int](t, tb, `document.querySelectorAll('details.node-detail[open], pre details, summary details, img, iframe, [onerror], [onload]').length`); n != 0 {
		t.Errorf("%d elements open or made from the content", n)
	}
	tb.do(t, chromedp.Click(chromedp.CSS(`#node-n16 > summary`)))
	txt := eval[string](t, tb, `document.getElementById('node-n16').innerText`)
	if !strings.Contains(txt, `Compare <script>window.__pwned=10</script> regions`) || !strings.Contains(txt, `</details></summary></pre><details open>`) {
		t.Errorf("the hostile task does not read as text in n16's request:\n%.3000s", txt)
	}
	if pwned := eval[string](t, tb, `String(window.__pwned)`); pwned != "undefined" {
		t.Errorf("a script of the content ran after the click (window.__pwned = %s)", pwned)
	}
	tb.noErrors(t, "hostile report")
}

// TestReport_NodeBodiesCut: a report holds at most 16 KiB of one body
// and says how much it cut: the demo with a 210 KB regions/eu.md (read
// by n3, which the missed fan-out names) cuts n3's result and the later
// requests that carry it, each with the size cut and the command that
// shows it whole, and the whole report stays small.
func TestReport_NodeBodiesCut(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "demo")
	if _, err := examples.Write(examples.Demo(), src); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("EU revenue line, 4.2M in Q3, up 3% on Q2. ", 5000) // 42 × 5,000 = 210,000 bytes
	found := false
	if err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, filepath.Join("regions", "eu.md")) {
			found = true
			return os.WriteFile(p, []byte(big), 0o644)
		}
		return err
	}); err != nil || !found {
		t.Fatalf("no regions/eu.md in the demo (%v)", err)
	}
	path := filepath.Join(dir, "big.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := runtimetest.RecordFixture(ctx, db, src, filepath.Join(dir, "run"), "", time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC))
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	ro, err := store.OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	var buf bytes.Buffer
	if err := web.New(storesrc.New(ro), web.Options{}).WriteReport(ctx, &buf, g.ID); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	doc := parse(t, page)
	var n3 string
	walk(doc, func(n *html.Node) {
		if attr(n, "id") == "node-n3" {
			n3 = text(n)
		}
	})
	if n3 == "" {
		t.Fatal("the report does not hold n3 in full")
	}
	cut := regexp.MustCompile(`\[cut: ([0-9.]+ KiB) of ([0-9.]+ KiB) not in this report \(a report holds at most 16 KiB of one body\); inspect show ` + g.ID + ` n3 shows it whole\]`)
	m := cut.FindStringSubmatch(n3)
	if m == nil {
		t.Fatalf("n3's result is not cut with a note saying how much:\n%.600s", n3[max(0, len(n3)-600):])
	}
	// 210,000 bytes = 205.1 KiB; 210,000 − 16,384 = 193,616 = 189.1 KiB
	if m[2] != "205.1 KiB" || m[1] != "189.1 KiB" {
		t.Errorf("n3's note says %s of %s cut, want 189.1 KiB of 205.1 KiB (210,000 bytes, 16 KiB kept)", m[1], m[2])
	}
	if !strings.Contains(n3, "EU revenue line") {
		t.Error("n3's result keeps nothing of its head")
	}
	if c := strings.Count(page, "not in this report"); c < 3 {
		t.Errorf("%d bodies cut, want n3's result and the requests after it that carry it", c)
	}
	if len(page) > 1<<20 {
		t.Errorf("the report is %d bytes with 200 KB bodies: not bounded", len(page))
	}
	t.Logf("report %d bytes, %d bodies cut", len(page), strings.Count(page, "not in this report"))
}
