package claudecode_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/claudecode"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/record"
)

// truth is a truth.json of shared/transcripts/claude-code/entire: what a
// script that shares no code with inspect counted in a real session's raw
// lines (its README says how).
type truth struct {
	SessionID  string      `json:"session_id"`
	CLIVersion []string    `json:"cli_version"`
	MainFile   string      `json:"main_file"`
	Main       truthConv   `json:"main"`
	Forks      []truthFork `json:"forks"`
	Branches   []truthBranch
	// Totals over the main conversation and every branch, final responses included.
	LLMResponses int         `json:"llm_responses_main_plus_branches"`
	Tokens       truthTokens `json:"tokens_main_plus_branches"`
}

type truthConv struct {
	LLMResponses int            `json:"llm_responses"`
	ToolCalls    int            `json:"tool_calls"`
	ToolErrors   int            `json:"tool_errors"`
	ToolNames    map[string]int `json:"tool_names"`
	Parallel     int            `json:"responses_with_parallel_tool_calls"`
	Tokens       truthTokens    `json:"tokens"`
	First, Last  string
}

type truthTokens struct {
	Input       int64 `json:"input_tokens"`
	CacheCreate int64 `json:"cache_creation_input_tokens"`
	CacheRead   int64 `json:"cache_read_input_tokens"`
	Output      int64 `json:"output_tokens"`
	InTotal     int64 `json:"in_total"`
}

type truthFork struct {
	Response string   `json:"response"`
	Branches []string `json:"branches"` // agent ids, else the call's tool_use id
	Parallel bool     `json:"parallel"`
}

type truthBranch struct {
	ToolUseID    string  `json:"tool_use_id"`
	AgentID      *string `json:"agent_id"`
	SubagentType string  `json:"subagent_type"`
	Description  string  `json:"description"`
	Background   bool    `json:"background"`
	Status       string  `json:"status"`
	Start, End   string
	EndFrom      string  `json:"end_from"`
	RunStart     *string `json:"run_start_by_duration"`
	Reported     *struct {
		TotalDurationMs   int64 `json:"totalDurationMs"`
		TotalToolUseCount int   `json:"totalToolUseCount"`
	} `json:"reported"`
	ContentSource string       `json:"content_source"`
	Inner         *truthConv   `json:"inner"`
	FinalUsage    *truthTokens `json:"final_response_usage_from_toolUseResult"`
	LLMInclFinal  *int         `json:"llm_responses_incl_final"`
	TokensInclFin *truthTokens `json:"tokens_incl_final"`
}

// TestEntire_Truth imports each real session of
// shared/transcripts/claude-code/entire — main transcripts whose
// sub-agents' own files are not there — and compares the run, field by
// field, with the session's truth.json, read at test time: the main
// conversation's responses, calls and tokens; each fork's branches in
// call order; each branch's agent id and type, status, window, responses,
// calls and tokens.
func TestEntire_Truth(t *testing.T) {
	root := importerstest.Sample(t, "claude-code/entire")
	for _, name := range []string{"2.1.37-fanout5-progress", "2.0.76-background8", "2.1.4-fanout-errors"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(root, name)
			b, err := os.ReadFile(filepath.Join(dir, "truth.json"))
			if err != nil {
				t.Fatal(err)
			}
			var want truth
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			checkTruth(t, filepath.Join(dir, filepath.FromSlash(want.MainFile)), &want)
		})
	}
}

