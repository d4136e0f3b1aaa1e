package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/otlp"
	"github.com/inspect-dev/inspect/otel"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
)

// TestJaegerImport sends fixture runs through a real Jaeger on loopback
// (inspect run --otlp-endpoint), then imports them back with inspect
// import --from jaeger into another database: one run per trace, each
// with the graph and the audit of the recorded run; a second import
// imports nothing again. .ci/run starts Jaeger and sets
// INSPECT_JAEGER_OTLP and INSPECT_JAEGER_QUERY.
func TestJaegerImport(t *testing.T) {
	otlpURL, query := os.Getenv("INSPECT_JAEGER_OTLP"), os.Getenv("INSPECT_JAEGER_QUERY")
	if otlpURL == "" || query == "" {
		t.Skip("no Jaeger to send to: .ci/run builds one and sets INSPECT_JAEGER_OTLP and INSPECT_JAEGER_QUERY")
	}
	since := time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)
	service := testService(t) // a search for "inspect" finds other tests' runs too
	f, out, errOut := testFactoryEnv(t, map[string]string{"OTEL_SERVICE_NAME": service})
	var ids []string
	for _, fx := range []string{"fanout-compact", "handoff-chain", "audit-fork-uneven"} {
		dir := filepath.Join(t.TempDir(), fx)
		if err := runtimetest.CopyDir(filepath.Join("..", "..", "fixtures", fx), dir); err != nil {
			t.Fatal(err)
		}
		if code := run(t.Context(), f, []string{"run", dir, "--script", filepath.Join(dir, "script.yaml"), "--otlp-endpoint", otlpURL, "--db", f.DBPath}); code != ExitOK {
			t.Fatalf("run %s: exit %d: %s", fx, code, errOut)
		}
		db, err := f.Store(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		id, err := db.ResolveRun(t.Context(), "latest")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// Wait until Jaeger holds every span of each (its batch processor).
	db, err := f.Store(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		orig, err := graph.Load(t.Context(), db, id)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "trace.json")
		url := strings.TrimSuffix(query, "/") + "/api/v3/traces/" + otel.TraceID(id).String()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			os.WriteFile(file, fetch(t, url), 0o644)
			if ss, err := (otlp.Format{}).Read(t.Context(), file, importers.Options{}); err == nil && countSteps(ss[0].Trunk) >= len(orig.Nodes)-countJoins(orig) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Jaeger did not hold trace %s whole in 30s", id)
			}
		}
	}

	g, gout, gerr := testFactory(t)
	args := []string{"import", "--from", "jaeger", query, "--service", service, "--since", since, "--db", g.DBPath}
	if code := run(t.Context(), g, args); code != ExitOK {
		t.Fatalf("import --from jaeger: exit %d:\n%s\n%s", code, gout, gerr)
	}
	gdb, err := g.Store(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	backs := map[string]string{}
	for _, id := range ids {
		back, err := gdb.RunBySource(t.Context(), "otlp", otel.TraceID(id).String())
		if err != nil || back == "" {
			t.Fatalf("trace of run %s not imported (%v):\n%s\n%s", id, err, gout, gerr)
		}
		backs[id] = back
	}
	for _, id := range ids {
		back := backs[id]
		if a, b := shapeText(commandText(t, f, out, "graph", id)), shapeText(commandText(t, g, gout, "graph", back)); a != b {
			t.Errorf("graph through Jaeger differs:\n%s\nwant:\n%s", b, a)
		}
		if a, b := commandText(t, f, out, "audit", id), commandText(t, g, gout, "audit", back); a != b {
			t.Errorf("audit through Jaeger differs:\n%s\nwant:\n%s", b, a)
		}
	}
	// the fleet view of the runs through Jaeger is the fleet view of the
	// runs recorded (the source aside)
	rows := func(doc fleetJSON) []string {
		var out []string
		for _, r := range doc.Rules {
			out = append(out, fmt.Sprintf("%s %s runs=%d findings=%d %dms %d tokens", r.Rule, r.Agent, r.Runs, r.Findings, r.Total.ElapsedMS, r.Total.Tokens))
		}
		sort.Strings(out)
		return out
	}
	a, _ := fleetOf(t, f, out)
	b, _ := fleetOf(t, g, gout, "--source", "otlp")
	if a.Runs != len(ids) || b.Runs != len(ids) || len(a.Rules) == 0 || !slices.Equal(rows(a), rows(b)) {
		t.Errorf("fleet through Jaeger (%d runs):\n%s\nwant (%d runs):\n%s", b.Runs, strings.Join(rows(b), "\n"), a.Runs, strings.Join(rows(a), "\n"))
	}
	gerr.Reset()
	if code := run(t.Context(), g, args); code != ExitOK {
		t.Fatalf("second import: exit %d:\n%s", code, gerr)
	}
	if !strings.Contains(gerr.String(), " 0 imported") {
		t.Errorf("second import imported again:\n%s", gerr)
	}
}

