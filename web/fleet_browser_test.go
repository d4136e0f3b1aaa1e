package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/analysis/storesrc"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/otlp"
	"github.com/inspect-dev/inspect/otel"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
	"github.com/inspect-dev/inspect/store"
	"github.com/inspect-dev/inspect/web"
)

// fleetBase is the start of the fleet tests' first window: the server's
// clock is an hour later, so since=30m is [base+30m, base+1h) and its
// previous window [base, base+30m).
var fleetBase = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// hostileAgent is the name an untrusted imported trace gives its agent.
const hostileAgent = `<img src=x onerror=window.__pwned=1>`

// fleetDB records runs of fixtures whose findings are known (their
// want.txt) into a database file of its own, and one imported OTLP trace
// whose agent is named with markup: in the previous window an
// audit-handoff-loop run and a handoff-chain run (no findings); in the
// window two audit-handoff-loop runs, an audit-fork-uneven run, a
// handoff-chain run, and the trace (audit-handoff-loop exported, its
// agent intake renamed hostileAgent). It returns the path and the ids.
func fleetDB(t *testing.T) (string, map[string]string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "fleet.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ids := map[string]string{}
	for _, r := range []struct {
		name, fixture string
		at            time.Duration
	}{
		{"prev-loop", "audit-handoff-loop", 5 * time.Minute},
		{"prev-chain", "handoff-chain", 6 * time.Minute},
		{"loop1", "audit-handoff-loop", 35 * time.Minute},
		{"loop2", "audit-handoff-loop", 36 * time.Minute},
		{"uneven", "audit-fork-uneven", 37 * time.Minute},
		{"chain", "handoff-chain", 38 * time.Minute},
	} {
		g, err := runtimetest.RecordFixture(ctx, db, filepath.Join("..", "fixtures", r.fixture), filepath.Join(dir, "run", r.name), "", fleetBase.Add(r.at))
		if err != nil {
			t.Fatal(err)
		}
		ids[r.name] = g.ID
	}
	// the untrusted trace
	scratch, err := store.Open(ctx, filepath.Join(dir, "scratch.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer scratch.Close()
	g, err := runtimetest.RecordFixture(ctx, scratch, filepath.Join("..", "fixtures", "audit-handoff-loop"), filepath.Join(dir, "run", "hostile"), "", fleetBase.Add(39*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := otel.Export(ctx, scratch, g.ID, otel.NewFileExporter(&buf), otel.Options{Sync: true}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "hostile.otlp.jsonl")
	if err := os.WriteFile(file, bytes.ReplaceAll(buf.Bytes(), []byte("intake"), []byte(hostileAgent)), 0o644); err != nil {
		t.Fatal(err)
	}
	ss, err := otlp.Format{}.Read(ctx, file, importers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ids["hostile"], err = importers.Write(ctx, db, ss[0]); err != nil {
		t.Fatal(err)
	}
	return path, ids
}

// serveFleet serves the database at path read-only with the clock an
// hour after fleetBase.
func serveFleet(t *testing.T, path string) (*httptest.Server, *store.DB) {
	t.Helper()
	ro, err := store.OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	srv := httptest.NewServer(web.New(storesrc.New(ro), web.Options{Now: func() time.Time { return fleetBase.Add(time.Hour) }}))
	t.Cleanup(srv.Close)
	return srv, ro
}

// pageRow is a row of the fleet table as the browser reads it.
type pageRow struct {
	Rule, Agent, Source, Runs, Share, Change, Total, Median string
	Examples                                                []string // run ids and node links, as hrefs
}

const readRows = `[...document.querySelectorAll('#fleet tbody tr')].map(tr => ({
  Rule: tr.dataset.rule, Agent: tr.querySelector('.agent').textContent, Source: tr.dataset.source,
  Runs: tr.querySelector('.runs-n').textContent, Share: tr.querySelector('.share').textContent,
  Change: tr.querySelector('.change').textContent, Total: tr.querySelector('.total').textContent,
  Median: tr.querySelector('.median').textContent,
  Examples: [...tr.querySelectorAll('.examples a')].map(a => a.getAttribute('href'))}))`

// tokensOf is what the audit of run id alone prices rule's findings at in
// tokens (in + out): the fleet's totals are sums of these.
func tokensOf(t *testing.T, db *store.DB, id, rule string) int64 {
	t.Helper()
	r, err := analysis.New(storesrc.New(db), nil).Open(context.Background(), id, analysis.LoadBrief)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Audit(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, f := range rep.Findings {
		if f.Rule == rule {
			n += f.Price.TokensIn + f.Price.TokensOut
		}
	}
	if n == 0 {
		t.Fatalf("run %s's audit prices no %s finding in tokens", id, rule)
	}
	return n
}

// TestBrowser_Fleet: the fleet page of a real database in Chromium. Its
// rows are the fixtures' known findings (want.txt), counted per rule ×
// agent × source with shares and the change against the previous window,
// prices summed from each run's own audit, examples linking to the runs
// and their evidence nodes; the controls are the run filters of inspect
// fleet; the untrusted trace's agent name reads as text and runs nothing.
func TestBrowser_Fleet(t *testing.T) {
	path, ids := fleetDB(t)
	srv, db := serveFleet(t, path)
	tb := newTab(t)

	tb.do(t, chromedp.Navigate(srv.URL+"/fleet?since=30m"))
	if pwned := eval[string](t, tb, `String(window.__pwned)`); pwned != "undefined" {
		t.Errorf("a script of an untrusted run ran (window.__pwned = %s)", pwned)
	}
	if n := eval[int](t, tb, `document.querySelectorAll('img, [onerror], [onload]').length`); n != 0 {
		t.Errorf("%d elements made from an untrusted run's text", n)
	}
	if cur := eval[string](t, tb, `(document.querySelector('nav a[aria-current=page]') || {}).textContent`); cur != "Fleet" {
		t.Errorf("the navigation marks %q as the page, want Fleet", cur)
	}
	if got := eval[string](t, tb, `document.querySelector('#fleet-runs').textContent + '/' + document.querySelector('#fleet-prev').textContent`); got != "5/2" {
		t.Errorf("runs audited / previous window: %s, want 5/2", got)
	}
	rows := eval[[]pageRow](t, tb, readRows)
	loop := tokensOf(t, db, ids["loop1"], "handoff.loop") + tokensOf(t, db, ids["loop2"], "handoff.loop")
	median := tokensOf(t, db, ids["loop1"], "handoff.loop") // both runs are the same fixture: the same price
	want := []pageRow{
		{Rule: "handoff.loop", Agent: "intake", Source: "inspect", Runs: "2 · 2 findings", Share: "40.0%", Change: "-10.0 pts",
			Examples: []string{"/runs/" + ids["loop2"], "/runs/" + ids["loop2"] + "/nodes/n5", "/runs/" + ids["loop2"] + "/nodes/n9", "/runs/" + ids["loop2"] + "/nodes/n11",
				"/runs/" + ids["loop1"], "/runs/" + ids["loop1"] + "/nodes/n5", "/runs/" + ids["loop1"] + "/nodes/n9", "/runs/" + ids["loop1"] + "/nodes/n11"}},
		{Rule: "fork.uneven", Agent: "analyst", Source: "inspect", Runs: "1 · 1 finding", Share: "20.0%", Change: "+20.0 pts",
			Examples: []string{"/runs/" + ids["uneven"], "/runs/" + ids["uneven"] + "/nodes/n3", "/runs/" + ids["uneven"] + "/nodes/n12", "/runs/" + ids["uneven"] + "/nodes/n16"}},
		{Rule: "handoff.loop", Agent: hostileAgent, Source: "otlp", Runs: "1 · 1 finding", Share: "20.0%", Change: "+20.0 pts",
			Examples: []string{"/runs/" + ids["hostile"], "/runs/" + ids["hostile"] + "/nodes/n5", "/runs/" + ids["hostile"] + "/nodes/n9", "/runs/" + ids["hostile"] + "/nodes/n11"}},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%+v", len(rows), len(want), rows)
	}
	for i, w := range want {
		g := rows[i]
		if g.Rule != w.Rule || g.Agent != w.Agent || g.Source != w.Source || g.Runs != w.Runs || g.Share != w.Share || g.Change != w.Change ||
			strings.Join(g.Examples, " ") != strings.Join(w.Examples, " ") {
			t.Errorf("row %d:\n%+v\nwant\n%+v", i, g, w)
		}
	}
	if !strings.Contains(rows[0].Total, fmt.Sprintf("%s tokens", commas(loop))) || !strings.Contains(rows[0].Median, fmt.Sprintf("%s tokens", commas(median))) {
		t.Errorf("handoff.loop's prices: total %q, median %q; want %d and %d tokens", rows[0].Total, rows[0].Median, loop, median)
	}
	// the JSON link is inspect fleet --format json of the same query
	href := eval[string](t, tb, `document.querySelector('#fleet-json').href`)
	resp, err := http.Get(href)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	doc := string(raw)
	var j struct {
		Runs  int
		Rules []struct{ Rule, Agent string }
	}
	if err := json.Unmarshal([]byte(doc), &j); err != nil || j.Runs != 5 || len(j.Rules) != 3 || j.Rules[2].Agent != hostileAgent {
		t.Errorf("the JSON link (%v): %.600s", err, doc)
	}
	if cmd := eval[string](t, tb, `document.querySelector('#fleet-cmd').textContent`); cmd != "inspect fleet --since 30m" {
		t.Errorf("the command shown is %q", cmd)
	}
	if opts := eval[[]string](t, tb, `[...document.querySelectorAll('select[name=agent] option')].map(o => o.textContent)`); !contains(opts, hostileAgent) {
		t.Errorf("the agent control lacks the imported agent, as text: %q", opts)
	}
	tb.noErrors(t, "fleet page")

	// the controls: only otlp runs; the previous window holds none, so no change
	tb.reset()
	tb.do(t, chromedp.SetValue(chromedp.CSS(`select[name=source]`), "otlp"), chromedp.Click(chromedp.CSS(`#fleet-filters button`)))
	if !tb.waitFor(`new URLSearchParams(location.search).get('source') === 'otlp' && !!document.querySelector('#fleet-runs')`) {
		t.Fatalf("the form did not filter: %s", eval[string](t, tb, `location.href`))
	}
	rows = eval[[]pageRow](t, tb, readRows)
	if got := eval[string](t, tb, `document.querySelector('#fleet-runs').textContent + '/' + document.querySelector('#fleet-prev').textContent`); got != "1/0" ||
		len(rows) != 1 || rows[0].Agent != hostileAgent || rows[0].Share != "100.0%" || rows[0].Change != "–" {
		t.Errorf("source otlp: %s runs/previous, rows %+v", got, rows)
	}
	// an agent with no mistakes over every run (no since: no previous window)
	tb.do(t, chromedp.Navigate(srv.URL+"/fleet?agent=analyst"))
	rows = eval[[]pageRow](t, tb, readRows)
	if got := eval[string](t, tb, `document.querySelector('#fleet-runs').textContent`); got != "1" || len(rows) != 1 || rows[0].Rule != "fork.uneven" || rows[0].Change != "–" {
		t.Errorf("agent analyst, all runs: %s runs, rows %+v", got, rows)
	}
	if n := eval[int](t, tb, `document.querySelectorAll('#fleet-prev').length`); n != 0 {
		t.Error("a previous window is shown without since")
	}
	// an example node opens that node of that run
	tb.do(t, chromedp.Navigate(srv.URL+"/fleet?since=30m"), chromedp.Click(chromedp.CSS(`#fleet tbody tr .ex-node`)))
	if !tb.waitFor(`location.pathname === '/runs/` + ids["loop2"] + `/nodes/n5'`) {
		t.Errorf("the example node link led to %s", eval[string](t, tb, `location.href`))
	}
	tb.noErrors(t, "fleet controls")
}

// The fleet page answers a bad filter with a 400 saying what to give,
// and serves the JSON of inspect fleet --format json.
func TestFleetPage_Params(t *testing.T) {
	path, ids := fleetDB(t)
	srv, _ := serveFleet(t, path)
	get := func(q string) (int, string) {
		resp, err := http.Get(srv.URL + "/fleet?" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for q, want := range map[string]string{
		"since=yesterday":   "since:",
		"status=done":       "unknown status",
		"limit=-1":          "limit",
		"since=1h&until=2h": "since must be before until",
		"tag==x":            "tag",
		"examples=many":     "examples",
	} {
		if code, body := get(q); code != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("%s: %d, want 400 saying %q:\n%.400s", q, code, want, body)
		}
	}
	code, body := get("since=30m&format=json&limit=1")
	var j struct {
		Runs         int `json:"runs"`
		PreviousRuns int `json:"previous_runs"`
		Rules        []struct {
			Rule     string `json:"rule"`
			Examples []struct {
				Run string `json:"run"`
			} `json:"examples"`
		} `json:"rules"`
	}
	if err := json.Unmarshal([]byte(body), &j); code != 200 || err != nil {
		t.Fatalf("JSON: %d %v\n%s", code, err, body)
	}
	// --limit 1 keeps the newest run: the imported trace
	if j.Runs != 1 || len(j.Rules) != 1 || j.Rules[0].Examples[0].Run != ids["hostile"] {
		t.Errorf("limit=1: %s", body)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// commas writes n with thousands separators, as the pages do.
func commas(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
