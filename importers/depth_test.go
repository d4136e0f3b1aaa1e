package importers_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
)

// nested is a session whose sub-agents nest depth levels below the trunk:
// each conversation (agent a<level>) calls Task once, the sub-agent does
// the same a level down, and the deepest answers.
func nested(depth int) *importers.Session {
	var conv func(level int) *importers.Conversation
	conv = func(level int) *importers.Conversation {
		t := float64(level)
		c := &importers.Conversation{Agent: fmt.Sprintf("a%d", level), Started: at(t), Ended: at(100 - t)}
		if level == depth {
			c.Steps = []importers.Step{llm(t, t+0.5, "bottom"), final(t+0.5, "bottom")}
			return c
		}
		c.Steps = []importers.Step{
			llm(t, t+0.5, "", "Task"),
			{Fork: &importers.Fork{At: at(t + 0.5), Tool: "Task", Context: "none", JoinAt: at(99 - t), Branches: []*importers.Branch{
				{Name: "sub", Agent: fmt.Sprintf("a%d", level+1), Instructions: fmt.Sprintf("go to level %d", level+1),
					CallID: fmt.Sprintf("call_%d", level), Answer: fmt.Sprintf("answer of level %d", level+1), Conv: conv(level + 1)}}}},
			llm(99-t, 99.5-t, fmt.Sprintf("answer of level %d", level)),
			final(99.5-t, fmt.Sprintf("answer of level %d", level)),
		}
		return c
	}
	return &importers.Session{Source: src("nested"), Started: at(0), Ended: at(100), Trunk: conv(0)}
}

// TestWrite_DepthCapped: an import records sub-agents down to MaxDepth;
// those nested deeper are recorded flat in their ancestor at MaxDepth —
// their steps as its nodes, each delegation as a tool node with its
// answer and a note — and the import's report says how many (issue 23,
// item 2). Before, every level was a conversation of its own whose branch
// path repeated all its ancestors.
func TestWrite_DepthCapped(t *testing.T) {
	const extra = 4
	db := openDB(t)
	s := nested(importers.MaxDepth + extra)
	g := load(t, db, s)

	deepest := 0
	for _, n := range g.Nodes {
		deepest = max(deepest, n.Depth)
	}
	if deepest != importers.MaxDepth {
		t.Errorf("deepest node at depth %d, want %d", deepest, importers.MaxDepth)
	}
	if got, want := len(g.Conversations), importers.MaxDepth+1; got != want {
		t.Errorf("%d conversations, want %d (the trunk and one per level down to %d)", got, want, importers.MaxDepth)
	}
	var last *record.Node
	var kinds []string
	for _, c := range g.Conversations {
		if c.Depth != importers.MaxDepth {
			continue
		}
		for _, n := range c.Nodes {
			k := string(n.Kind)
			switch {
			case n.Kind == record.KindLLM:
				k += " " + n.Agent
			case n.Kind == record.KindTool:
				k += " " + n.Tool.Name + " " + n.Agent
				if !strings.Contains(n.Error, "recorded flat") || n.Status != record.StatusOK {
					t.Errorf("n%d: status %s, error %q; want ok and the note that the sub-agent was recorded flat", n.Seq, n.Status, n.Error)
				}
			}
			kinds = append(kinds, k)
			last = n.Node
		}
	}
	// a20's final is dropped (its answer is the Task result); each level's
	// closing call follows the result of the call it made.
	want := []string{"llm a16", "llm a17", "llm a18", "llm a19", "llm a20",
		"tool Task a19", "llm a19", "tool Task a18", "llm a18", "tool Task a17", "llm a17", "tool Task a16", "llm a16", "final"}
	if strings.Join(kinds, ", ") != strings.Join(want, ", ") {
		t.Errorf("the conversation at depth %d:\n got %s\nwant %s", importers.MaxDepth, strings.Join(kinds, ", "), strings.Join(want, ", "))
	}
	if last == nil || last.Kind != record.KindFinal || last.Text != "answer of level 16" {
		t.Errorf("its last node is %+v, want its own final answer", last)
	}
	for _, n := range g.Nodes {
		if n.Kind == record.KindTool && n.Tool.CallID == "call_19" && n.Tool.Result != "answer of level 20" {
			t.Errorf("the flattened delegation's result is %q, want the sub-agent's answer", n.Tool.Result)
		}
	}
	var note string
	for _, p := range s.Report.Problems {
		note += p.Err
	}
	if !strings.Contains(note, fmt.Sprintf("%d sub-agents nested deeper than %d levels recorded flat", extra, importers.MaxDepth)) {
		t.Errorf("the import's report says %q; want how many sub-agents were recorded flat", note)
	}
}