func checkTruth(t *testing.T, path string, want *truth) {
	f := claudecode.Format{}
	s := importerstest.ReadOne(t, f, path, importers.Options{})
	g := importerstest.StreamAndTree(t, f, path) // the stream and the tree record one run
	if g.Source.ID != want.SessionID || len(want.CLIVersion) != 1 || g.Source.Version != want.CLIVersion[0] {
		t.Errorf("source %+v, want session %s version %v", g.Source, want.SessionID, want.CLIVersion)
	}

	// The main conversation.
	trunk := g.Trunk
	// A fork's join is where its results reached the parent: the parent's
	// own steps made while the sub-agents ran (background ones) come
	// before it, in time order, and none after it started earlier.
	for i, n := range trunk.Nodes {
		if n.Kind != record.KindJoin {
			continue
		}
		fi := slices.Index(trunk.Nodes, n.ForkOf.Node)
		for _, m := range trunk.Nodes[fi+1 : i] {
			if m.Started.After(n.Started) {
				t.Errorf("%s (%v) before the join %s (%v)", m.ID(), m.Started, n.ID(), n.Started)
			}
		}
		if i+1 < len(trunk.Nodes) && trunk.Nodes[i+1].Started.Before(n.Started) {
			t.Errorf("%s (%v) after the join %s (%v)", trunk.Nodes[i+1].ID(), trunk.Nodes[i+1].Started, n.ID(), n.Started)
		}
	}
	checkConv(t, "main", trunk, &want.Main, nil)
	if first := at(t, want.Main.First); !g.Started.Equal(first) {
		t.Errorf("run started %v, want %v", g.Started, first)
	}
	gr, db, _ := importFile(t, path)
	readable(t, gr, db) // drawn, audited, asked

	// Forks: the trunk's, in order, each with its branches in call order.
	var forks []*graph.Fork
	for _, fk := range g.Forks {
		if fk.Parent == trunk {
			forks = append(forks, fk)
		}
	}
	sforks := importerstest.Forks(s.Trunk)
	if len(forks) != len(want.Forks) || len(sforks) != len(want.Forks) {
		t.Fatalf("%d forks (session %d), want %d", len(forks), len(sforks), len(want.Forks))
	}
	byCall := map[string]*truthBranch{}
	for i := range want.Branches {
		byCall[want.Branches[i].ToolUseID] = &want.Branches[i]
	}
	paths := map[string]bool{}
	var llm int
	var tokens truthTokens
	add := func(u truthTokens) {
		tokens.Input += u.Input
		tokens.CacheCreate += u.CacheCreate
		tokens.CacheRead += u.CacheRead
		tokens.Output += u.Output
		tokens.InTotal += u.InTotal
	}
	n, u := convTokens(trunk)
	llm += n
	add(u)
	for i, wf := range want.Forks {
		fk, sf := forks[i], sforks[i]
		if len(fk.Branches) != len(wf.Branches) || len(sf.Branches) != len(wf.Branches) {
			t.Errorf("fork %d: %d branches, want %d", i+1, len(fk.Branches), len(wf.Branches))
			continue
		}
		if parallel := len(fk.Branches) > 1; parallel != wf.Parallel {
			t.Errorf("fork %d: parallel %v, want %v", i+1, parallel, wf.Parallel)
		}
		for j, id := range wf.Branches {
			sb, b := sf.Branches[j], fk.Branches[j]
			wb := byCall[sb.CallID]
			if wb == nil {
				t.Errorf("fork %d branch %d: call %s is no branch of the truth", i+1, j+1, sb.CallID)
				continue
			}
			if got := sb.ID; got != id && !(wb.AgentID == nil && id == wb.ToolUseID && got == "") {
				t.Errorf("fork %d branch %d: agent id %q, want %s", i+1, j+1, got, id)
			}
			if paths[b.Conv.Path] {
				t.Errorf("branch %s: two branches share path %q", id, b.Conv.Path)
			}
			paths[b.Conv.Path] = true
			checkBranch(t, id, b, wb)
			n, u := convTokens(b.Conv)
			llm += n
			add(u)
		}
	}
	if len(byCall) != len(want.Branches) || len(paths) != len(want.Branches) {
		t.Errorf("%d branches, want %d", len(paths), len(want.Branches))
	}
	// The truth's totals count nothing of a branch it has no steps of; the
	// run has that branch's final response, whose usage the truth gives
	// apart (final_response_usage_from_toolUseResult).
	wantLLM, wantTokens := want.LLMResponses, want.Tokens
	for _, wb := range want.Branches {
		if wb.Inner == nil && wb.FinalUsage != nil {
			u := *wb.FinalUsage
			wantLLM++
			wantTokens.Input += u.Input
			wantTokens.CacheCreate += u.CacheCreate
			wantTokens.CacheRead += u.CacheRead
			wantTokens.Output += u.Output
			wantTokens.InTotal += u.Input + u.CacheCreate + u.CacheRead
		}
	}
	if llm != wantLLM || tokens != wantTokens {
		t.Errorf("run: %d responses, tokens %+v\nwant %d, %+v", llm, tokens, wantLLM, wantTokens)
	}
}

