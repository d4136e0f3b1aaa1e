package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/inspect-dev/inspect/graph/graphtest"
)

// TestGraph_WideForkEveryFormat: at 10,000 branches SVG took 90 s and
// 19 GB, then failed in the wasm (issue 11, defect 6). A recorded
// 10,000-branch fork now goes through every format of `inspect graph`;
// Mermaid, DOT, SVG and PNG collapse the same way (one group node for the
// branches beyond the first few), so each output stays small.
func TestGraph_WideForkEveryFormat(t *testing.T) {
	if testing.Short() {
		t.Skip("records a 20,000-node run")
	}
	ctx := context.Background()
	f, _, errOut := testFactory(t)
	db, err := f.Store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := graphtest.Record(ctx, db, graphtest.WideFork(10_000)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	limits := map[string]int64{"mmd": 60 << 10, "dot": 200 << 10, "svg": 1 << 20, "png": 8 << 20}
	for ext, max := range limits {
		out := filepath.Join(dir, "wide."+ext)
		if code := run(ctx, f, []string{"graph", "-o", out}); code != ExitOK {
			t.Fatalf("graph -o wide.%s: exit %d: %s", ext, code, errOut)
		}
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() == 0 || fi.Size() > max {
			t.Errorf("wide.%s is %d bytes, want 1..%d (collapsed)", ext, fi.Size(), max)
		}
		b, _ := os.ReadFile(out)
		if ext == "svg" && !bytes.Contains(b, []byte("more branches")) {
			t.Errorf("the SVG has no group node for the wide fork")
		}
	}
	// JSON is the whole graph, never collapsed: every branch is in it.
	out := filepath.Join(dir, "wide.json")
	if code := run(ctx, f, []string{"graph", "-o", out}); code != ExitOK {
		t.Fatalf("graph -o wide.json: exit %d: %s", code, errOut)
	}
	var doc struct {
		Forks []struct {
			Branches []json.RawMessage `json:"branches"`
		} `json:"forks"`
	}
	b, _ := os.ReadFile(out)
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Forks) != 1 || len(doc.Forks[0].Branches) != 10_000 {
		t.Errorf("graph JSON: %v, forks %d; want one fork with all 10,000 branches", err, len(doc.Forks))
	}
}
