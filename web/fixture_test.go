package web_test

import (
	"bytes"
	"context"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/analysis/storesrc"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/otlp"
	"github.com/inspect-dev/inspect/runtime/examples"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
	"github.com/inspect-dev/inspect/store"
	"github.com/inspect-dev/inspect/web"
)

// runs is the database every test serves: the demo, fixtures of the
// repository, the hostile project and an imported OTLP trace, recorded
// once per test binary in virtual time.
var runs struct {
	once sync.Once
	dir  string
	path string
	ids  map[string]string // name → run id
	err  error
}

var tempDirs []string

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	for _, d := range tempDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// t0 is the clock of the first recorded run; each run starts a minute
// after the one before, so the list's order is fixed.
var t0 = time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)

func recordRuns() error {
	dir, err := os.MkdirTemp("", "web-test-")
	if err != nil {
		return err
	}
	tempDirs = append(tempDirs, dir)
	runs.dir, runs.path, runs.ids = dir, filepath.Join(dir, "runs.db"), map[string]string{}
	ctx := context.Background()
	db, err := store.Open(ctx, runs.path)
	if err != nil {
		return err
	}
	defer db.Close()
	demo := filepath.Join(dir, "src", "demo")
	if _, err := examples.Write(examples.Demo(), demo); err != nil {
		return err
	}
	projects := []struct{ name, src string }{
		{"demo", demo},
		{"failing-branch", filepath.Join("..", "fixtures", "failing-branch")},
		{"handoff-chain", filepath.Join("..", "fixtures", "handoff-chain")},
		{"hostile", filepath.Join("testdata", "hostile-html")},
	}
	for i, p := range projects {
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
	id, err := importers.Write(ctx, db, ss[0])
	if err != nil {
		return err
	}
	runs.ids["imported"] = id
	return nil
}

// served opens the test database read-only and serves it.
func served(t testing.TB, o web.Options) (*httptest.Server, map[string]string) {
	t.Helper()
	runs.once.Do(func() { runs.err = recordRuns() })
	if runs.err != nil {
		t.Fatal(runs.err)
	}
	db, err := store.OpenReadOnly(context.Background(), runs.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv := httptest.NewServer(web.New(storesrc.New(db), o))
	t.Cleanup(srv.Close)
	return srv, runs.ids
}

// bigRun records a realistic run of about n nodes into its own database
// (kept between runs of one binary) and serves it.
func bigRun(tb testing.TB, n int) (*httptest.Server, string) {
	tb.Helper()
	dir, err := os.MkdirTemp("", "web-big-")
	if err != nil {
		tb.Fatal(err)
	}
	tempDirs = append(tempDirs, dir)
	ctx := context.Background()
	path := filepath.Join(dir, "big.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		tb.Fatal(err)
	}
	id, err := graphtest.RecordRealistic(ctx, db, n)
	db.Close()
	if err != nil {
		tb.Fatal(err)
	}
	ro, err := store.OpenReadOnly(ctx, path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ro.Close() })
	srv := httptest.NewServer(web.New(storesrc.New(ro), web.Options{}))
	tb.Cleanup(srv.Close)
	return srv, id
}

// report writes run id's report from the test database, as inspect
// report does.
func report(t testing.TB, id string) []byte {
	t.Helper()
	db, err := store.OpenReadOnly(context.Background(), runs.path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var buf bytes.Buffer
	if err := web.New(storesrc.New(db), web.Options{}).WriteReport(context.Background(), &buf, id); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