// The credentials come from the environment, reach Jaeger, and are never
// printed; a refused one is a usage error (a refused key) naming the
// answer and where credentials come from.
func TestImportFrom_Auth(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-s3cret" {
			http.Error(w, `{"error":{"httpCode":401,"message":"unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		http.Error(w, `{"error":{"httpCode":404,"message":"No traces found"}}`, http.StatusNotFound)
	}))
	defer srv.Close()
	args := []string{"import", "--from", "jaeger", srv.URL, "--service", "svc", "--since", "1h"}
	f, out, errOut := testFactoryEnv(t, map[string]string{"INSPECT_JAEGER_TOKEN": "tok-s3cret"})
	if code := run(t.Context(), f, append(args, "--db", f.DBPath)); code != ExitOK {
		t.Fatalf("with the token: exit %d:\n%s", code, errOut)
	}
	if !strings.Contains(errOut.String(), "0 traces found") {
		t.Errorf("summary:\n%s", errOut)
	}
	g, gout, gerr := testFactoryEnv(t, map[string]string{"INSPECT_JAEGER_TOKEN": "tok-wrong"})
	if code := run(t.Context(), g, append(args, "--db", g.DBPath)); code != ExitUsage {
		t.Fatalf("with a wrong token: exit %d, want %d:\n%s", code, ExitUsage, gerr)
	}
	if !strings.Contains(gerr.String(), "401") || !strings.Contains(gerr.String(), "INSPECT_JAEGER_TOKEN") {
		t.Errorf("the refusal is not said:\n%s", gerr)
	}
	for _, s := range []string{out.String(), errOut.String(), gout.String(), gerr.String()} {
		if strings.Contains(s, "tok-") {
			t.Errorf("a token was printed:\n%s", s)
		}
	}
	h, _, herr := testFactory(t)
	if code := run(t.Context(), h, []string{"import", "--from", "jaeger", "http://u:pw@127.0.0.1:1", "--service", "svc", "--db", h.DBPath}); code != ExitUsage || strings.Contains(herr.String(), "pw") {
		t.Errorf("credentials in the address: exit %d:\n%s", code, herr)
	}
}

// testService is a service name of the test's own, so a search of Jaeger
// finds only the traces it sent (other tests send theirs to the same
// Jaeger, some with times in the future: a scripted run's clock is
// virtual).
func testService(t *testing.T) string {
	return fmt.Sprintf("inspect-%s-%d", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), time.Now().UnixNano())
}

// waitWhole waits until Jaeger's query service holds each trace of file
// (an inspect export) with as many spans as the file has.
func waitWhole(t *testing.T, query, file string) {
	t.Helper()
	want := map[string]int{}
	traces, _, err := otlp.ReadTraces(t.Context(), bytes.NewReader(mustRead(t, file)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range traces {
		want[tr.ID] = tr.Len()
	}
	for id, n := range want {
		url := strings.TrimSuffix(query, "/") + "/api/v3/traces/" + id
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			got, _, err := otlp.ReadTraces(t.Context(), bytes.NewReader(fetch(t, url)))
			if err == nil && len(got) == 1 && got[0].Len() >= n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Jaeger did not hold trace %s whole (%d spans) in 60s", id, n)
			}
		}
	}
}

// TestJaegerExportMany: runs of several stacks (ours, Claude Code
// sessions, a LangGraph trace) sent to a real Jaeger with inspect export
// --all --otlp-endpoint, then inspect import --from jaeger into a fresh
// database: each run comes back as the run of its trace, with the same
// graph and audit, and inspect fleet --format json of both databases is
// equal but for the run ids and the sources (every run through Jaeger is
// otlp).
func TestJaegerExportMany(t *testing.T) {
	otlpURL, query := os.Getenv("INSPECT_JAEGER_OTLP"), os.Getenv("INSPECT_JAEGER_QUERY")
	if otlpURL == "" || query == "" {
		t.Skip("no Jaeger to send to: .ci/run builds one and sets INSPECT_JAEGER_OTLP and INSPECT_JAEGER_QUERY")
	}
	service := testService(t)
	f, out, errOut := testFactoryEnv(t, map[string]string{"OTEL_SERVICE_NAME": service})
	ids := manyRuns(t, f)
	if code := run(t.Context(), f, []string{"export", "--all", "--format", "otlp", "--otlp-endpoint", otlpURL, "--db", f.DBPath}); code != ExitOK {
		t.Fatalf("export --otlp-endpoint: exit %d: %s", code, errOut)
	}
	if want := fmt.Sprintf("sent %d runs as %d traces (service %s) to %s/v1/traces", len(ids), len(ids), service, otlpURL); !strings.Contains(errOut.String(), want) {
		t.Errorf("export said %q, want %q", errOut, want)
	}
	file := filepath.Join(t.TempDir(), "runs.otlp.jsonl")
	if code := run(t.Context(), f, []string{"export", "--all", "--format", "otlp", "-o", file, "--db", f.DBPath}); code != ExitOK {
		t.Fatalf("export -o: exit %d: %s", code, errOut)
	}
	waitWhole(t, query, file)

	g, gout, gerr := testFactory(t)
	// the sessions and the LangGraph trace keep their own (past) times
	args := []string{"import", "--from", "jaeger", query, "--service", service, "--since", "2020-01-01", "--db", g.DBPath}
	if code := run(t.Context(), g, args); code != ExitOK {
		t.Fatalf("import --from jaeger: exit %d:\n%s\n%s", code, gout, gerr)
	}
	if want := fmt.Sprintf(" %d imported", len(ids)); !strings.Contains(gerr.String(), want) {
		t.Errorf("import said:\n%s\nwant %q", gerr, want)
	}
	sameRunsBack(t, f, out, g, gout, ids)
}
