package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/record"
)

// show prints a body from any OpenAI-compatible server (content parts,
// fields of its own, a usage object with extras), and the other formats
// chat reads, with their system text beside the messages.
func TestWriteRequestResponse(t *testing.T) {
	tests := []struct {
		name       string
		req, resp  string
		want, lack []string
	}{
		{
			name: "vllm parts",
			req: `{"model":"Qwen/Qwen3-8B","messages":[{"role":"system","content":[{"type":"text","text":"You are "},{"type":"text","text":"terse."}]},` +
				`{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"chatcmpl-tool-1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.md\"}"}}]},` +
				`{"role":"tool","tool_call_id":"chatcmpl-tool-1","content":"A"}],"tools":[{"type":"function","function":{"name":"read_file","parameters":{}}}],"tool_choice":"auto","chat_template_kwargs":{"enable_thinking":false}}`,
			resp: `{"id":"chatcmpl-9","object":"chat.completion","model":"Qwen/Qwen3-8B","choices":[{"index":0,"message":{"role":"assistant","reasoning_content":null,"content":"Done.","tool_calls":[]},"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":40,"total_tokens":43,"completion_tokens":3,"prompt_tokens_details":null},"prompt_logprobs":null}`,
			want: []string{"## Request (4 messages, ", "- tools offered: read_file\n", "- tool_choice: \"auto\"\n", "### 1. system\n\n```\nYou are terse.\n```",
				"### 3. assistant\n\n### calls read_file (chatcmpl-tool-1)\n\n```\n{\n  \"path\": \"a.md\"\n}\n```", "### 4. tool (result of chatcmpl-tool-1)\n\n```\nA\n```",
				"## Response (finish_reason stop)\n\n### assistant\n\n```\nDone.\n```", "### Usage\n\n```\n{\n  \"prompt_tokens\": 40,"},
			lack: []string{"anthropic"},
		},
		{
			name: "anthropic",
			req:  `{"model":"claude-sonnet-4-5","system":"Be brief.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":100}`,
			resp: `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hello."}],"stop_reason":"end_turn","usage":{"input_tokens":9,"output_tokens":2}}`,
			want: []string{"## Request (1 messages, ", " bytes, anthropic-messages)", "### system\n\n```\nBe brief.\n```", "### 1. user\n\n```\nhi\n```",
				"## Response (finish_reason end_turn)", "```\nHello.\n```"},
		},
		{
			name: "unreadable",
			req:  `{"prompt":"completion API"}`,
			resp: `not json`,
			want: []string{"### Request (27 bytes)\n\n```\n{\n  \"prompt\": \"completion API\"\n}\n```", "### Response\n\n```\nnot json\n```"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w strings.Builder
			writeRequest(&w, []byte(tt.req))
			writeResponse(&w, []byte(tt.resp), &graph.Node{Node: &record.Node{Kind: record.KindLLM}})
			for _, s := range tt.want {
				if !strings.Contains(w.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, w.String())
				}
			}
			for _, s := range tt.lack {
				if strings.Contains(w.String(), s) {
					t.Errorf("output has %q:\n%s", s, w.String())
				}
			}
		})
	}
}