// checkBranch compares one branch with its truth. Statuses in the truth's
// words: completed → ok, error (the call refused) → error, interrupted
// (the user interrupted the call) → cancelled, async_launched (a
// background agent) → ok once the truth saw its completion notification.
func checkBranch(t *testing.T, id string, b *graph.Branch, wb *truthBranch) {
	t.Helper()
	var status record.Status
	switch wb.Status {
	case "completed":
		status = record.StatusOK
	case "error":
		status = record.StatusError
	case "interrupted":
		status = record.StatusCancelled
	case "async_launched":
		if strings.Contains(wb.EndFrom, "completion notification") {
			status = record.StatusOK
		}
	}
	if status == "" {
		t.Fatalf("branch %s: no status for the truth's %q (%s)", id, wb.Status, wb.EndFrom)
	}
	if b.Status != status || b.Agent != wb.SubagentType {
		t.Errorf("branch %s: status %s agent %s, want %s %s", id, b.Status, b.Agent, status, wb.SubagentType)
	}
	if status == record.StatusError {
		// The refusal is its error.
		final := b.Conv.Nodes[len(b.Conv.Nodes)-1]
		if final.Kind != record.KindFinal || !strings.Contains(final.Error, "not found") || !strings.Contains(b.Answer, "Agent type '"+wb.SubagentType+"' not found") {
			t.Errorf("branch %s: error %q, answer %q", id, final.Error, b.Answer)
		}
	}
	// The window: from the result's time minus the reported duration
	// (else from the call) to the result's time.
	start := at(t, wb.Start)
	if wb.RunStart != nil {
		start = at(t, *wb.RunStart)
	}
	if end := at(t, wb.End); !b.Started.Equal(start) || !b.Started.Add(b.Duration).Equal(end) {
		t.Errorf("branch %s: window %v .. %v, want %v .. %v", id, b.Started, b.Started.Add(b.Duration), start, end)
	}
	if wb.Reported != nil && b.Duration != time.Duration(wb.Reported.TotalDurationMs)*time.Millisecond {
		t.Errorf("branch %s: duration %v, reported %dms", id, b.Duration, wb.Reported.TotalDurationMs)
	}
	// Responses, calls, tokens: the mirrored steps and the final response
	// (its usage from the parent's record), or that response alone when
	// nothing of the sub-agent's steps is in the file.
	switch {
	case wb.Inner != nil:
		inner := *wb.Inner
		inner.LLMResponses, inner.Tokens = *wb.LLMInclFinal, *wb.TokensInclFin
		checkConv(t, "branch "+id, b.Conv, &inner, wb)
		if wb.Reported != nil && inner.ToolCalls != wb.Reported.TotalToolUseCount {
			t.Errorf("branch %s: the truth mirrors %d calls, the parent reports %d", id, inner.ToolCalls, wb.Reported.TotalToolUseCount)
		}
	case wb.FinalUsage != nil:
		u := *wb.FinalUsage
		u.InTotal = u.Input + u.CacheCreate + u.CacheRead
		checkConv(t, "branch "+id, b.Conv, &truthConv{LLMResponses: 1, Tokens: u, ToolNames: map[string]int{}}, wb)
	default:
		checkConv(t, "branch "+id, b.Conv, &truthConv{ToolNames: map[string]int{}}, wb)
	}
}

// checkConv compares one conversation's nodes with the truth's counts of
// it: responses, tool calls by name (a delegation call is one, its branch
// standing for it), failed calls, responses that made several calls, tokens.
func checkConv(t *testing.T, what string, c *graph.Conversation, want *truthConv, wb *truthBranch) {
	t.Helper()
	names := map[string]int{}
	calls, failed, parallel := 0, 0, 0
	for _, n := range c.Nodes {
		switch {
		case n.Kind == record.KindTool:
			calls++
			names[n.Tool.Name]++
			if n.Status == record.StatusError || n.Status == record.StatusCancelled {
				failed++
			}
		case n.Kind == record.KindFork:
			for _, b := range n.ForkOf.Branches {
				calls++
				names[n.Fork.Tool]++
				if b.Status == record.StatusError || b.Status == record.StatusCancelled {
					failed++
				}
			}
		case n.Kind == record.KindLLM && len(n.LLM.Calls) > 1:
			parallel++
		}
	}
	llm, tokens := convTokens(c)
	if llm != want.LLMResponses || tokens != want.Tokens {
		t.Errorf("%s: %d responses, tokens %+v\nwant %d, %+v", what, llm, tokens, want.LLMResponses, want.Tokens)
	}
	if calls != want.ToolCalls || failed != want.ToolErrors || parallel != want.Parallel || !sameCounts(names, want.ToolNames) {
		t.Errorf("%s: %d calls %v, %d failed, %d responses with several; want %d %v, %d, %d", what, calls, names, failed, parallel,
			want.ToolCalls, want.ToolNames, want.ToolErrors, want.Parallel)
	}
}

// convTokens counts a conversation's responses and sums their usage in
// Anthropic's terms (input excludes cache reads and writes).
func convTokens(c *graph.Conversation) (int, truthTokens) {
	var n int
	var u truthTokens
	for _, nd := range c.Nodes {
		if nd.Kind != record.KindLLM {
			continue
		}
		n++
		us := nd.LLM.Usage
		u.InTotal += us.In
		u.CacheRead += us.Cached
		u.CacheCreate += us.CacheWrite
		u.Input += us.In - us.Cached - us.CacheWrite
		u.Output += us.Out
	}
	return n, u
}

func sameCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func at(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	return tm
}
