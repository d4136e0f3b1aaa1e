package jaeger

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// fakeTrace is one trace the fake Jaeger holds: an agent span (the root,
// unless open) with one chat span under it.
type fakeTrace struct {
	id    string
	start time.Time
	open  bool // the root span has not come yet
	agent string
	pad   int // bytes of padding in an attribute (for the size cap)
}

func (t fakeTrace) spans() []map[string]any {
	root := fmt.Sprintf("%016x", 1)
	attr := func(k, v string) map[string]any {
		return map[string]any{"key": k, "value": map[string]any{"stringValue": v}}
	}
	ns := func(d time.Duration) string { return fmt.Sprint(t.start.Add(d).UnixNano()) }
	chat := map[string]any{"traceId": t.id, "spanId": fmt.Sprintf("%016x", 2), "parentSpanId": root, "name": "chat gpt-4o",
		"startTimeUnixNano": ns(time.Millisecond), "endTimeUnixNano": ns(2 * time.Second),
		"attributes": []any{attr("gen_ai.operation.name", "chat"), attr("gen_ai.request.model", "gpt-4o"),
			attr("gen_ai.agent.name", t.agent), attr("pad", strings.Repeat("x", t.pad)),
			map[string]any{"key": "gen_ai.usage.input_tokens", "value": map[string]any{"intValue": "100"}}}}
	out := []map[string]any{chat}
	if !t.open {
		out = append(out, map[string]any{"traceId": t.id, "spanId": root, "name": "invoke_agent " + t.agent,
			"startTimeUnixNano": ns(0), "endTimeUnixNano": ns(3 * time.Second),
			"attributes": []any{attr("gen_ai.operation.name", "invoke_agent"), attr("gen_ai.agent.name", t.agent)}})
	}
	return out
}

func otlpJSON(ts []fakeTrace) []byte {
	var spans []map[string]any
	for _, t := range ts {
		spans = append(spans, t.spans()...)
	}
	doc := map[string]any{"result": map[string]any{"resourceSpans": []any{map[string]any{
		"resource":   map[string]any{"attributes": []any{map[string]any{"key": "service.name", "value": map[string]any{"stringValue": "svc"}}}},
		"scopeSpans": []any{map[string]any{"scope": map[string]any{"name": "test"}, "spans": spans}}}}}}
	b, _ := json.Marshal(doc)
	return b
}

// fake is a Jaeger query service holding traces, answering as Jaeger's
// API v3 does, with faults on request.
type fake struct {
	mu       sync.Mutex
	traces   map[string]fakeTrace
	searches []string // the windows searched, start_time_min..max
	fetched  []string // the trace ids fetched
	auth     string   // the Authorization a request must carry ("" = none)
	failFrom int      // requests from this one (1-based) answer 503, failN times in a row ...
	failN    int      // ... (-1: for ever)
	requests int
}

