package analysis_test

import (
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/analysis/storesrc"
	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/config"
	"github.com/inspect-dev/inspect/diff"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/otlp"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime/examples"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
	"github.com/inspect-dev/inspect/stack"
	"github.com/inspect-dev/inspect/store"
	"github.com/inspect-dev/inspect/web"
)

// runs is the database every test reads: the demo, a fixture whose
// agents hand off and back, and an imported LangGraph trace, recorded
// once per test binary into a SQLite file on disk.
var runs struct {
	once sync.Once
	dir  string
	path string
	ids  map[string]string
	err  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if runs.dir != "" {
		os.RemoveAll(runs.dir)
	}
	os.Exit(code)
}

func record_(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "analysis-test-")
	if err != nil {
		return err
	}
	runs.dir, runs.path, runs.ids = dir, filepath.Join(dir, "runs.db"), map[string]string{}
	db, err := store.Open(ctx, runs.path)
	if err != nil {
		return err
	}
	defer db.Close()
	demo := filepath.Join(dir, "src", "demo")
	if _, err := examples.Write(examples.Demo(), demo); err != nil {
		return err
	}
	t0 := time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)
	for i, p := range []struct{ name, src string }{
		{"demo", demo},
		{"handoff", filepath.Join("..", "fixtures", "cache-handoff-back")},
	} {
		g, err := runtimetest.RecordFixture(ctx, db, p.src, filepath.Join(dir, "run", p.name), "", t0.Add(time.Duration(i)*time.Minute))
		if err != nil {
			return err
		}
		runs.ids[p.name] = g.ID
	}
	ss, err := otlp.Format{}.Read(ctx, filepath.Join("..", "importers", "otlp", "testdata", "langgraph-supervisor.otlp.jsonl"), importers.Options{})
	if err != nil {
		return err
	}
	runs.ids["langgraph"], err = importers.Write(ctx, db, ss[0])
	return err
}

