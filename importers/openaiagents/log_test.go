package openaiagents_test

import (
	"bufio"
	"bytes"
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
	"github.com/inspect-dev/inspect/importers/openaiagents"
	"github.com/inspect-dev/inspect/record"
)

// serverEntry is one request the scripted server of testdata/gen/gen.mjs
// answered (testdata/logs/<scenario>.jsonl): the truth a trace of the run
// is compared with.
type serverEntry struct {
	Seq    int      `json:"seq"`
	Agent  string   `json:"agent"`
	Status int      `json:"status"`
	Calls  []string `json:"calls"`
	Text   string   `json:"text"`
	Usage  *struct {
		Input, Cached, Output, Reasoning int64
	} `json:"usage"`
}

// TestScenarios_AgainstServerLog imports every trace gen.mjs wrote and
// compares the run with what the scripted server answered: one llm node
// per request, each agent's in the order the server answered it, with the
// calls the server made it ask for (a failed request: an llm node that
// failed); every hand-off call the server answered is a hand-off, or a
// dropped hand-off when one response asked for several; and the tokens:
// the run's totals are the server's (each response's own — an agent run
// as a tool counted once, in its branch), whenever the trace reports usage
// at all.
func TestScenarios_AgainstServerLog(t *testing.T) {
	logs, _ := filepath.Glob(filepath.Join("testdata", "logs", "*.jsonl"))
	if len(logs) < 8 {
		t.Fatalf("%d server logs", len(logs))
	}
	for _, lp := range logs {
		name := strings.TrimSuffix(filepath.Base(lp), ".jsonl")
		t.Run(name, func(t *testing.T) {
			log := readServerLog(t, lp)
			trace := filepath.Join("testdata", name+".jsonl")
			ctx := context.Background()
			db := importerstest.Store(t)
			res, err := importers.Import(ctx, db, openaiagents.Format{}, trace, importers.Options{})
			if err != nil {
				t.Fatal(err)
			}
			g, err := graph.Load(ctx, db, res[0].RunID)
			if err != nil {
				t.Fatal(err)
			}
			// Each agent's model calls, in the order the server answered them.
			want, got := map[string][]serverEntry{}, map[string][]*graph.Node{}
			for _, e := range log {
				want[e.Agent] = append(want[e.Agent], e)
			}
			var in, out, cached, reasoning int64
			for _, n := range g.Nodes {
				if n.Kind == record.KindLLM {
					got[n.Agent] = append(got[n.Agent], n)
					u := n.LLM.Usage
					in, out, cached, reasoning = in+u.In, out+u.Out, cached+u.Cached, reasoning+u.Reasoning
				}
			}
			if len(got) != len(want) {
				t.Errorf("model calls by %d agents, the server answered %d", len(got), len(want))
			}
			for agent, es := range want {
				ns := got[agent]
				if len(ns) != len(es) {
					t.Errorf("agent %s: %d model calls, the server answered %d", agent, len(ns), len(es))
					continue
				}
				for i, e := range es {
					n := ns[i]
					if e.Status != 200 {
						if n.Status != record.StatusError {
							t.Errorf("%s (%s's call %d): %s, the server answered %d", n.ID(), agent, i+1, n.Status, e.Status)
						}
						continue
					}
					if !slices.Equal(n.LLM.Calls, e.Calls) && !sameSet(n.LLM.Calls, e.Calls) {
						t.Errorf("%s (%s's call %d): calls %v, the server answered %v", n.ID(), agent, i+1, n.LLM.Calls, e.Calls)
					}
				}
			}
			// Hand-offs: each transfer the server made a model ask for.
			var transfers, handoffs, dropped []string
			for _, e := range log {
				for _, c := range e.Calls {
					if strings.HasPrefix(c, "transfer_to_") {
						transfers = append(transfers, e.Agent+">"+strings.TrimPrefix(c, "transfer_to_"))
					}
				}
			}
			for _, n := range g.Nodes {
				switch {
				case n.Kind == record.KindHandoff:
					handoffs = append(handoffs, n.Handoff.From+">"+n.Handoff.To)
				case n.Kind == record.KindTool && strings.HasPrefix(n.Tool.Name, "transfer_to_"):
					if n.Status != record.StatusError || !strings.Contains(n.Error, "dropped") {
						t.Errorf("%s: a hand-off call as a tool, %s %q", n.ID(), n.Status, n.Error)
					}
					dropped = append(dropped, n.Agent+">"+strings.TrimPrefix(n.Tool.Name, "transfer_to_"))
				}
			}
			all := append(append([]string{}, handoffs...), dropped...)
			if !sameSet(all, transfers) {
				t.Errorf("hand-offs %v and dropped %v; the server answered transfers %v", handoffs, dropped, transfers)
			}
			if len(dropped) > 0 {
				// The hand-off the SDK took says it dropped the others.
				for _, n := range g.Handoffs {
					if n.Status != record.StatusError || !strings.Contains(n.Error, "Multiple handoffs requested") {
						t.Errorf("%s: the hand-off taken reads %s %q", n.ID(), n.Status, n.Error)
					}
				}
			}
			// Tokens.
			var win, wout, wcached, wreasoning int64
			for _, e := range log {
				if e.Usage != nil {
					win, wout, wcached, wreasoning = win+e.Usage.Input, wout+e.Usage.Output, wcached+e.Usage.Cached, wreasoning+e.Usage.Reasoning
				}
			}
			if !traceHasUsage(t, trace) {
				// The Responses API without task and turn spans: no span
				// holds a count, and the run reports none.
				if in+out != 0 {
					t.Errorf("the trace reports no usage, the run %d in %d out", in, out)
				}
				return
			}
			if in != win || out != wout || cached != wcached {
				t.Errorf("tokens in %d out %d cached %d; the server answered in %d out %d cached %d", in, out, cached, win, wout, wcached)
			}
			if reasoning != 0 && reasoning != wreasoning {
				t.Errorf("reasoning %d, the server answered %d", reasoning, wreasoning)
			}
		})
	}
}

func readServerLog(t *testing.T, path string) []serverEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []serverEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var e serverEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// traceHasUsage reports whether any span of the trace file holds a token
// count (a usage object).
func traceHasUsage(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(b, []byte(`"usage":{`))
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
