package web_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/analysis/storesrc"
	creport "github.com/inspect-dev/inspect/cache/report"
	freport "github.com/inspect-dev/inspect/findings/report"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/internal/fixturetest"
	"github.com/inspect-dev/inspect/store"
	"github.com/inspect-dev/inspect/web"
)

// TestRunPage_SameAsTheCommands: the findings a run page shows are the
// audit `inspect audit --format json` prints of the run, and its cache
// figures what `inspect cache --format json` prints, whether the page
// analyses the run at once or in parts (a large run: the audit on the
// brief cache analysis beside the full one, not after it): on the served
// runs, on fixtures whose prompts are unstable (cache.unstable-prefix
// reads the cache analysis) and on a realistic run.
func TestRunPage_SameAsTheCommands(t *testing.T) {
	ctx := context.Background()
	_, ids := served(t, web.Options{})
	path := filepath.Join(t.TempDir(), "runs.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	mine := map[string]string{}
	for i, name := range []string{"cache-unstable-system-time", "cache-unstable-tool-order", "cache-compact-same-agent", "cache-handoff-back"} {
		g, err := fixturetest.Record(ctx, db, filepath.Join("..", "fixtures", name), t.TempDir(), "run-"+name, t0.Add(time.Duration(i)*time.Minute))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		mine[name] = g.ID
	}
	if mine["realistic"], err = graphtest.RecordRealistic(ctx, db, 3000); err != nil {
		t.Fatal(err)
	}
	db.Close()
	unstable := 0
	for _, set := range []struct {
		path string
		ids  map[string]string
	}{{runs.path, ids}, {path, mine}} {
		ro, err := store.OpenReadOnly(ctx, set.path)
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		src := storesrc.New(ro)
		for name, id := range set.ids {
			r, err := analysis.New(src, nil).Open(ctx, id, analysis.LoadBrief)
			if err != nil {
				t.Fatal(err)
			}
			audit, err := r.Audit(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var wantAudit bytes.Buffer
			if err := freport.WriteJSON(&wantAudit, audit); err != nil {
				t.Fatal(err)
			}
			for _, f := range audit.Findings {
				if f.Rule == "cache.unstable-prefix" {
					unstable++
				}
			}
			c, err := analysis.New(src, nil).Open(ctx, id, analysis.LoadCache)
			if err != nil {
				t.Fatal(err)
			}
			full, err := c.Cache(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var wantCache bytes.Buffer
			if err := creport.WriteJSON(&wantCache, full, 0); err != nil {
				t.Fatal(err)
			}
			for _, progressive := range []int{0, 1} {
				gotAudit, gotCache, err := web.New(src, web.Options{Progressive: progressive}).Analysed(ctx, id)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				var a, c bytes.Buffer
				if err := freport.WriteJSON(&a, gotAudit); err != nil {
					t.Fatal(err)
				}
				if err := creport.WriteJSON(&c, gotCache, 0); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a.Bytes(), wantAudit.Bytes()) {
					t.Errorf("%s (progressive %d): the page's audit differs from inspect audit's:\n%s\nwant\n%s", name, progressive, a.Bytes(), wantAudit.Bytes())
				}
				if !bytes.Equal(c.Bytes(), wantCache.Bytes()) {
					t.Errorf("%s (progressive %d): the page's cache analysis differs from inspect cache's", name, progressive)
				}
			}
		}
	}
	if unstable == 0 {
		t.Error("no run has a cache.unstable-prefix finding: the audit's cache analysis was not compared")
	}
}