// source opens the test database read-only as an analysis.Source.
func source(t *testing.T) (*storesrc.Source, map[string]string) {
	t.Helper()
	runs.once.Do(func() { runs.err = record_(context.Background()) })
	if runs.err != nil {
		t.Fatal(runs.err)
	}
	db, err := store.OpenReadOnly(context.Background(), runs.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return storesrc.New(db), runs.ids
}

// teamPolicy is a policy file that sets what reaches the cache analysis:
// a lifetime other than the default, and prices.
const teamPolicy = `cache-lifetime: 1h
currency: EUR
prices:
  gpt-4.1-mini: {input: 0.40, cached_input: 0.10, output: 1.60}
`

func parsePolicy(t *testing.T, yaml string) *analysis.Policy {
	t.Helper()
	c, err := config.Parse([]byte(yaml), ".inspect.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := analysis.PolicyOf(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseRef(t *testing.T) {
	for in, want := range map[string]analysis.Ref{
		"latest":              {Run: "latest"},
		"7f3a":                {Run: "7f3a"},
		"base.db":             {DB: "base.db", Run: "latest"},
		"ci/base.db:7f3a":     {DB: "ci/base.db", Run: "7f3a"},
		"a.db.d/b.db:latest":  {DB: "a.db.d/b.db", Run: "latest"},
		"odd.db:name.db:beef": {DB: "odd.db:name.db", Run: "beef"},
	} {
		if got := analysis.ParseRef(in); got != want {
			t.Errorf("ParseRef(%q) = %+v, want %+v", in, got, want)
		}
	}
}

// A run reference reads the default database, or the file it names; an
// Analyzer of one database refuses a file, and an unknown run is a
// ResolveError naming the database, which wraps ErrNotFound.
func TestOpen_References(t *testing.T) {
	ctx := context.Background()
	src, ids := source(t)
	var opened []string
	an := analysis.NewFiles(func(_ context.Context, path string) (analysis.Source, error) {
		opened = append(opened, path)
		return src, nil
	}, "default.db", nil)
	r, err := an.Open(ctx, ids["demo"][:6], analysis.LoadGraph)
	if err != nil || r.Graph.ID != ids["demo"] || r.Ref != ids["demo"][:6] {
		t.Fatalf("Open(prefix) = %v, %v", r, err)
	}
	if r, err := an.Open(ctx, "other.db:latest", analysis.LoadGraph); err != nil || r.Graph.ID != ids["langgraph"] {
		t.Fatalf("Open(other.db:latest) = %v, %v; want the newest run", r, err)
	}
	if strings.Join(opened, " ") != "default.db other.db" {
		t.Errorf("opened %q, want default.db then other.db", opened)
	}
	_, err = an.Open(ctx, "zzzz", analysis.LoadGraph)
	var re *analysis.ResolveError
	if !errors.As(err, &re) || re.Path != "default.db" || !errors.Is(err, analysis.ErrNotFound) || !strings.Contains(err.Error(), "zzzz") {
		t.Errorf("an unknown run: %v (%T)", err, err)
	}

	one := analysis.New(src, nil)
	var fe *analysis.FileRefError
	if _, err := one.Open(ctx, "../secret.db:latest", analysis.LoadGraph); !errors.As(err, &fe) {
		t.Errorf("one database given a file: %v, want a FileRefError", err)
	}
	if r, err := one.Open(ctx, "latest", analysis.LoadGraph); err != nil || r.Graph.ID != ids["langgraph"] {
		t.Errorf("latest: %v, %v", r, err)
	}
}

// TestPolicy_OneSetOfCacheOptions: the team's cache lifetime and prices
// reach every analysis of a run alike. Before the analysis layer each
// front end wired them itself and they differed: inspect audit and diff
// ran their audit's cache analysis with briefCache (the lifetime, no
// prices), inspect demo's audit with none of the policy (the default 5m
// lifetime), inspect show and the web pages with the lifetime and prices
// (webPolicy, show's own copy), inspect cache with its flags'. Now each
// reads Policy.CacheOptions.
func TestPolicy_OneSetOfCacheOptions(t *testing.T) {
	ctx := context.Background()
	src, ids := source(t)
	p := parsePolicy(t, teamPolicy)
	if p.Lifetime != time.Hour || p.Prices == nil || p.Name != ".inspect.yaml" {
		t.Fatalf("PolicyOf = %+v", p)
	}
	an := analysis.New(src, p)
	id := ids["handoff"]
	reports := map[string]func() (*cache.Report, error){
		"cache (inspect cache, web)": func() (*cache.Report, error) {
			r, err := an.Open(ctx, id, analysis.LoadCache)
			if err != nil {
				return nil, err
			}
			return r.Cache(ctx)
		},
		"brief (graph labels)": func() (*cache.Report, error) {
			r, err := an.Open(ctx, id, analysis.LoadBrief)
			if err != nil {
				return nil, err
			}
			return r.BriefCache(ctx)
		},
		"audit, diff": func() (*cache.Report, error) {
			r, err := an.Open(ctx, id, analysis.LoadBrief)
			if err != nil {
				return nil, err
			}
			return analysis.AuditConfig(r).Cache()
		},
		"the audit of a run opened for its graph alone": func() (*cache.Report, error) {
			r, err := an.Open(ctx, id, analysis.LoadGraph)
			if err != nil {
				return nil, err
			}
			return analysis.AuditConfig(r).Cache()
		},
		"node (inspect show)": func() (*cache.Report, error) {
			v, err := an.Node(ctx, id, firstLLM(t, an, id), analysis.NodeOptions{Cache: true})
			if err != nil {
				return nil, err
			}
			return v.Cache.Report, v.Cache.Err
		},
	}
	for name, get := range reports {
		rep, err := get()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if rep.Lifetime != time.Hour || rep.MinPrefix != cache.DefaultMinPrefix || rep.Currency != "EUR" {
			t.Errorf("%s: lifetime %s, min prefix %d, currency %q; want the policy's 1h, %d, EUR", name, rep.Lifetime, rep.MinPrefix, rep.Currency, cache.DefaultMinPrefix)
		}
	}

	// the same policy's prices reach both sides of a diff, and its name
	// each side's audit
	base, err := an.Open(ctx, ids["demo"], analysis.LoadBrief)
	if err != nil {
		t.Fatal(err)
	}
	nw, err := an.Open(ctx, id, analysis.LoadBrief)
	if err != nil {
		t.Fatal(err)
	}
	d, err := analysis.Diff(ctx, &diff.Config{NoMermaid: true}, base, nw)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*analysis.Run{base, nw} {
		rep, err := r.Audit(ctx, nil)
		if err != nil || rep.Money == nil || rep.Money.Currency != "EUR" || rep.Policy != ".inspect.yaml" {
			t.Errorf("run %s's audit under the policy: money %+v, policy %q, %v", r.Graph.ID, rep.Money, rep.Policy, err)
		}
	}
	if d.Base.Run != ids["demo"] || d.New.Run != id || d.Base.Ref != ids["demo"] {
		t.Errorf("diff sides %+v → %+v", d.Base, d.New)
	}

	// and the web pages: a node page says the lifetime its analysis used
	srv := httptest.NewServer(web.New(src, web.Options{Policy: p}))
	defer srv.Close()
	page := get(t, srv.URL+"/runs/"+id+"/nodes/n"+itoa(firstLLM(t, an, id)))
	if !strings.Contains(page, "cache lifetime "+graph.FormatDuration(time.Hour)+".") {
		i := strings.Index(page, "cache lifetime")
		t.Errorf("the web node page does not say the policy's cache lifetime: %q", page[max(i-200, 0):max(i+100, 0)])
	}
	defaults := httptest.NewServer(web.New(src, web.Options{}))
	defer defaults.Close()
	if page := get(t, defaults.URL+"/runs/"+id+"/nodes/n"+itoa(firstLLM(t, an, id))); !strings.Contains(page, "cache lifetime "+graph.FormatDuration(5*time.Minute)+".") {
		t.Errorf("without a policy the web node page does not say the default lifetime:\n%.3000s", page)
	}
}

// The audit gets the profile of the stack the run came from: our
// runtime's for a recorded run, LangGraph's for the LangGraph trace.
func TestAudit_Profile(t *testing.T) {
	ctx := context.Background()
	src, ids := source(t)
	an := analysis.New(src, nil)
	for name, want := range map[string]*stack.Profile{"demo": stack.Inspect, "langgraph": stack.LangGraph} {
		r, err := an.Open(ctx, ids[name], analysis.LoadGraph)
		if err != nil {
			t.Fatal(err)
		}
		if r.Profile != want || analysis.AuditConfig(r).Profile != want {
			t.Errorf("%s: profile %v, audit's %v; want %s", name, r.Profile, analysis.AuditConfig(r).Profile, want.Name)
		}
		if _, err := r.Audit(ctx, nil); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// One node's view: an llm node's request read through chat with its
// response, cache section and asks; a fork's join and branches; a node
// the run lacks names the nearest it has.
func TestNode(t *testing.T) {
	ctx := context.Background()
	src, ids := source(t)
	an := analysis.New(src, nil)
	id := ids["demo"]
	seq := firstLLM(t, an, id)
	v, err := an.Node(ctx, id, seq, analysis.NodeOptions{Cache: true})
	if err != nil {
		t.Fatal(err)
	}
	c := v.LLM
	if c == nil || !c.Exact || c.Request == nil || c.RequestErr != nil || len(c.Request.Messages) == 0 || c.Response == nil || c.Choice == "" || !v.Next {
		t.Fatalf("llm node view: %+v", c)
	}
	if v.Cache == nil || v.Cache.Err != nil || v.Cache.Call(seq) == nil {
		t.Errorf("llm node's cache section: %+v", v.Cache)
	}

	r, err := an.Open(ctx, id, analysis.LoadGraph)
	if err != nil {
		t.Fatal(err)
	}
	var fork int64
	for _, n := range r.Graph.Nodes {
		if n.Kind == record.KindFork {
			fork = n.Seq
			break
		}
	}
	if fork == 0 {
		t.Fatal("the demo has no fork")
	}
	v, err = an.Node(ctx, id, fork, analysis.NodeOptions{Branches: true})
	if err != nil {
		t.Fatal(err)
	}
	if v.Node.ForkOf == nil || v.Node.ForkOf.Join == nil || len(v.Branches) != len(v.Node.Fork.Branches) || v.LLM != nil || v.Cache != nil {
		t.Errorf("fork node view: forkOf %+v, %d branches of %d", v.Node.ForkOf, len(v.Branches), len(v.Node.Fork.Branches))
	}
	if w, err := r.Node(ctx, fork, analysis.NodeOptions{Branches: true}); err != nil || len(w.Branches) != len(v.Branches) || w.Node.ForkOf.Join.Seq != v.Node.ForkOf.Join.Seq {
		t.Errorf("the same fork from the opened run: %+v, %v", w, err)
	}

	last := r.Graph.Nodes[len(r.Graph.Nodes)-1].Seq
	_, err = an.Node(ctx, id, last+40, analysis.NodeOptions{})
	var nn *analysis.NoNodeError
	if !errors.As(err, &nn) || !errors.Is(err, analysis.ErrNotFound) || nn.Last != last || len(nn.Nearest) == 0 ||
		!strings.Contains(err.Error(), "has no node n"+itoa(last+40)) || !strings.Contains(err.Error(), "nearest: ") {
		t.Errorf("a node past the end: %v", err)
	}
}

// A request the store does not have reads, in the audit, as the store
// words it; in the node view, as none.
func TestStored_NoRequest(t *testing.T) {
	ctx := context.Background()
	src, ids := source(t)
	r, err := analysis.New(src, nil).Open(ctx, ids["demo"], analysis.LoadGraph)
	if err != nil {
		t.Fatal(err)
	}
	var tool int64
	for _, n := range r.Graph.Nodes {
		if n.Kind == record.KindTool {
			tool = n.Seq
			break
		}
	}
	_, err = analysis.AuditConfig(r).Requests(tool)
	if !errors.Is(err, analysis.ErrNoRequest) || err.Error() != "n"+itoa(tool)+": no recorded request" {
		t.Errorf("the audit's request of a tool node: %v", err)
	}
	if b, err := src.Request(ctx, ids["demo"], tool); b != nil || err != nil {
		t.Errorf("Source.Request of a tool node = %q, %v; want nil, nil", b, err)
	}
}

func firstLLM(t *testing.T, an *analysis.Analyzer, id string) int64 {
	t.Helper()
	r, err := an.Open(context.Background(), id, analysis.LoadGraph)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range r.Graph.Nodes {
		if n.Kind == record.KindLLM {
			return n.Seq
		}
	}
	t.Fatalf("run %s has no llm node", id)
	return 0
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d, %v", url, resp.StatusCode, err)
	}
	return string(b)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