// TestShow_WeightedTokens: show prints an llm node's weighted tokens and a
// fork's and a join's per branch (nested branches counted in their
// parent's), and graph --format json carries the same figures; every
// number worked out by hand from the usages below.
func TestShow_WeightedTokens(t *testing.T) {
	ctx := context.Background()
	at := func(s int) time.Time { return graphtest.Start.Add(time.Duration(s) * time.Second) }
	node := func(n record.Node) *record.Node {
		n.Agent, n.Status = "analyst", record.StatusOK
		n.Started, n.Ended = at(int(n.Seq)), at(int(n.Seq)+1)
		if n.Branch != "" {
			n.Depth = strings.Count(n.Branch, "/") + 1
		}
		return &n
	}
	llm := func(seq int64, branch string, forkSeq int64, u record.Usage) *record.Node {
		return node(record.Node{Seq: seq, Kind: record.KindLLM, Branch: branch, ForkSeq: forkSeq, LLM: &record.LLM{Model: "m", Usage: u, Request: []byte(`{"model":"m","messages":[{"role":"user","content":"go"}]}`)}})
	}
	fork := func(seq int64, branch string, forkSeq int64, names ...string) *record.Node {
		f := &record.Fork{Context: "none"}
		for _, n := range names {
			f.Branches = append(f.Branches, record.ForkBranch{Name: n, Agent: "analyst"})
		}
		return node(record.Node{Seq: seq, Kind: record.KindFork, Branch: branch, ForkSeq: forkSeq, Fork: f})
	}
	join := func(seq int64, branch string, forkSeq int64, names ...string) *record.Node {
		j := &record.Join{ForkSeq: forkSeq}
		for _, n := range names {
			j.Branches = append(j.Branches, record.JoinBranch{Name: n, Agent: "analyst", Status: record.StatusOK, Duration: time.Second, Answer: n})
		}
		return node(record.Node{Seq: seq, Kind: record.KindJoin, Branch: branch, Join: j})
	}
	final := func(seq int64, branch string, forkSeq int64) *record.Node {
		return node(record.Node{Seq: seq, Kind: record.KindFinal, Branch: branch, ForkSeq: forkSeq, Text: "done"})
	}
	nodes := []*record.Node{
		node(record.Node{Seq: 1, Kind: record.KindUser, Text: "go"}),
		// 2000 in, 1600 read: 400 + out 100 + 1600/4 = 900
		llm(2, "", 0, record.Usage{In: 2000, Out: 100, Cached: 1600, CachedReported: true}),
		fork(3, "", 0, "x", "y"),
		// 800 in, 400 read, 100 written: 300 + 100 + out 40 + 100 = 540
		llm(4, "x", 3, record.Usage{In: 800, Out: 40, Cached: 400, CachedReported: true, CacheWrite: 100, CacheWriteReported: true}),
		fork(5, "x", 3, "p"),
		// no cache reported: 300 + 21 = 321, nothing discounted
		llm(6, "x/p", 5, record.Usage{In: 300, Out: 21}),
		final(7, "x/p", 5),
		join(8, "x", 3, "p"),
		final(9, "x", 3),
		// 1000 in, 601 read: 399 + out 50 + 150.25 = 599.25
		llm(10, "y", 3, record.Usage{In: 1000, Out: 50, Cached: 601, CachedReported: true}),
		final(11, "y", 3),
		join(12, "", 3, "x", "y"),
	}
	f, out, errOut := testFactory(t)
	db, err := f.Store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := graphtest.Record(ctx, db, nodes)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		node string
		want []string
	}{
		{"n2", []string{"- weighted: 900 tokens (uncached input, cache writes and output in full, cache reads at 25%)"}},
		{"n4", []string{"- weighted: 540 tokens"}},
		{"n10", []string{"- weighted: 599.25 tokens"}},
		{"n3", []string{
			"- branch x: weighted 861 tokens over 2 calls (in 1100 · out 61 · cached 400)",
			"- branch y: weighted 599.25 tokens over 1 call (in 1000 · out 50 · cached 601)"}},
		{"n5", []string{"- branch p: weighted 321 tokens over 1 call (in 300 · out 21 · cached not reported)"}},
		{"n12", []string{
			"### Branch x (agent analyst) · ok · 1.0s · weighted 861 tokens over 2 calls",
			"### Branch y (agent analyst) · ok · 1.0s · weighted 599.25 tokens over 1 call"}},
	} {
		out.Reset()
		if code := run(ctx, f, []string{"show", id, tt.node}); code != ExitOK {
			t.Fatalf("show %s: exit %d: %s", tt.node, code, errOut)
		}
		for _, w := range tt.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("show %s lacks %q:\n%s", tt.node, w, out)
			}
		}
	}

	out.Reset()
	if code := run(ctx, f, []string{"graph", "--format", "json", id}); code != ExitOK {
		t.Fatalf("graph --format json: exit %d: %s", code, errOut)
	}
	var g struct {
		Tokens struct{ Weighted float64 } `json:"tokens"`
		Nodes  []struct {
			ID  string                      `json:"id"`
			LLM *struct{ Weighted float64 } `json:"llm"`
		} `json:"nodes"`
		Forks []struct {
			Branches []struct {
				Path   string `json:"path"`
				Tokens struct {
					Weighted float64 `json:"weighted"`
					Calls    int     `json:"calls"`
				} `json:"tokens"`
			} `json:"branches"`
		} `json:"forks"`
	}
	if err := json.Unmarshal(out.Bytes(), &g); err != nil {
		t.Fatal(err)
	}
	if g.Tokens.Weighted != 900+540+321+599.25 {
		t.Errorf("tokens.weighted = %v, want 2360.25", g.Tokens.Weighted)
	}
	llms := map[string]float64{}
	for _, n := range g.Nodes {
		if n.LLM != nil {
			llms[n.ID] = n.LLM.Weighted
		}
	}
	if want := map[string]float64{"n2": 900, "n4": 540, "n6": 321, "n10": 599.25}; !reflect.DeepEqual(llms, want) {
		t.Errorf("llm weighted = %v, want %v", llms, want)
	}
	branches := map[string]float64{}
	for _, fk := range g.Forks {
		for _, b := range fk.Branches {
			branches[b.Path] = b.Tokens.Weighted
		}
	}
	if want := map[string]float64{"x": 861, "y": 599.25, "x/p": 321}; !reflect.DeepEqual(branches, want) {
		t.Errorf("branch weighted = %v, want %v", branches, want)
	}
}
