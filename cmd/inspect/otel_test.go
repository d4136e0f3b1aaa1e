package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/otlp"
	"github.com/inspect-dev/inspect/otel"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
)

// importFile imports an OTLP file into f's database and returns the run id.
func importFile(t *testing.T, f *Factory, path string) string {
	t.Helper()
	ctx := context.Background()
	ss, err := otlp.Format{}.Read(ctx, path, importers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 {
		t.Fatalf("%s: %d traces, want 1", path, len(ss))
	}
	db, err := f.Store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := importers.Write(ctx, db, ss[0])
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// commandText is the stdout of inspect ARGS --db (exit 0 or 1), with the
// run id (args[1], but for import) written RUN, for comparing two runs of
// one shape.
func commandText(t *testing.T, f *Factory, buf *bytes.Buffer, args ...string) string {
	t.Helper()
	buf.Reset()
	if code := run(context.Background(), f, append(args, "--db", f.DBPath)); code != ExitOK && code != ExitFindings {
		t.Fatalf("inspect %v: exit %d; stderr:\n%s", args, code, f.IO.ErrOut)
	}
	s := buf.String()
	if len(args) > 1 && args[0] != "import" { // args[1] is the run
		s = strings.ReplaceAll(s, args[1], "RUN")
	}
	return s
}

// TestExport_Command: inspect export writes the run as OTLP/JSON lines that
// import back to the same audit.
func TestExport_Command(t *testing.T) {
	f, out, errOut := testFactory(t)
	g := recordFixture(t, f, "fanout-compact")
	file := filepath.Join(t.TempDir(), "run.otlp.jsonl")
	if code := run(t.Context(), f, []string{"export", g.Run.ID, "--format", "otlp", "-o", file, "--db", f.DBPath}); code != ExitOK {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	if want := "as trace " + otel.TraceID(g.Run.ID).String(); !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr %q lacks %q", errOut, want)
	}
	id := importFile(t, f, file)
	if a, b := commandText(t, f, out, "audit", g.Run.ID), commandText(t, f, out, "audit", id); a != b {
		t.Errorf("audit of the imported export differs:\n%s\nwant:\n%s", b, a)
	}
	if code := run(t.Context(), f, []string{"export", g.Run.ID, "--format", "jaeger", "--db", f.DBPath}); code != ExitUsage {
		t.Errorf("export --format jaeger: exit %d, want %d", code, ExitUsage)
	}
}

// TestJaeger sends fixture runs through a real Jaeger on loopback: inspect
// run --otlp-endpoint streams the spans, the trace is fetched back from
// Jaeger's query API (/api/v3/traces/<id>, OTLP JSON) and imported, and
// the imported run's graph and audit equal the recorded run's. .ci/run
// builds and starts Jaeger (.ci/jaeger) and sets INSPECT_JAEGER_OTLP and
// INSPECT_JAEGER_QUERY.
func TestJaeger(t *testing.T) {
	otlpURL, query := os.Getenv("INSPECT_JAEGER_OTLP"), os.Getenv("INSPECT_JAEGER_QUERY")
	if otlpURL == "" || query == "" {
		t.Skip("no Jaeger to send to: .ci/run builds one and sets INSPECT_JAEGER_OTLP and INSPECT_JAEGER_QUERY")
	}
	for _, fx := range []string{"fanout-compact", "handoff-chain", "failing-branch", "audit-fork-uneven", "audit-handoff-loop"} {
		t.Run(fx, func(t *testing.T) {
			f, out, errOut := testFactory(t)
			dir := filepath.Join(t.TempDir(), fx)
			if err := runtimetest.CopyDir(filepath.Join("..", "..", "fixtures", fx), dir); err != nil {
				t.Fatal(err)
			}
			code := run(t.Context(), f, []string{"run", dir, "--script", filepath.Join(dir, "script.yaml"), "--otlp-endpoint", otlpURL, "--db", f.DBPath})
			if code != ExitOK && fx != "failing-branch" {
				t.Fatalf("run: exit %d: %s", code, errOut)
			}
			if !strings.Contains(errOut.String(), "spans: trace ") {
				t.Fatalf("run did not say it sent the spans:\n%s", errOut)
			}
			db, err := f.Store(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			id, err := db.ResolveRun(t.Context(), "latest")
			if err != nil {
				t.Fatal(err)
			}
			orig, err := graph.Load(t.Context(), db, id)
			if err != nil {
				t.Fatal(err)
			}
			// Jaeger stores what its batch processor hands it: wait until it
			// holds every span the run's export has (before, the wait ended
			// once the steps had come, and a trace fetched before its root
			// span read as a foreign app's: failing-branch's fix differed)
			whole := filepath.Join(t.TempDir(), "export.otlp.jsonl")
			if code := run(t.Context(), f, []string{"export", id, "--format", "otlp", "-o", whole, "--db", f.DBPath}); code != ExitOK {
				t.Fatalf("export: exit %d: %s", code, errOut)
			}
			waitWhole(t, query, whole)
			file := filepath.Join(t.TempDir(), "jaeger.json")
			url := strings.TrimSuffix(query, "/") + "/api/v3/traces/" + otel.TraceID(id).String()
			if err := os.WriteFile(file, fetch(t, url), 0o644); err != nil {
				t.Fatal(err)
			}
			back := importFile(t, f, file)
			if db, err = f.Store(t.Context()); err != nil { // the export closed the one above
				t.Fatal(err)
			}
			g, err := graph.Load(t.Context(), db, back)
			if err != nil {
				t.Fatal(err)
			}
			if len(g.Nodes) != len(orig.Nodes) {
				t.Errorf("imported %d nodes, recorded %d", len(g.Nodes), len(orig.Nodes))
			}
			if a, b := shapeText(commandText(t, f, out, "graph", id)), shapeText(commandText(t, f, out, "graph", back)); a != b {
				t.Errorf("graph through Jaeger differs:\n%s\nwant:\n%s", b, a)
			}
			if a, b := commandText(t, f, out, "audit", id), commandText(t, f, out, "audit", back); a != b {
				t.Errorf("audit through Jaeger differs:\n%s\nwant:\n%s", b, a)
			}
		})
	}
}

// shapeText is a Mermaid graph without its prompt-cache predictions: a
// scripted run's are made with the scripted model's token counts, which an
// imported run (whose options do not travel in OTLP) does not know of.
func shapeText(g string) string {
	var keep []string
	for _, line := range strings.Split(g, "\n") {
		if strings.HasPrefix(line, "%% cache ") {
			continue
		}
		keep = append(keep, reuse.ReplaceAllString(line, ""))
	}
	return strings.Join(keep, "\n")
}

var reuse = regexp.MustCompile(` · reuse \d+%`)

func fetch(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return []byte("{}")
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	return b
}

// countSteps counts the nodes a conversation's steps make (a fork's join is
// not a step of its own).
func countSteps(c *importers.Conversation) int {
	n := 0
	for _, s := range c.Steps {
		n++
		if s.Fork != nil {
			for _, b := range s.Fork.Branches {
				if b.Conv != nil {
					n += countSteps(b.Conv)
				}
			}
		}
	}
	return n
}

func countJoins(g *graph.Run) int {
	n := 0
	for _, x := range g.Nodes {
		if x.Join != nil {
			n++
		}
	}
	return n
}

// TestImport_RealFrameworks: inspect import of the traces LangGraph and the
// AI SDK exported gives runs whose graph, audit, show and ask --dry-run
// read as those of inspect's own runs (expectations written by hand from
// importers/otlp/testdata/gen).
func TestImport_RealFrameworks(t *testing.T) {
	f, out, _ := testFactory(t)
	dir := filepath.Join("..", "..", "importers", "otlp", "testdata")
	for _, tt := range []struct {
		file    string
		node    string // a model call to show and ask
		imports string
		graph   []string
		ask     []string
	}{
		{"langgraph-supervisor.otlp.jsonl", "n8", "otlp @arizeai/openinference-instrumentation-langchain 4.1.1",
			[]string{"handoff supervisor to research_expert", "tool web_search FAANG headcount 2024", "handoff math_expert to supervisor"},
			[]string{"You are a team supervisor", "Successfully transferred back to supervisor", "transfer_to_math_expert"}},
		{"aisdk.otlp.pb", "n5", "otlp ai 6.0.326",
			[]string{"calls getWeather x2", "fork (none context) researcher-1, researcher-2", "tool lookup London"},
			[]string{"You plan trips.", `"tool_call_id":"call_8_1"`, `"name":"research"`}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			if imp := commandText(t, f, out, "import", filepath.Join(dir, tt.file)); !strings.Contains(imp, tt.imports) {
				t.Errorf("import said %q, want it to name %q", imp, tt.imports)
			}
			db, err := f.Store(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			id, err := db.ResolveRun(t.Context(), "latest")
			if err != nil {
				t.Fatal(err)
			}
			g := commandText(t, f, out, "graph", id)
			for _, w := range tt.graph {
				if !strings.Contains(g, w) {
					t.Errorf("graph lacks %q:\n%s", w, g)
				}
			}
			if a := commandText(t, f, out, "audit", id); !strings.Contains(a, "grades:") || !strings.Contains(a, "checks:") {
				t.Errorf("audit:\n%s", a)
			}
			if s := commandText(t, f, out, "show", id, tt.node); !strings.Contains(s, "reconstructed") {
				t.Errorf("show %s does not say the request is reconstructed:\n%s", tt.node, s)
			}
			ask := commandText(t, f, out, "ask", id, tt.node, "Why this call?", "--dry-run")
			for _, w := range append(tt.ask, "Why this call?") {
				if !strings.Contains(ask, w) {
					t.Errorf("ask --dry-run lacks %q:\n%s", w, ask)
				}
			}
		})
	}
}

// TestRun_OTLPEndpoint: inspect run streams the run's spans to the
// endpoint OTEL_EXPORTER_OTLP_ENDPOINT names (here our own receiver on
// loopback); what arrives imports as the same graph and audit. An endpoint
// that is down is a warning, not a failed run; one that is not a URL is a
// usage error.
func TestRun_OTLPEndpoint(t *testing.T) {
	var mu sync.Mutex
	trace := otlp.NewTrace("")
	posts := 0
	srv := httptest.NewServer(&otel.Handler{Consume: func(ctx context.Context, spans []*otel.Span) (int, string, error) {
		mu.Lock()
		defer mu.Unlock()
		posts++
		for _, s := range spans {
			trace.ID = s.TraceID
			trace.Add(s)
		}
		return 0, "", nil
	}})
	defer srv.Close()
	f, out, errOut := testFactoryEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
	dir := filepath.Join(t.TempDir(), "fanout-compact")
	if err := runtimetest.CopyDir(filepath.Join("..", "..", "fixtures", "fanout-compact"), dir); err != nil {
		t.Fatal(err)
	}
	if code := run(t.Context(), f, []string{"run", dir, "--script", filepath.Join(dir, "script.yaml"), "--db", f.DBPath}); code != ExitOK {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut.String(), "spans: trace ") || posts == 0 {
		t.Fatalf("%d posts; stderr:\n%s", posts, errOut)
	}
	db, err := f.Store(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	id, _ := db.ResolveRun(t.Context(), "latest")
	back, err := importers.Write(t.Context(), db, otlp.Build(trace, importers.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := commandText(t, f, out, "audit", id), commandText(t, f, out, "audit", back); a != b {
		t.Errorf("audit of the streamed spans differs:\n%s\nwant:\n%s", b, a)
	}
	if a, b := shapeText(commandText(t, f, out, "graph", id)), shapeText(commandText(t, f, out, "graph", back)); a != b {
		t.Errorf("graph of the streamed spans differs:\n%s\nwant:\n%s", b, a)
	}

	// a backend that is down: the run is recorded all the same
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	errOut.Reset()
	if code := run(t.Context(), f, []string{"run", dir, "--script", filepath.Join(dir, "script.yaml"), "--otlp-endpoint", down.URL, "--db", f.DBPath}); code != ExitOK {
		t.Fatalf("run to a closed endpoint: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut.String(), "warning: send spans to "+down.URL) {
		t.Errorf("no warning about the endpoint:\n%s", errOut)
	}
	errOut.Reset()
	if code := run(t.Context(), f, []string{"run", dir, "--script", filepath.Join(dir, "script.yaml"), "--otlp-endpoint", "localhost:4318", "--db", f.DBPath}); code != ExitUsage {
		t.Errorf("--otlp-endpoint localhost:4318: exit %d, want %d: %s", code, ExitUsage, errOut)
	}
}
