package importtest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/mermaid"
	"github.com/inspect-dev/inspect/store"
)

// Stored is a session written into a store file and read back as the
// commands read it.
type Stored struct {
	Graph   *graph.Run
	Mermaid string // inspect graph's text
	Audit   string // inspect audit's text
	// Requests is the stored request of every llm node, by seq.
	Requests map[int64][]byte
}

// Store writes s through importers.Write into a new store file under
// t.TempDir(), then loads the run, draws it and audits it.
func Store(t testing.TB, s *importers.Session) *Stored {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	id, err := importers.Write(ctx, db, s)
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Load(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	var mm, audit strings.Builder
	if err := mermaid.Fprint(&mm, g); err != nil {
		t.Fatal(err)
	}
	rep, err := findings.Audit(g, func(seq int64) ([]byte, error) { return db.Request(ctx, id, seq) })
	if err != nil {
		t.Fatal(err)
	}
	if err := findings.WriteText(&audit, rep); err != nil {
		t.Fatal(err)
	}
	out := &Stored{Graph: g, Mermaid: mm.String(), Audit: audit.String(), Requests: map[int64][]byte{}}
	for _, n := range g.Nodes {
		if n.LLM != nil {
			b, err := db.Request(ctx, id, n.Seq)
			if err != nil {
				t.Fatalf("n%d: request: %v", n.Seq, err)
			}
			out.Requests[n.Seq] = b
		}
	}
	return out
}

// Has fails the test for every want line not in text.
func Has(t testing.TB, what, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}
