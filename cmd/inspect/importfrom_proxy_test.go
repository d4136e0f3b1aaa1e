package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"iter"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/otel"
)

// jaegerProxy is a real HTTP server on 127.0.0.1 in front of the real
// Jaeger's query service: it stalls or fails the fetches of some traces,
// may require credentials (answering 401 without them, and passing none
// on), and keeps the ids of the traces fetched through it.
type jaegerProxy struct {
	*httptest.Server
	mu      sync.Mutex
	stall   map[string]time.Duration // a trace's fetches answer this late
	fail    map[string]bool          // a trace's fetches answer 503
	check   func(*http.Request) bool // false: 401
	fetched []string
}

func newJaegerProxy(t *testing.T, query string) *jaegerProxy {
	u, err := url.Parse(query)
	if err != nil {
		t.Fatal(err)
	}
	p := &jaegerProxy{stall: map[string]time.Duration{}, fail: map[string]bool{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		id, isFetch := strings.CutPrefix(r.URL.Path, "/api/v3/traces/")
		delay, fail, check := p.stall[id], isFetch && p.fail[id], p.check
		p.mu.Unlock()
		if check != nil && !check(r) {
			http.Error(w, `{"error":{"httpCode":401,"message":"unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		if fail {
			http.Error(w, `{"error":{"httpCode":503,"message":"storage unavailable"}}`, http.StatusServiceUnavailable)
			return
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		r.Header.Del("Authorization")
		if isFetch {
			p.mu.Lock()
			p.fetched = append(p.fetched, id)
			p.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// jaegerRuns records fixture runs, sends them to the real Jaeger under a
// service of the test's own and waits until Jaeger holds them whole: the
// Jaeger's query address, the service, and the traces in the order an
// import fetches them (oldest first).
func jaegerRuns(t *testing.T, fixtures ...string) (query, service string, traces []string) {
	t.Helper()
	otlpURL, query := os.Getenv("INSPECT_JAEGER_OTLP"), os.Getenv("INSPECT_JAEGER_QUERY")
	if otlpURL == "" || query == "" {
		t.Skip("no Jaeger to send to: .ci/run builds one and sets INSPECT_JAEGER_OTLP and INSPECT_JAEGER_QUERY")
	}
	service = testService(t)
	f, _, errOut := testFactoryEnv(t, map[string]string{"OTEL_SERVICE_NAME": service})
	recordFixtures(t, f, fixtures...)
	if code := run(t.Context(), f, []string{"export", "--all", "--format", "otlp", "--otlp-endpoint", otlpURL, "--db", f.DBPath}); code != ExitOK {
		t.Fatalf("export --otlp-endpoint: exit %d: %s", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "runs.otlp.jsonl")
	if code := run(t.Context(), f, []string{"export", "--all", "--format", "otlp", "-o", file, "--db", f.DBPath}); code != ExitOK {
		t.Fatalf("export -o: exit %d: %s", code, errOut)
	}
	waitWhole(t, query, file)
	db, err := f.Store(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	runs, err := db.Runs(t.Context(), 0) // newest first
	if err != nil {
		t.Fatal(err)
	}
	for i := len(runs) - 1; i >= 0; i-- {
		traces = append(traces, otel.TraceID(runs[i].ID).String())
	}
	return query, service, traces
}

func runsIn(t *testing.T, f *Factory) int {
	t.Helper()
	db, err := f.Store(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	runs, err := db.Runs(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(runs)
}

// The words of a Go error chain that an import's failure must not show.
var goChain = []string{"context deadline exceeded", "Client.Timeout", `Get "http`, "dial tcp", "awaiting headers"}

// A Jaeger (the real one, behind a real proxy) that stops answering
// mid-way: --timeout bounds each request, --retries its tries; the import
// stops at the stalled trace with a sentence (exit 3) saying what failed,
// that what was imported stays and the same command resumes, and which
// flags to change; the same command resumes, fetching none of the traces
// imported before. One answering 503 mid-way: the same, after the
// retries.
func TestImportFrom_Timeout(t *testing.T) {
	query, service, traces := jaegerRuns(t, "fanout-compact", "handoff-chain", "audit-fork-uneven", "audit-handoff-loop")
	p := newJaegerProxy(t, query)
	p.stall[traces[2]] = 4 * time.Second
	g, gout, gerr := testFactory(t)
	args := []string{"import", "--from", "jaeger", p.URL, "--service", service, "--since", "1h", "--timeout", "1s", "--retries", "1", "--db", g.DBPath}
	start := time.Now()
	if code := run(t.Context(), g, args); code != ExitToolError {
		t.Fatalf("import through a stalling Jaeger: exit %d, want %d:\n%s", code, ExitToolError, gerr)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the stalled import took %s: --timeout did not hold", d)
	}
	for _, want := range []string{
		"jaeger: fetching trace " + traces[2] + ": no answer within 1s; retrying in 500ms\n",
		"inspect: import from jaeger " + p.URL + " stopped: fetching trace " + traces[2] + ": no answer within 1s (tried 2 times); " +
			"the 2 traces imported before it stay, and the same command again resumes from there (--timeout gives each request longer, --retries tries it more often)\n",
	} {
		if !strings.Contains(gerr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, gerr)
		}
	}
	for _, bad := range goChain {
		if strings.Contains(gerr.String()+gout.String(), bad) {
			t.Errorf("the output shows %q:\n%s", bad, gerr)
		}
	}
	if n := runsIn(t, g); n != 2 {
		t.Fatalf("%d runs after the stall, want the 2 before it", n)
	}

	p.mu.Lock()
	p.stall, p.fetched = map[string]time.Duration{}, nil
	p.mu.Unlock()
	gerr.Reset()
	if code := run(t.Context(), g, args); code != ExitOK {
		t.Fatalf("resumed import: exit %d:\n%s", code, gerr)
	}
	if !strings.Contains(gerr.String(), " 2 imported") || runsIn(t, g) != 4 {
		t.Errorf("resumed import (%d runs):\n%s", runsIn(t, g), gerr)
	}
	for _, id := range p.fetched {
		if slices.Contains(traces[:2], id) {
			t.Errorf("trace %s fetched again after it was imported", id)
		}
	}

	// errors mid-way
	p.mu.Lock()
	p.fail[traces[1]] = true
	p.mu.Unlock()
	h, _, herr := testFactory(t)
	hargs := []string{"import", "--from", "jaeger", p.URL, "--service", service, "--since", "1h", "--retries", "2", "--db", h.DBPath}
	if code := run(t.Context(), h, hargs); code != ExitToolError {
		t.Fatalf("import through a failing Jaeger: exit %d, want %d:\n%s", code, ExitToolError, herr)
	}
	want := "inspect: import from jaeger " + p.URL + " stopped: fetching trace " + traces[1] +
		`: jaeger answered 503 Service Unavailable: {"error":{"httpCode":503,"message":"storage unavailable"}} (tried 3 times); ` +
		"the 1 trace imported before it stay, and the same command again resumes from there (--retries tries a failed request more often)\n"
	if !strings.Contains(herr.String(), want) || strings.Count(herr.String(), "retrying in") != 2 {
		t.Errorf("stderr:\n%s\nwant two retries and %q", herr, want)
	}
	if n := runsIn(t, h); n != 1 {
		t.Errorf("%d runs after the failure, want 1", n)
	}
	p.mu.Lock()
	p.fail = map[string]bool{}
	p.mu.Unlock()
	if code := run(t.Context(), h, hargs); code != ExitOK || runsIn(t, h) != 4 {
		t.Errorf("resumed: exit %d, %d runs", code, runsIn(t, h))
	}
	for _, bad := range [][]string{{"--timeout", "0s"}, {"--retries", "-1"}} {
		if code := run(t.Context(), h, append(hargs, bad...)); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", bad, code, ExitUsage)
		}
	}
}

// A Jaeger behind a proxy that wants a bearer token, or basic auth: the
// credentials come from the environment and reach the proxy; without
// them the 401 is a usage error naming the variables. No credential — the
// token, the password, the basic header — is in the database file, its
// -wal or -shm, or anything the commands print.
func TestImportFrom_AuthProxy(t *testing.T) {
	query, service, traces := jaegerRuns(t, "fanout-compact", "handoff-chain")
	secret := func() string {
		var b [12]byte
		rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}
	token, user, password := "tok-"+secret(), "team", "pw-"+secret()
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	p := newJaegerProxy(t, query)
	var outputs []*bytes.Buffer
	var dbs []string
	importWith := func(env map[string]string, want int) *bytes.Buffer {
		t.Helper()
		f, out, errOut := testFactoryEnv(t, env)
		outputs, dbs = append(outputs, out, errOut), append(dbs, f.DBPath)
		if code := run(t.Context(), f, []string{"import", "--from", "jaeger", p.URL, "--service", service, "--since", "1h", "--db", f.DBPath}); code != want {
			t.Fatalf("env %v: exit %d, want %d:\n%s", slices.Sorted(mapKeys(env)), code, want, errOut)
		}
		if want == ExitOK && runsIn(t, f) != len(traces) {
			t.Errorf("env %v: %d runs, want %d", slices.Sorted(mapKeys(env)), runsIn(t, f), len(traces))
		}
		scanSecrets(t, []string{token, password, basic}, f.DBPath)
		return errOut
	}

	p.check = func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+token }
	importWith(map[string]string{"INSPECT_JAEGER_TOKEN": token}, ExitOK)
	refused := importWith(nil, ExitUsage)
	if !strings.Contains(refused.String(), "jaeger answered 401 Unauthorized") || !strings.Contains(refused.String(), "INSPECT_JAEGER_TOKEN") {
		t.Errorf("without the token:\n%s", refused)
	}
	importWith(map[string]string{"INSPECT_JAEGER_TOKEN": "tok-wrong"}, ExitUsage)

	p.mu.Lock()
	p.check = func(r *http.Request) bool {
		u, pw, ok := r.BasicAuth()
		return ok && u == user && pw == password
	}
	p.mu.Unlock()
	importWith(map[string]string{"INSPECT_JAEGER_USER": user, "INSPECT_JAEGER_PASSWORD": password}, ExitOK)
	importWith(map[string]string{"INSPECT_JAEGER_USER": user, "INSPECT_JAEGER_PASSWORD": "wrong"}, ExitUsage)

	for _, o := range outputs {
		for _, s := range []string{token, password, basic} {
			if strings.Contains(o.String(), s) {
				t.Errorf("a credential was printed:\n%s", o)
			}
		}
	}
	if len(dbs) != 5 {
		t.Fatalf("%d imports", len(dbs))
	}
}

// scanSecrets fails when any of secrets is in the database at path, its
// -wal or its -shm.
func scanSecrets(t *testing.T, secrets []string, path string) {
	t.Helper()
	found := 0
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil {
			continue
		}
		found++
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds a credential (%.6s…)", filepath.Base(path+suffix), s)
			}
		}
	}
	if found == 0 {
		t.Errorf("no database file at %s to scan", path)
	}
}

func mapKeys(m map[string]string) iter.Seq[string] { return maps.Keys(m) }
