// Package handmade records a hand-written run through the store's API: a
// run.yaml that lists the model calls another system made — each call's
// agent, system prompt and offered tools, the tools it called with their
// results, its usage — from which it builds the Chat Completions bodies
// such a system sends (the OpenAI Agents SDK's shape: a system message, the
// conversation so far, the tools after it), marked reconstructed. Fixtures
// use it for shapes our own runtime never makes: a system prompt that
// carries the current time, a tool array whose order changes between
// calls, a history cut by a compaction.
//
// The format (fixtures/cache-*/run.yaml):
//
//	source: {format: openai-agents, version: "hand-made"}
//	model: gpt-4.1-mini
//	task: What is the weather in Paris?
//	files: {agents/assistant.md: "You are …"}       # the run's project snapshot
//	tools: {get_weather: "Current weather of a city"} # every tool's description
//	calls:
//	  - agent: assistant
//	    system: "You are … Current time: 10:00:01"
//	    offer: [get_weather]                        # the tool array, in order
//	    calls: [{name: get_weather, args: '{"city":"Paris"}', result: "12°C"}]
//	    usage: {in: 1400, out: 30, cached: 0}       # as the provider reported
//	  - compact: "Summary: Paris is 12°C."          # the history is cut to this
//	  - agent: assistant
//	    say: It is 12°C in Paris.
//
// Calls are a second apart (each tool a tenth of a second); the run is one
// trunk conversation.
package handmade

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// File is the name of a hand-made run's description in its folder.
const File = "run.yaml"

type description struct {
	Source record.Source     `yaml:"source"`
	Model  string            `yaml:"model"`
	Task   string            `yaml:"task"`
	Files  map[string]string `yaml:"files"`
	Tools  map[string]string `yaml:"tools"`
	Calls  []step            `yaml:"calls"`
}

type step struct {
	Agent   string   `yaml:"agent"`
	System  string   `yaml:"system"`
	Offer   []string `yaml:"offer"`
	Calls   []call   `yaml:"calls"`
	Say     string   `yaml:"say"`
	Compact string   `yaml:"compact"`
	Usage   struct {
		In     int64  `yaml:"in"`
		Out    int64  `yaml:"out"`
		Cached *int64 `yaml:"cached"`
	} `yaml:"usage"`
}

type call struct {
	Name   string `yaml:"name"`
	Args   string `yaml:"args"`
	Result string `yaml:"result"`
}

// Exists reports whether dir holds a hand-made run.
func Exists(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, File))
	return err == nil
}

// Record records dir's run.yaml into db as run id, starting at start, and
// loads its graph.
func Record(ctx context.Context, db *store.DB, dir, id string, start time.Time) (*graph.Run, error) {
	raw, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		return nil, err
	}
	var d description
	if err := yaml.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, File), err)
	}
	run := &record.Run{ID: id, Started: start, Tasks: []string{d.Task}, Models: []string{d.Model}, Source: d.Source,
		Project: record.Project{Name: filepath.Base(dir)}}
	var paths []string
	for p := range d.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		run.Project.Files = append(run.Project.Files, record.File{Path: p, Content: d.Files[p]})
	}
	rec, err := db.CreateRun(ctx, run)
	if err != nil {
		return nil, err
	}
	at := start
	add := func(n *record.Node, d time.Duration) error {
		n.Started, n.Ended, n.Status = at, at.Add(d), record.StatusOK
		at = n.Ended
		return rec.AddNode(ctx, n)
	}
	agent := ""
	if len(d.Calls) > 0 {
		agent = d.Calls[0].Agent
	}
	if err := add(&record.Node{Kind: record.KindUser, Agent: agent, Text: d.Task}, 0); err != nil {
		return nil, err
	}
	msg := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	history := []json.RawMessage{msg(map[string]string{"role": "user", "content": d.Task})}
	k := 0
	for i, s := range d.Calls {
		if s.Compact != "" {
			history = []json.RawMessage{msg(map[string]string{"role": "user", "content": s.Compact})}
			continue
		}
		if s.Agent != "" {
			agent = s.Agent
		}
		type fn struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  map[string]any `json:"parameters"`
		}
		type tool struct {
			Type     string `json:"type"`
			Function fn     `json:"function"`
		}
		var tools []tool
		for _, name := range s.Offer {
			tools = append(tools, tool{"function", fn{name, d.Tools[name], map[string]any{"type": "object", "properties": map[string]any{}}}})
		}
		msgs := append([]json.RawMessage{msg(map[string]string{"role": "system", "content": s.System})}, history...)
		// the Agents SDK's key order: model, messages, then tools
		b, err := marshalOrdered(d.Model, msgs, tools)
		if err != nil {
			return nil, err
		}
		u := record.Usage{In: s.Usage.In, Out: s.Usage.Out}
		if s.Usage.Cached != nil {
			u.Cached, u.CachedReported = *s.Usage.Cached, true
		}
		l := &record.LLM{Model: d.Model, Usage: u, Request: b, Fidelity: record.FidelityReconstructed, Content: s.Say}
		type tcall struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		}
		var tcs []tcall
		for _, c := range s.Calls {
			k++
			tc := tcall{ID: fmt.Sprintf("call_%d", k), Type: "function"}
			tc.Function.Name, tc.Function.Arguments = c.Name, c.Args
			tcs = append(tcs, tc)
			l.Calls = append(l.Calls, c.Name)
		}
		assistant := map[string]any{"role": "assistant", "content": s.Say}
		if len(tcs) > 0 {
			assistant["tool_calls"] = tcs
		}
		l.Response = msg(map[string]any{"object": "chat.completion", "model": d.Model, "choices": []any{map[string]any{"index": 0, "message": assistant}}})
		if err := add(&record.Node{Kind: record.KindLLM, Agent: agent, LLM: l}, time.Second); err != nil {
			return nil, fmt.Errorf("call %d: %w", i+1, err)
		}
		history = append(history, msg(assistant))
		for j, c := range s.Calls {
			id := tcs[j].ID
			if err := add(&record.Node{Kind: record.KindTool, Agent: agent, Tool: &record.Tool{CallID: id, Name: c.Name, Args: c.Args, Result: c.Result}}, 100*time.Millisecond); err != nil {
				return nil, err
			}
			history = append(history, msg(map[string]string{"role": "tool", "tool_call_id": id, "content": c.Result}))
		}
		if len(s.Calls) == 0 {
			if err := add(&record.Node{Kind: record.KindFinal, Agent: agent, Text: s.Say}, 0); err != nil {
				return nil, err
			}
		}
	}
	if err := rec.Finish(ctx, record.StatusOK, "", at); err != nil {
		return nil, err
	}
	return graph.Load(ctx, db, id)
}

// marshalOrdered writes {"model","messages","tools"} in that order.
func marshalOrdered(model string, msgs []json.RawMessage, tools any) ([]byte, error) {
	m, _ := json.Marshal(model)
	ms, err := json.Marshal(msgs)
	if err != nil {
		return nil, err
	}
	b := append([]byte(`{"model":`), m...)
	b = append(append(b, `,"messages":`...), ms...)
	if t, _ := json.Marshal(tools); string(t) != "null" && string(t) != "[]" {
		b = append(append(b, `,"tools":`...), t...)
	}
	return append(b, '}'), nil
}
