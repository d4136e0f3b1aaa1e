package report_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/cache/report"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
	"github.com/inspect-dev/inspect/store"
)

// TestWriteText_ScriptedStatesNoMinimum: on a scripted run whose simulated
// cache reports reads under 1,024 tokens (the hand-off fixture's new agent
// reads a few tokens of the trunk), the report does not state a 1,024-token
// minimum its own figures break (before: "minimum cacheable prefix 1,024
// tokens" above "reported cached 5 of 720"); a provider's run still states
// the minimum.
func TestWriteText_ScriptedStatesNoMinimum(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	g, err := runtimetest.RecordFixture(ctx, db, filepath.Join("..", "..", "fixtures", "handoff-chain"), t.TempDir(), "run-h", t0)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := cache.Analyze(ctx, g, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	small := false
	for _, c := range rep.Calls {
		if c.Reported.Cached > 0 && c.Reported.Cached < 1024 {
			small = true
		}
	}
	if !small {
		t.Fatal("the fixture reports no read under 1,024 tokens; pick one that does")
	}
	var b bytes.Buffer
	if err := report.WriteText(&b, rep, 0); err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(b.String(), "\n\n  run:")
	if strings.Contains(head, "minimum cacheable prefix 1,024 tokens") {
		t.Errorf("a scripted run's report states a minimum its reads break:\n%s", head)
	}
	if !strings.Contains(head, "the simulated cache has no minimum prefix") {
		t.Errorf("the report does not say the simulation has no minimum:\n%s", head)
	}
	rep.Simulated = false // as a provider's run reads
	b.Reset()
	if err := report.WriteText(&b, rep, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "minimum cacheable prefix 1,024 tokens") {
		t.Errorf("a provider's run does not state the minimum:\n%s", b.String())
	}
}