func newFake(ts ...fakeTrace) *fake {
	f := &fake{traces: map[string]fakeTrace{}}
	for _, t := range ts {
		f.traces[t.id] = t
	}
	return f
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.auth != "" && r.Header.Get("Authorization") != f.auth {
		http.Error(w, `{"error":{"httpCode":401,"message":"unauthorized"}}`, http.StatusUnauthorized)
		return
	}
	f.requests++
	if f.failFrom > 0 && f.requests >= f.failFrom && (f.failN < 0 || f.requests < f.failFrom+f.failN) {
		http.Error(w, `{"error":{"httpCode":503,"message":"storage unavailable"}}`, http.StatusServiceUnavailable)
		return
	}
	if id, ok := strings.CutPrefix(r.URL.Path, "/api/v3/traces/"); ok {
		t, ok := f.traces[id]
		if !ok {
			http.Error(w, `{"error":{"httpCode":404,"message":"trace not found"}}`, http.StatusNotFound)
			return
		}
		f.fetched = append(f.fetched, id)
		w.Write(otlpJSON([]fakeTrace{t}))
		return
	}
	if r.URL.Path != "/api/v3/traces" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	min, err1 := time.Parse(time.RFC3339Nano, q.Get("query.start_time_min"))
	max, err2 := time.Parse(time.RFC3339Nano, q.Get("query.start_time_max"))
	if err1 != nil || err2 != nil || q.Get("query.service_name") != "svc" {
		http.Error(w, `{"error":{"httpCode":400,"message":"bad query"}}`, http.StatusBadRequest)
		return
	}
	f.searches = append(f.searches, q.Get("query.start_time_min")+".."+q.Get("query.start_time_max"))
	depth := 0
	fmt.Sscan(q.Get("query.num_traces"), &depth)
	var hits []fakeTrace
	for _, t := range f.traces {
		if t.start.Before(min) || t.start.After(max) {
			continue
		}
		if a := q.Get("query.attributes[gen_ai.agent.name]"); a != "" && a != t.agent {
			continue
		}
		hits = append(hits, t)
	}
	// Jaeger returns the newest depth traces of the window
	sort.Slice(hits, func(i, j int) bool { return hits[i].start.After(hits[j].start) })
	if len(hits) > depth {
		hits = hits[:depth]
	}
	if len(hits) == 0 {
		http.Error(w, `{"error":{"httpCode":404,"message":"No traces found"}}`, http.StatusNotFound)
		return
	}
	w.Write(otlpJSON(hits))
}

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func traces(n int, agent string) []fakeTrace {
	var out []fakeTrace
	for i := range n {
		out = append(out, fakeTrace{id: fmt.Sprintf("%032x", i+1), start: t0.Add(time.Duration(i) * time.Minute), agent: agent})
	}
	return out
}

