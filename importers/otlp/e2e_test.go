package otlp_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/report"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/otlp"
	"github.com/inspect-dev/inspect/mermaid"
	"github.com/inspect-dev/inspect/store"
)

// TestImport_RealFrameworks writes each real-framework trace into a store
// on disk and reads it back as graph and audit do (the audit with the
// prompt-cache analysis, as inspect audit runs it): the lines a user reads
// are there (hand-written from the scripts in testdata/gen). None of these
// runs changes an agent's prompt or tools between its calls: hand-offs and
// Send branches start new prefixes, which cache.unstable-prefix must not
// report.
func TestImport_RealFrameworks(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tt := range []struct {
		file         string
		graph, audit []string
	}{
		{"langgraph-supervisor.otlp.jsonl",
			[]string{"agents supervisor, research_expert, math_expert", `n3["handoff supervisor to research_expert"]`,
				`n5["tool web_search FAANG headcount 2024"]`, `n13["handoff math_expert to supervisor"]`, "cached 384 (reported)", `n15["final: Together the FAANG`},
			// research_expert's n6 follows its n4, math_expert's n12 its n10
			[]string{"No topology mistakes found.", "handoff.loop: clear (4 hand-offs examined)", "cache.unstable-prefix: clear (2 requests compared"}},
		{"langgraph-mapreduce.otlp.jsonl",
			[]string{`n3["fork (none context) fact-1, fact-2, fact-3"]`, `subgraph b3["branch fact-3`, `n10["join fact-1=ok, fact-2=ok, fact-3=ok"]`, `n11["llm @pick`},
			// each agent makes one call without a system prompt or tools
			[]string{"branch.failed: clear (3 branches examined)", "cache.unstable-prefix: not applicable"}},
		{"aisdk.otlp.jsonl",
			[]string{"agents planner, researcher", `n3["tool getWeather Paris"]`, `n4["tool getWeather London"]`, "calls research x2",
				`n6["fork (none context) researcher-1, researcher-2"]`, `n8["tool lookup Paris"]`, `final: Go to Paris`},
			// the planner's three calls, and each researcher's two
			[]string{"fork.overlap: clear", "cache.unstable-prefix: clear (4 requests compared"}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			ss, err := otlp.Format{}.Read(ctx, filepath.Join("testdata", tt.file), importers.Options{})
			if err != nil {
				t.Fatal(err)
			}
			id, err := importers.Write(ctx, db, ss[0])
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
			cfg := &findings.Config{Rules: rules.All, Requests: func(seq int64) ([]byte, error) { return db.Request(ctx, id, seq) },
				Cache: func() (*cache.Report, error) { return cache.Analyze(ctx, g, db, nil) }}
			rep, err := cfg.Audit(g)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range rep.Findings {
				if f.Rule == rules.CacheUnstablePrefix.ID {
					t.Errorf("cache.unstable-prefix found on a run that keeps its prefixes: %s", f.Message)
				}
			}
			if err := report.WriteText(&audit, rep); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.graph {
				if !strings.Contains(mm.String(), w) {
					t.Errorf("graph lacks %q:\n%s", w, mm.String())
				}
			}
			for _, w := range tt.audit {
				if !strings.Contains(audit.String(), w) {
					t.Errorf("audit lacks %q:\n%s", w, audit.String())
				}
			}
			// every llm node has a reconstructed request the chat package reads
			llms := 0
			for _, n := range g.Nodes {
				if n.LLM == nil {
					continue
				}
				llms++
				if body, err := db.Request(ctx, id, n.Seq); err != nil || len(body) == 0 {
					t.Errorf("n%d: request %q, %v", n.Seq, body, err)
				}
			}
			if llms == 0 {
				t.Error("no llm node")
			}
		})
	}
}
