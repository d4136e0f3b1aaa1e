package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/cache/report"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/internal/fixturetest"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
	"github.com/inspect-dev/inspect/store"
)

// keys collects every object key of a JSON value.
func keys(v any, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			out[k] = true
			keys(e, out)
		}
	case []any:
		for _, e := range x {
			keys(e, out)
		}
	}
}

// Every key the JSON writes is documented in docs/cache-json.md, and the
// output is valid JSON with the schema named.
func TestWriteJSON_Documented(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	scripted, err := runtimetest.RecordFixture(ctx, db, filepath.Join("..", "..", "fixtures", "handoff-chain"), t.TempDir(), "run-h", t0)
	if err != nil {
		t.Fatal(err)
	}
	// a LangGraph run: mismatches, an unstable prefix, a reconstructed request
	imported, err := fixturetest.Record(ctx, db, filepath.Join("..", "..", "fixtures", "cache-unstable-system-time"), t.TempDir(), "run-u", t0)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, g := range []*graph.Run{scripted, imported} {
		rep, err := cache.Analyze(ctx, g, db, nil)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := report.WriteJSON(&buf, rep, 0); err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		if v["schema"] != report.Schema {
			t.Errorf("schema = %v", v["schema"])
		}
		keys(v, found)
	}
	for _, k := range []string{"mismatch", "kind", "unstable", "lost_tokens", "location"} {
		if !found[k] {
			t.Errorf("the runs do not exercise %q", k)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "cache-json.md"))
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for k := range found {
		if !strings.Contains(string(doc), "`"+k+"`") {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs/cache-json.md does not document %v", missing)
	}
}
