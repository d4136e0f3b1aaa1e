package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/otel"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
)

// jaegerProxy is a real HTTP server on 127.0.0.1 in front of the real
// Jaeger's query service: an answer (a search's that is not full, or a
// fetch's) holding one of some traces comes late, or is replaced by a 503; it may require
// credentials (answering 401 without them, and passing none on); it
// keeps the ids of the traces listed or fetched through it.
type jaegerProxy struct {
	*httptest.Server
	mu     sync.Mutex
	stall  map[string]time.Duration // an answer holding the trace comes this late
	fail   map[string]bool          // an answer holding the trace is a 503
	check  func(*http.Request) bool // false: 401
	passed []string                 // the traces of the answers passed on
}

func newJaegerProxy(t *testing.T, query string, traces []string) *jaegerProxy {
	u, err := url.Parse(query)
	if err != nil {
		t.Fatal(err)
	}
	p := &jaegerProxy{stall: map[string]time.Duration{}, fail: map[string]bool{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		check := p.check
		p.mu.Unlock()
		if check != nil && !check(r) {
			http.Error(w, `{"error":{"httpCode":401,"message":"unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		r.Header.Del("Authorization")
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, r)
		var held []string
		for _, id := range traces {
			if bytes.Contains(rec.Body.Bytes(), []byte(id)) {
				held = append(held, id)
			}
		}
		if d, err := strconv.Atoi(r.URL.Query().Get("query.num_traces")); err == nil && len(held) >= d {
			held = nil // a full search's answer, which the client drops to split the window: passed on as it is
		}
		p.mu.Lock()
		var delay time.Duration
		fail := false
		for _, id := range held {
			delay, fail = max(delay, p.stall[id]), fail || p.fail[id]
		}
		if !fail {
			p.passed = append(p.passed, held...)
		}
		p.mu.Unlock()
		if fail {
			http.Error(w, `{"error":{"httpCode":503,"message":"storage unavailable"}}`, http.StatusServiceUnavailable)
			return
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
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
	db, err := f.Store(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// 20 minutes apart from 3 hours ago, so no two traces share a search
	// window (a scripted run's clock is virtual: its spans reach minutes
	// past its start); run ids of their own, as trace ids come from them
	// and Jaeger is shared
	for i, fx := range fixtures {
		var id [6]byte
		rand.Read(id[:])
		start := time.Now().Add(-3*time.Hour + time.Duration(i)*20*time.Minute)
		if _, err := runtimetest.RecordFixture(t.Context(), db, filepath.Join("..", "..", "fixtures", fx), t.TempDir(), hex.EncodeToString(id[:]), start); err != nil {
			t.Fatal(err)
		}
	}
	if code := run(t.Context(), f, []string{"export", "--all", "--format", "otlp", "--otlp-endpoint", otlpURL, "--db", f.DBPath}); code != ExitOK {
		t.Fatalf("export --otlp-endpoint: exit %d: %s", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "runs.otlp.jsonl")
	if code := run(t.Context(), f, []string{"export", "--all", "--format", "otlp", "-o", file, "--db", f.DBPath}); code != ExitOK {
		t.Fatalf("export -o: exit %d: %s", code, errOut)
	}
	waitWhole(t, query, file)
	db, err = f.Store(t.Context())
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
// stops at the stalled answer with a sentence (exit 3) saying what
// failed, that what was imported stays and the same command resumes, and
// which flags to change; the same command resumes and imports only the
// rest. One answering 503 mid-way: the same, after the retries. A search
// depth of 2, so the traces come a window or two at a time.
func TestImportFrom_Timeout(t *testing.T) {
	query, service, traces := jaegerRuns(t, "fanout-compact", "handoff-chain", "audit-fork-uneven", "audit-handoff-loop")
	p := newJaegerProxy(t, query, traces)
	p.stall[traces[2]] = 4 * time.Second
	g, gout, gerr := testFactory(t)
	args := []string{"import", "--from", "jaeger", p.URL, "--service", service, "--since", "4h", "--search-depth", "2", "--timeout", "1s", "--retries", "1", "--db", g.DBPath}
	start := time.Now()
	if code := run(t.Context(), g, args); code != ExitToolError {
		t.Fatalf("import through a stalling Jaeger: exit %d, want %d:\n%s", code, ExitToolError, gerr)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the stalled import took %s: --timeout did not hold", d)
	}
	before := runsIn(t, g)
	if before == 0 || before > 2 {
		t.Fatalf("%d runs after the stall, want those before the 3rd trace's window", before)
	}
	stopped := regexp.MustCompile(`(?m)^inspect: import from jaeger ` + regexp.QuoteMeta(p.URL) + ` stopped: searching traces from \S+ to \S+: no answer within 1s \(tried 2 times\); ` +
		fmt.Sprintf("the %d traces? imported before it stay, and the same command again resumes from there ", before) +
		regexp.QuoteMeta("(--timeout gives each request longer, --retries tries it more often)") + "$")
	retry := regexp.MustCompile(`(?m)^jaeger: searching traces from \S+ to \S+: no answer within 1s; retrying in 500ms$`)
	if !stopped.MatchString(gerr.String()) || !retry.MatchString(gerr.String()) {
		t.Errorf("stderr lacks the retry line or the sentence (%d imported):\n%s", before, gerr)
	}
	for _, bad := range goChain {
		if strings.Contains(gerr.String()+gout.String(), bad) {
			t.Errorf("the output shows %q:\n%s", bad, gerr)
		}
	}

	p.mu.Lock()
	p.stall = map[string]time.Duration{}
	p.mu.Unlock()
	gerr.Reset()
	if code := run(t.Context(), g, args); code != ExitOK {
		t.Fatalf("resumed import: exit %d:\n%s", code, gerr)
	}
	if want := fmt.Sprintf(" %d imported", 4-before); !strings.Contains(gerr.String(), want) || runsIn(t, g) != 4 {
		t.Errorf("resumed import (%d runs), want %q:\n%s", runsIn(t, g), want, gerr)
	}

	// errors mid-way
	p.mu.Lock()
	p.fail[traces[2]] = true
	p.mu.Unlock()
	h, _, herr := testFactory(t)
	hargs := []string{"import", "--from", "jaeger", p.URL, "--service", service, "--since", "4h", "--search-depth", "2", "--retries", "2", "--db", h.DBPath}
	if code := run(t.Context(), h, hargs); code != ExitToolError {
		t.Fatalf("import through a failing Jaeger: exit %d, want %d:\n%s", code, ExitToolError, herr)
	}
	before = runsIn(t, h)
	failed := regexp.MustCompile(`(?m)^inspect: import from jaeger ` + regexp.QuoteMeta(p.URL) + ` stopped: searching traces from \S+ to \S+: ` +
		regexp.QuoteMeta(`jaeger answered 503 Service Unavailable: {"error":{"httpCode":503,"message":"storage unavailable"}} (tried 3 times); `) +
		fmt.Sprintf("the %d traces? imported before it stay, and the same command again resumes from there ", before) +
		regexp.QuoteMeta("(--retries tries a failed request more often)") + "$")
	if !failed.MatchString(herr.String()) || strings.Count(herr.String(), "retrying in") != 2 || before == 0 || before > 2 {
		t.Errorf("stderr (%d runs imported):\n%s\nwant two retries and the sentence", before, herr)
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
	p := newJaegerProxy(t, query, traces)
	var outputs []*bytes.Buffer
	var dbs []string
	importWith := func(env map[string]string, want int) *bytes.Buffer {
		t.Helper()
		f, out, errOut := testFactoryEnv(t, env)
		outputs, dbs = append(outputs, out, errOut), append(dbs, f.DBPath)
		if code := run(t.Context(), f, []string{"import", "--from", "jaeger", p.URL, "--service", service, "--since", "4h", "--db", f.DBPath}); code != want {
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