func openDB(t *testing.T) *store.DB {
	db, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func importer(srv *httptest.Server, db *store.DB, depth int) *Importer {
	return &Importer{Client: &Client{Base: srv.URL, Depth: depth, Backoff: time.Millisecond,
		Sleep: func(context.Context, time.Duration) error { return nil }},
		Store: db, Now: func() time.Time { return t0.Add(24 * time.Hour) }}
}

// recorded has im tell each run it records into the list returned,
// emptied by the caller before each import.
func recorded(im *Importer) *[]Run {
	var runs []Run
	im.OnRun = func(r Run) { runs = append(runs, r) }
	return &runs
}

func query() Query { return Query{Service: "svc", Since: t0.Add(-time.Hour)} }

func runCount(t *testing.T, db *store.DB) int {
	runs, err := db.Runs(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(runs)
}

// A window holding more traces than one search returns is split until
// every trace is found; a second import fetches nothing again.
func TestImport_SplitsFullWindows(t *testing.T) {
	f := newFake(traces(25, "main")...)
	srv := httptest.NewServer(f)
	defer srv.Close()
	db := openDB(t)
	im := importer(srv, db, 4)
	runs := recorded(im)
	sum, err := im.Import(t.Context(), query())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Imported != 25 || len(*runs) != 25 || runCount(t, db) != 25 {
		t.Fatalf("imported %d (%d runs), want 25; searches %v", sum.Imported, runCount(t, db), f.searches)
	}
	if len(f.searches) < 8 {
		t.Errorf("%d searches for 25 traces at depth 4: the window was not split", len(f.searches))
	}
	if len(f.fetched) != 0 {
		t.Errorf("%d traces fetched one by one: the searches' answers hold them whole", len(f.fetched))
	}
	for _, r := range *runs {
		if r.Status != record.StatusOK || r.Nodes == 0 {
			t.Errorf("run %s: %s, %d nodes", r.RunID, r.Status, r.Nodes)
		}
	}
	f.fetched = nil
	sum, err = importer(srv, db, 4).Import(t.Context(), query())
	if err != nil || sum.Imported != 0 || len(f.fetched) != 0 {
		t.Fatalf("second import: %d imported, fetched %v, %v", sum.Imported, f.fetched, err)
	}
	// a trace that reaches Jaeger late (started within Settle of the
	// last search's end) is the only one imported next time
	late := fakeTrace{id: fmt.Sprintf("%032x", 999), start: t0.Add(24*time.Hour - 10*time.Second), agent: "main"}
	f.traces[late.id] = late
	*runs = nil
	sum, err = im.Import(t.Context(), query())
	if err != nil || sum.Imported != 1 || len(*runs) != 1 || (*runs)[0].Trace != late.id || runCount(t, db) != 26 {
		t.Fatalf("third import: %d imported, %d runs, %v", sum.Imported, runCount(t, db), err)
	}
}

// A window whose one microsecond holds as many traces as a search returns
// is an error, not a silent cut.
func TestImport_FullMomentIsAnError(t *testing.T) {
	var ts []fakeTrace
	for i := range 5 {
		ts = append(ts, fakeTrace{id: fmt.Sprintf("%032x", i+1), start: t0, agent: "main"})
	}
	srv := httptest.NewServer(newFake(ts...))
	defer srv.Close()
	_, err := importer(srv, openDB(t), 3).Import(t.Context(), query())
	if err == nil || !strings.Contains(err.Error(), "raise the search depth") {
		t.Fatalf("err = %v, want the search depth named", err)
	}
}

// Errors mid-way: a passing one is retried; a lasting one stops the
// import with what was recorded kept, and the next import resumes without
// fetching those again.
func TestImport_ErrorsMidway(t *testing.T) {
	f := newFake(traces(10, "main")...)
	f.failFrom, f.failN = 3, 2 // the 3rd and 4th request fail, the retry of the 4th passes
	srv := httptest.NewServer(f)
	defer srv.Close()
	db := openDB(t)
	im := importer(srv, db, 3)
	var retries []string
	im.Client.OnRetry = func(what string, err error, wait time.Duration) { retries = append(retries, err.Error()) }
	sum, err := im.Import(t.Context(), query())
	if err != nil || sum.Imported != 10 {
		t.Fatalf("imported %d, %v; want 10 after retries", sum.Imported, err)
	}
	if len(retries) != 2 || !strings.Contains(retries[0], "503") {
		t.Errorf("retries = %q", retries)
	}

	f2 := newFake(traces(10, "main")...)
	f2.failFrom, f2.failN = 17, -1 // from the 17th request on, for ever (some windows read by then)
	srv2 := httptest.NewServer(f2)
	defer srv2.Close()
	db2 := openDB(t)
	im2 := importer(srv2, db2, 3)
	im2.Client.Retries = 2
	runs := recorded(im2)
	sum, err = im2.Import(t.Context(), query())
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("err = %v, want the 503", err)
	}
	before := sum.Imported
	if before == 0 || before >= 10 || runCount(t, db2) != before {
		t.Fatalf("imported %d (%d runs) before the failure, want some of the 10", before, runCount(t, db2))
	}
	first := map[string]bool{}
	for _, r := range *runs {
		first[r.Trace] = true
	}
	if len(first) != before {
		t.Errorf("%d runs told, %d imported", len(first), before)
	}
	*runs = nil
	f2.mu.Lock()
	f2.failFrom = 0
	f2.mu.Unlock()
	sum, err = im2.Import(t.Context(), query())
	if err != nil || sum.Imported != 10-before || runCount(t, db2) != 10 {
		t.Fatalf("resumed: imported %d (%d runs), %v; want the %d left", sum.Imported, runCount(t, db2), err, 10-before)
	}
	for _, r := range *runs {
		if first[r.Trace] {
			t.Errorf("trace %s imported again after it was imported", r.Trace)
		}
	}
}

// Credentials go in the Authorization header; without them Jaeger's 401
// is the error, and no credential is in any error text.
func TestImport_Auth(t *testing.T) {
	f := newFake(traces(2, "main")...)
	f.auth = "Bearer s3cret-token"
	srv := httptest.NewServer(f)
	defer srv.Close()
	im := importer(srv, openDB(t), 100)
	if _, err := im.Import(t.Context(), query()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("without the token: %v, want a 401", err)
	}
	im.Client.Auth = func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret-token") }
	sum, err := im.Import(t.Context(), query())
	if err != nil || sum.Imported != 2 {
		t.Fatalf("with the token: %d imported, %v", sum.Imported, err)
	}
}

// A trace over the size cap is skipped with its id, the others imported.
func TestImport_SizeCap(t *testing.T) {
	ts := traces(3, "main")
	ts[1].pad = 1 << 20
	srv := httptest.NewServer(newFake(ts...))
	defer srv.Close()
	db := openDB(t)
	im := importer(srv, db, 100)
	im.Client.MaxBytes = 512 << 10
	sum, err := im.Import(t.Context(), query())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Imported != 2 || len(sum.TooLarge) != 1 || sum.TooLarge[0] != ts[1].id {
		t.Fatalf("imported %d, too large %v; want 2 and %s", sum.Imported, sum.TooLarge, ts[1].id)
	}
}

// A trace whose root span has not come is recorded running; the next
// import fetches it again and completes it once the root has come.
func TestImport_RunningTrace(t *testing.T) {
	ts := traces(2, "main")
	ts[1].open = true
	f := newFake(ts...)
	srv := httptest.NewServer(f)
	defer srv.Close()
	db := openDB(t)
	sum, err := importer(srv, db, 100).Import(t.Context(), query())
	if err != nil || sum.Imported != 2 || sum.Running != 1 {
		t.Fatalf("imported %d, running %d, %v", sum.Imported, sum.Running, err)
	}
	id, _ := db.RunBySource(t.Context(), "otlp", ts[1].id)
	run, err := db.LoadRun(t.Context(), id)
	if err != nil || run.Status != record.StatusRunning || !run.Ended.IsZero() {
		t.Fatalf("open trace's run: %+v, %v; want running, no end", run, err)
	}
	// still open: fetched again, still running
	f.fetched = nil
	sum, err = importer(srv, db, 100).Import(t.Context(), query())
	if err != nil || len(f.fetched) != 1 || f.fetched[0] != ts[1].id || sum.Completed != 0 {
		t.Fatalf("second import fetched %v, completed %d, %v", f.fetched, sum.Completed, err)
	}
	f.mu.Lock()
	tr := f.traces[ts[1].id]
	tr.open = false
	f.traces[ts[1].id] = tr
	f.mu.Unlock()
	sum, err = importer(srv, db, 100).Import(t.Context(), query())
	if err != nil || sum.Completed != 1 {
		t.Fatalf("third import: completed %d, %v", sum.Completed, err)
	}
	run, err = db.LoadRun(t.Context(), id)
	if err != nil || run.Status != record.StatusOK || run.Ended.IsZero() {
		t.Fatalf("completed run: %s ended %v, %v", run.Status, run.Ended, err)
	}
	if runCount(t, db) != 2 {
		t.Errorf("%d runs, want 2 (the same trace updates its run)", runCount(t, db))
	}
	f.fetched = nil
	if _, err := importer(srv, db, 100).Import(t.Context(), query()); err != nil || len(f.fetched) != 0 {
		t.Fatalf("fourth import fetched %v, %v; want nothing", f.fetched, err)
	}
}

// --attr and --limit: only the matching traces, at most Limit, the rest
// by the next import.
func TestImport_AttrAndLimit(t *testing.T) {
	ts := append(traces(6, "main"), fakeTrace{id: fmt.Sprintf("%032x", 100), start: t0.Add(30 * time.Second), agent: "other"})
	srv := httptest.NewServer(newFake(ts...))
	defer srv.Close()
	db := openDB(t)
	q := query()
	q.Attrs = map[string]string{"gen_ai.agent.name": "main"}
	q.Limit = 4
	sum, err := importer(srv, db, 100).Import(t.Context(), q)
	if err != nil || sum.Imported != 4 {
		t.Fatalf("imported %d, %v; want 4", sum.Imported, err)
	}
	sum, err = importer(srv, db, 100).Import(t.Context(), q)
	if err != nil || sum.Imported != 2 || runCount(t, db) != 6 {
		t.Fatalf("then %d (%d runs), %v; want the 2 left of main's 6", sum.Imported, runCount(t, db), err)
	}
	if id, _ := db.RunBySource(t.Context(), "otlp", ts[6].id); id != "" {
		t.Errorf("agent other's trace imported under --attr gen_ai.agent.name=main")
	}
}

// A Jaeger that does not answer is retried, then a clear error.
func TestImport_Unreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	im := importer(srv, openDB(t), 100)
	im.Client.Retries = 2
	n := 0
	im.Client.OnRetry = func(string, error, time.Duration) { n++ }
	_, err := im.Import(t.Context(), query())
	if err == nil || n != 2 || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("err %v after %d retries", err, n)
	}
}
