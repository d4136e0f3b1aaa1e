package jaeger

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// realJaeger is the Jaeger .ci/run starts (its query service and its
// OTLP/HTTP receiver), or the test skips.
func realJaeger(t *testing.T) (query, otlpURL string) {
	query, otlpURL = os.Getenv("INSPECT_JAEGER_QUERY"), os.Getenv("INSPECT_JAEGER_OTLP")
	if query == "" || otlpURL == "" {
		t.Skip("no Jaeger: .ci/run starts one and sets INSPECT_JAEGER_QUERY and INSPECT_JAEGER_OTLP")
	}
	return query, otlpURL
}

// randomTraces are n traces with ids of their own (Jaeger is shared by
// every test and every run of them), a minute apart from t0.
func randomTraces(t *testing.T, n int) []fakeTrace {
	var out []fakeTrace
	for i := range n {
		var id [16]byte
		if _, err := rand.Read(id[:]); err != nil {
			t.Fatal(err)
		}
		out = append(out, fakeTrace{id: hex.EncodeToString(id[:]), start: t0.Add(time.Duration(i) * time.Minute), agent: "main"})
	}
	return out
}

// sendTraces posts ts to Jaeger's OTLP/HTTP receiver under service and
// waits until Jaeger holds each whole.
func sendTraces(t *testing.T, query, otlpURL, service string, ts []fakeTrace) {
	t.Helper()
	for _, tr := range ts {
		var spans []map[string]any
		spans = append(spans, tr.spans()...)
		doc := map[string]any{"resourceSpans": []any{map[string]any{
			"resource":   map[string]any{"attributes": []any{map[string]any{"key": "service.name", "value": map[string]any{"stringValue": service}}}},
			"scopeSpans": []any{map[string]any{"scope": map[string]any{"name": "test"}, "spans": spans}}}}}
		b, _ := json.Marshal(doc)
		resp, err := http.Post(strings.TrimSuffix(otlpURL, "/")+"/v1/traces", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("jaeger's OTLP receiver: %s", resp.Status)
		}
	}
	c := &Client{Base: query}
	for _, tr := range ts {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			body, err := c.Trace(t.Context(), tr.id)
			if err == nil && bytes.Count(body, []byte(`"spanId"`)) == len(tr.spans()) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("jaeger does not hold trace %s whole after 30s (%v)", tr.id, err)
			}
		}
	}
}

// proxy is a real HTTP server on 127.0.0.1 in front of a real Jaeger's
// query service: it delays every answer, stalls every answer that holds
// one of some traces (a search's that is not full, or a fetch's), and keeps the ids of the
// traces fetched through it.
type proxy struct {
	*httptest.Server
	mu      sync.Mutex
	delay   time.Duration   // before every answer
	stall   map[string]bool // an answer holding one of these traces comes stallOf later
	stallOf time.Duration
	fetched []string
	check   func(*http.Request) bool // false: 401 (an auth proxy)
}

var traceIDs = regexp.MustCompile(`"traceId":\s*"([0-9a-f]{32})"`)

func newProxy(t *testing.T, target string) *proxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{stall: map[string]bool{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		delay, check := p.delay, p.check
		id, isFetch := strings.CutPrefix(r.URL.Path, "/api/v3/traces/")
		p.mu.Unlock()
		if check != nil && !check(r) {
			http.Error(w, `{"error":{"httpCode":401,"message":"unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		r.Header.Del("Authorization") // Jaeger itself takes none
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, r)
		full := false // a full search's answer, which the client drops to split the window
		if d, err := strconv.Atoi(r.URL.Query().Get("query.num_traces")); err == nil {
			ids := map[string]bool{}
			for _, m := range traceIDs.FindAllSubmatch(rec.Body.Bytes(), -1) {
				ids[string(m[1])] = true
			}
			full = len(ids) >= d
		}
		p.mu.Lock()
		for stalled := range p.stall {
			if !full && bytes.Contains(rec.Body.Bytes(), []byte(stalled)) {
				delay += p.stallOf
				break
			}
		}
		p.mu.Unlock()
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		if isFetch && rec.Code == http.StatusOK {
			p.mu.Lock()
			p.fetched = append(p.fetched, id)
			p.mu.Unlock()
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(p.Close)
	return p
}

// A slow Jaeger (every answer late, the answer holding one trace later
// than the timeout on each try): the import stops at that answer with a
// sentence saying so, the traces of the windows before it imported; the
// next import resumes and imports only the rest. A real Jaeger behind a
// real proxy; a search depth of 2, so the traces come a window or two at
// a time.
func TestImport_Slow(t *testing.T) {
	query, otlpURL := realJaeger(t)
	service := fmt.Sprintf("inspect-test-slow-%d", time.Now().UnixNano())
	ts := randomTraces(t, 6)
	sendTraces(t, query, otlpURL, service, ts)
	p := newProxy(t, query)
	p.delay = 50 * time.Millisecond
	p.stall[ts[3].id], p.stallOf = true, 3*time.Second

	db := openDB(t)
	im := &Importer{Client: &Client{Base: p.URL, Depth: 2, HTTP: &http.Client{Timeout: time.Second}, Retries: 1, Backoff: time.Millisecond},
		Store: db, Now: func() time.Time { return t0.Add(24 * time.Hour) }}
	var retried []string
	im.Client.OnRetry = func(what string, err error, wait time.Duration) { retried = append(retried, err.Error()) }
	runs := recorded(im)
	q := Query{Service: service, Since: t0.Add(-time.Hour)}
	start := time.Now()
	sum, err := im.Import(t.Context(), q)
	var re *RequestError
	if !errors.As(err, &re) || re.Timeout != time.Second || re.Tries != 2 {
		t.Fatalf("err = %v (%T), want a request error: no answer within 1s, 2 tries", err, err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "searching traces from 2026-05-01T") || !strings.HasSuffix(msg, ": no answer within 1s (tried 2 times)") {
		t.Errorf("err = %q, want the window searched and 'no answer within 1s (tried 2 times)'", msg)
	}
	if len(retried) != 1 || !strings.HasSuffix(retried[0], ": no answer within 1s") {
		t.Errorf("retries told: %q", retried)
	}
	before := sum.Imported
	if before == 0 || before > 3 || runCount(t, db) != before {
		t.Fatalf("imported %d (%d runs) before the stall, want those of the windows before the 4th trace's", before, runCount(t, db))
	}
	first := map[string]bool{}
	for _, r := range *runs {
		first[r.Trace] = true
	}
	*runs = nil
	if first[ts[3].id] {
		t.Errorf("the stalled trace was imported")
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the stalled import took %s: the timeout did not hold", d)
	}

	p.mu.Lock()
	p.stall = map[string]bool{}
	p.mu.Unlock()
	sum, err = im.Import(t.Context(), q)
	if err != nil || sum.Imported != 6-before || runCount(t, db) != 6 {
		t.Fatalf("resumed: imported %d (%d runs), %v; want the %d left", sum.Imported, runCount(t, db), err, 6-before)
	}
	for _, r := range *runs {
		if first[r.Trace] {
			t.Errorf("trace %s imported again", r.Trace)
		}
	}
	for _, tr := range ts {
		if id, _ := db.RunBySource(context.Background(), "otlp", tr.id); id == "" {
			t.Errorf("trace %s has no run", tr.id)
		}
	}
}
