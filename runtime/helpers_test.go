package runtime_test

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime"
	"github.com/inspect-dev/inspect/store"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// t0 is the start of every virtual-time test run.
var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func openDB(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func fixture(name string) string { return filepath.Join("..", "fixtures", name) }

// runFixture runs a fixture project with its script in virtual time.
func runFixture(t testing.TB, dir string, mod func(*runtime.Config)) (*runtime.Result, *store.DB, []*record.Node) {
	t.Helper()
	db := openDB(t)
	cfg := runtime.Config{Project: dir, Script: filepath.Join(dir, "script.yaml"), DB: db, Now: func() time.Time { return t0 }, RunID: "testrun"}
	if mod != nil {
		mod(&cfg)
	}
	res, err := runtime.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run(%s): %v", dir, err)
	}
	return res, db, nodes(t, db, res.RunID)
}

func nodes(t testing.TB, db *store.DB, id string) []*record.Node {
	t.Helper()
	ctx := context.Background()
	run, err := db.LoadRun(ctx, id)
	if err != nil {
		t.Fatalf("LoadRun: %v", err)
	}
	var out []*record.Node
	if err := db.ScanNodes(ctx, run, func(n *record.Node) error { out = append(out, n); return nil }); err != nil {
		t.Fatalf("ScanNodes: %v", err)
	}
	return out
}

// outline renders nodes one per line, for assertions and failure messages.
func outline(ns []*record.Node) string {
	var b strings.Builder
	for _, n := range ns {
		fmt.Fprintf(&b, "n%d %s [%s] @%s d%d %s", n.Seq, n.Kind, n.Branch, n.Agent, n.Depth, n.Status)
		switch n.Kind {
		case record.KindLLM:
			fmt.Fprintf(&b, " calls=%s", strings.Join(n.LLM.Calls, ","))
		case record.KindTool:
			fmt.Fprintf(&b, " %s", n.Tool.Name)
		case record.KindHandoff:
			fmt.Fprintf(&b, " %s->%s", n.Handoff.From, n.Handoff.To)
		case record.KindFork:
			fmt.Fprintf(&b, " %s", n.Fork.Context)
			for _, br := range n.Fork.Branches {
				fmt.Fprintf(&b, " %s@%s", br.Name, br.Agent)
			}
		case record.KindJoin:
			for _, br := range n.Join.Branches {
				fmt.Fprintf(&b, " %s=%s", br.Name, br.Status)
			}
		}
		if n.Error != "" {
			fmt.Fprintf(&b, " err=%q", n.Error)
		}
		fmt.Fprintf(&b, " t=%s+%s\n", n.Started.Sub(t0), n.Duration())
	}
	return b.String()
}
