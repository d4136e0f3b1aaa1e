package otlp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/importers/otlp"
	"github.com/inspect-dev/inspect/record"
)

// TestTraces_AgainstServerLog imports each trace the scripts of
// testdata/gen7 and gen-traceloop made against their scripted model and
// compares the run with the model's log of what it answered
// (testdata/logs/<name>.jsonl): one run, one llm node per request (each
// agent's, when the trace names agents), with the calls it was made to
// ask for; each call a tool node, a branch or a hand-off of that name
// (OpenLLMetry's LangGraph supervisor: its agents and hand-offs, though no
// span names them); the tokens the
// model reported (cached ones when the trace has them).
func TestTraces_AgainstServerLog(t *testing.T) {
	logs, _ := filepath.Glob(filepath.Join("testdata", "logs", "*.jsonl"))
	if len(logs) == 0 {
		t.Fatal("no server log")
	}
	for _, lp := range logs {
		name := strings.TrimSuffix(filepath.Base(lp), ".jsonl")
		t.Run(name, func(t *testing.T) {
			type entry struct {
				Agent string   `json:"agent"`
				Calls []string `json:"calls"`
				Text  string   `json:"text"`
				Usage struct{ Input, Output, Cached int64 }
			}
			f, err := os.Open(lp)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var log []entry
			for sc := bufio.NewScanner(f); sc.Scan(); {
				var e entry
				if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
					t.Fatal(err)
				}
				log = append(log, e)
			}
			ctx := context.Background()
			db := importerstest.Store(t)
			res, err := importers.Import(ctx, db, otlp.Format{}, filepath.Join("testdata", name+".otlp.jsonl"), importers.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != 1 {
				t.Fatalf("%d runs, want 1", len(res))
			}
			g, err := graph.Load(ctx, db, res[0].RunID)
			if err != nil {
				t.Fatal(err)
			}
			byAgent := map[string][]*graph.Node{}
			var in, out, cached int64
			calls := map[string]int{}
			for _, n := range g.Nodes {
				switch n.Kind {
				case record.KindLLM:
					byAgent[n.Agent] = append(byAgent[n.Agent], n)
					in, out, cached = in+n.LLM.Usage.In, out+n.LLM.Usage.Out, cached+n.LLM.Usage.Cached
				case record.KindTool:
					calls[n.Tool.Name]++
				case record.KindFork:
					calls[n.Fork.Tool] += len(n.Fork.Branches)
				case record.KindHandoff:
					calls["transfer_to_"+n.Handoff.To]++ // the call that asked for it
				}
			}
			want := map[string][]entry{}
			wantCalls := map[string]int{}
			var win, wout, wcached int64
			for _, e := range log {
				want[e.Agent] = append(want[e.Agent], e)
				for _, c := range e.Calls {
					wantCalls[c]++
				}
				win, wout, wcached = win+e.Usage.Input, wout+e.Usage.Output, wcached+e.Usage.Cached
			}
			for agent, es := range want {
				ns := byAgent[agent]
				if len(ns) != len(es) {
					t.Errorf("agent %s: %d model calls, the model answered %d", agent, len(ns), len(es))
					continue
				}
				// Concurrent sub-agents answer in any order: compare each
				// agent's calls as a multiset of responses.
				var got, exp []string
				for i := range es {
					got = append(got, strings.Join(ns[i].LLM.Calls, ",")+"|"+ns[i].LLM.Content)
					exp = append(exp, strings.Join(es[i].Calls, ",")+"|"+es[i].Text)
				}
				slices.Sort(got)
				slices.Sort(exp)
				if !slices.Equal(got, exp) {
					t.Errorf("agent %s: responses %q, the model answered %q", agent, got, exp)
				}
			}
			if len(byAgent) != len(want) {
				t.Errorf("model calls by %d agents, the model answered %d", len(byAgent), len(want))
			}
			for name, n := range wantCalls {
				if calls[name] != n {
					t.Errorf("%d %s calls (tool nodes and branches), the model asked for %d", calls[name], name, n)
				}
			}
			reported := false // cached tokens: some llm node reports them
			for _, n := range g.Nodes {
				reported = reported || n.Kind == record.KindLLM && n.LLM.Usage.CachedReported && n.LLM.Usage.Cached > 0
			}
			if !reported {
				cached = wcached // the trace has no cache counts (OpenLLMetry writes none)
			}
			if in != win || out != wout || cached != wcached {
				t.Errorf("tokens in %d out %d cached %d; the model answered in %d out %d cached %d", in, out, cached, win, wout, wcached)
			}
		})
	}
}

// TestMastra_WorkflowHoldsItsSteps: a Mastra workflow run (testdata/gen-mastra:
// workflow trip, input {question}, a parallel step of two helper agents,
// then a step running the writer agent) is the workflow's conversation:
// the question is its user turn, the parallel step its fork, and the
// writer, running after the join, makes its own responses and call with no
// hand-off (expectations written from the script).
func TestMastra_WorkflowHoldsItsSteps(t *testing.T) {
	ctx := context.Background()
	db := importerstest.Store(t)
	res, err := importers.Import(ctx, db, otlp.Format{}, filepath.Join("testdata", "mastra-workflow.otlp.jsonl"), importers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Load(ctx, db, res[0].RunID)
	if err != nil {
		t.Fatal(err)
	}
	nodes := g.Trunk.Nodes
	if len(nodes) == 0 || nodes[0].Kind != record.KindUser || nodes[0].Text != "Paris or London this weekend?" || len(g.Tasks) != 1 || g.Tasks[0] != nodes[0].Text {
		t.Fatalf("the workflow's input is no user turn: first node %+v, tasks %q", nodes[0].Node, g.Tasks)
	}
	if len(g.Forks) != 1 || g.Forks[0].Node.Agent != "trip" || len(g.Forks[0].Branches) != 2 {
		t.Fatalf("forks %d; want the workflow trip's parallel step of two", len(g.Forks))
	}
	for _, b := range g.Forks[0].Branches {
		if b.Agent != "helper" || b.Status != record.StatusOK {
			t.Errorf("branch %s: %s %s", b.Name, b.Agent, b.Status)
		}
	}
	var after []string
	for _, n := range nodes {
		switch {
		case n.Kind == record.KindHandoff:
			t.Errorf("%s: a hand-off %s -> %s; a workflow's next step is none", n.ID(), n.Handoff.From, n.Handoff.To)
		case n.Seq > g.Forks[0].Join.Seq && n.Kind != record.KindFinal:
			after = append(after, string(n.Kind)+"@"+n.Agent)
		}
	}
	if strings.Join(after, " ") != "llm@writer tool@writer llm@writer" {
		t.Errorf("after the join: %v", after)
	}
	if f := nodes[len(nodes)-1]; f.Kind != record.KindFinal || f.Text != "Paris it is: 18C and sunny." {
		t.Errorf("the run ends with %s %q", f.Kind, f.Text)
	}
}
