// Package importerstest holds what the importers' tests share: the counts
// a test compares with the ones it takes from a raw file, and a session
// written into a store and read back as graph and audit show it. Only
// tests import it.
package importerstest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/report"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/mermaid"
	"github.com/inspect-dev/inspect/store"
)

// Totals are the counts of a session an importer's test checks against
// the same counts taken from the raw file.
type Totals struct {
	Responses, Tools, SubAgents, Handoffs int
	In, Out, Cached, Reasoning            int64
	Overlapping                           int // pairs of sub-agents whose runs overlap in time
}

// Count counts s: llm steps and their usage, tool steps, hand-offs,
// branches, and the pairs of branches whose conversations overlap in time
// (a conversation runs from its start to its end, or to its last step when
// it never ended).
func Count(s *importers.Session) Totals {
	var tt Totals
	var windows [][2]time.Time
	var walk func(c *importers.Conversation)
	walk = func(c *importers.Conversation) {
		for _, st := range c.Steps {
			switch {
			case st.LLM != nil:
				tt.Responses++
				tt.In += st.LLM.Usage.In
				tt.Out += st.LLM.Usage.Out
				tt.Cached += st.LLM.Usage.Cached
				tt.Reasoning += st.LLM.Usage.Reasoning
			case st.Tool != nil:
				tt.Tools++
			case st.Handoff != nil:
				tt.Handoffs++
			case st.Fork != nil:
				for _, b := range st.Fork.Branches {
					tt.SubAgents++
					if b.Conv == nil {
						continue
					}
					end := b.Conv.Ended
					if end.IsZero() {
						end = LastTime(b.Conv)
					}
					windows = append(windows, [2]time.Time{b.Conv.Started, end})
					walk(b.Conv)
				}
			}
		}
	}
	if s.Trunk != nil {
		walk(s.Trunk)
	}
	tt.Overlapping = Overlaps(windows)
	return tt
}

// Overlaps counts the pairs of windows [start, end] that overlap.
func Overlaps(windows [][2]time.Time) int {
	n := 0
	for i := range windows {
		for j := i + 1; j < len(windows); j++ {
			if windows[i][0].Before(windows[j][1]) && windows[j][0].Before(windows[i][1]) {
				n++
			}
		}
	}
	return n
}

// LastTime is the end of a conversation's last step.
func LastTime(c *importers.Conversation) time.Time {
	var t time.Time
	later := func(x time.Time) {
		if x.After(t) {
			t = x
		}
	}
	for _, st := range c.Steps {
		switch {
		case st.User != nil:
			later(st.User.At)
		case st.LLM != nil:
			later(st.LLM.Ended)
		case st.Tool != nil:
			later(st.Tool.Ended)
		case st.Handoff != nil:
			later(st.Handoff.At)
		case st.Fork != nil:
			later(st.Fork.JoinAt)
		case st.Final != nil:
			later(st.Final.At)
		}
	}
	return t
}

// Store is a store file on disk under t.TempDir(), closed at the test's end.
func Store(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Shown writes s into db and reads the run back as `inspect graph` and
// `inspect audit` show it: the loaded graph, its Mermaid text and the
// audit's text.
func Shown(t *testing.T, db *store.DB, s *importers.Session) (g *graph.Run, mm, audit string) {
	t.Helper()
	ctx := context.Background()
	id, err := importers.Write(ctx, db, s)
	if err != nil {
		t.Fatal(err)
	}
	if g, err = graph.Load(ctx, db, id); err != nil {
		t.Fatal(err)
	}
	var m, a strings.Builder
	if err := mermaid.Fprint(&m, g); err != nil {
		t.Fatal(err)
	}
	rep, err := (&findings.Config{Rules: rules.All, Requests: func(seq int64) ([]byte, error) { return db.Request(ctx, id, seq) }}).Audit(g)
	if err != nil {
		t.Fatal(err)
	}
	if err := report.WriteText(&a, rep); err != nil {
		t.Fatal(err)
	}
	return g, m.String(), a.String()
}

// Contains reports each of want that text lacks.
func Contains(t *testing.T, what, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}

// Walk is what a fuzz target asks of a read that gave no error: every
// session has a trunk, and its whole tree can be counted (Count, Detail)
// without a panic.
func Walk(t testing.TB, ss []*importers.Session) {
	t.Helper()
	for _, s := range ss {
		if s.Trunk == nil {
			t.Fatalf("no error and a session without a trunk")
		}
		Count(s)
		Detail(s)
	}
}
