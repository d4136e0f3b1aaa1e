package geminicli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/geminicli"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/record"
)

// The fixtures are Gemini CLI 0.61's own files, left by the harness's
// scenarios (testdata/agents/gemini); importers/all compares every one
// with the scripted server's log. These tests pin what the format's
// oddities make of them.

func session(t *testing.T, scenario string) (*importerstest.AgentsRun, string) {
	t.Helper()
	run := importerstest.ReadAgentsRun(t, filepath.Join(importerstest.AgentsRoot(t), "gemini", scenario))
	ps := run.Session("*/chats/session-*.jsonl")
	if len(ps) == 0 {
		t.Fatalf("no session file in %s", run.Dir)
	}
	return run, ps[0]
}

func read(t *testing.T, path string) *importers.Session {
	t.Helper()
	ss, err := geminicli.Format{}.Read(context.Background(), path, importers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 {
		t.Fatalf("%d sessions", len(ss))
	}
	return ss[0]
}

func TestDetect(t *testing.T) {
	_, p := session(t, "parallel-reads")
	if !(geminicli.Format{}).Detect(p) {
		t.Errorf("%s not detected", p)
	}
	claude, _ := filepath.Glob(filepath.Join(importerstest.AgentsRoot(t), "claude", "parallel-reads", "session", "*", "*.jsonl"))
	codex, _ := filepath.Glob(filepath.Join(importerstest.AgentsRoot(t), "codex", "parallel-reads", "session", "*", "*", "*", "*.jsonl"))
	for _, p := range append(claude, codex...) {
		if (geminicli.Format{}).Detect(p) {
			t.Errorf("%s detected as a Gemini CLI session", p)
		}
	}
	// a single-JSON session file of earlier versions
	old := filepath.Join(t.TempDir(), "session-old.json")
	os.WriteFile(old, []byte(`{
  "sessionId": "s1", "projectHash": "h", "startTime": "2025-01-01T00:00:00.000Z", "lastUpdated": "2025-01-01T00:00:01.000Z",
  "messages": [
    {"id": "u1", "timestamp": "2025-01-01T00:00:00.100Z", "type": "user", "content": "hello"},
    {"id": "g1", "timestamp": "2025-01-01T00:00:00.900Z", "type": "gemini", "content": "hi", "model": "gemini-2.5-pro",
     "tokens": {"input": 10, "output": 2, "cached": 4, "thoughts": 1}}
  ]
}`), 0o644)
	if !(geminicli.Format{}).Detect(old) {
		t.Fatal("a single-JSON session file is not detected")
	}
	s := read(t, old)
	var llm *importers.LLM
	for _, st := range s.Trunk.Steps {
		if st.LLM != nil {
			llm = st.LLM
		}
	}
	if llm == nil || llm.Usage.In != 10 || llm.Usage.Cached != 4 || llm.Usage.Out != 3 || llm.Usage.Reasoning != 1 || llm.Content != "hi" {
		t.Errorf("single-JSON session: %+v", llm)
	}
	if s.Trunk.Status != record.StatusOK || len(s.Tasks) != 1 || s.Tasks[0] != "hello" {
		t.Errorf("single-JSON session: status %s, tasks %q", s.Trunk.Status, s.Tasks)
	}
}

// A resumed session writes its whole history again from memory: new
// timestamps, and the tool calls only as content parts. The first run's
// records, with their tool calls and times, are what counts.
func TestResumed_KeepsTheFirstRecords(t *testing.T) {
	run, p := session(t, "compaction")
	if len(run.Prompts) < 2 {
		t.Fatalf("the scenario resumes its session: %d prompts", len(run.Prompts))
	}
	s := read(t, p)
	var tools []string
	for _, st := range s.Trunk.Steps {
		if st.Tool != nil {
			tools = append(tools, st.Tool.Name)
		}
	}
	reads := 0
	for _, e := range run.Scripted(run.Plan.Trunk...) {
		for _, c := range e.Calls {
			if c == "read_file" {
				reads++
			}
		}
	}
	if len(tools) != reads {
		t.Errorf("tool calls %q, the log answered %d read_file calls", tools, reads)
	}
	if len(s.Tasks) != len(run.Prompts) {
		t.Errorf("user turns %q, want one per prompt %q", s.Tasks, run.Prompts)
	}
}

// The user interrupted the session while its sub-agent ran: the call is
// written only once it returns, so the main chat has no invoke_agent call;
// the sub-agent's chat is there, and is the branch of an interrupted fork.
func TestInterrupted_SubagentWithoutItsCall(t *testing.T) {
	_, p := session(t, "subagent-interrupted")
	s := read(t, p)
	var fork *importers.Fork
	var last *importers.LLM
	for _, st := range s.Trunk.Steps {
		if st.Fork != nil {
			fork = st.Fork
		}
		if st.LLM != nil {
			last = st.LLM
		}
	}
	if fork == nil || len(fork.Branches) != 1 {
		t.Fatalf("no fork with the sub-agent: %+v", fork)
	}
	b := fork.Branches[0]
	if !strings.Contains(b.Instructions, "[task:t1]") || b.Conv.Status != record.StatusInterrupted {
		t.Errorf("branch %q: instructions %q, status %s", b.Name, b.Instructions, b.Conv.Status)
	}
	if last == nil || len(last.Calls) != 1 || last.Calls[0] != "invoke_agent" {
		t.Errorf("the response that asked for it: %+v", last)
	}
	if s.Trunk.Status != record.StatusInterrupted {
		t.Errorf("trunk %s, want interrupted", s.Trunk.Status)
	}
}

// A refused invoke_agent (an unknown agent_name) starts no sub-agent: a
// branch in error, with the CLI's message.
func TestRefused(t *testing.T) {
	_, p := session(t, "subagent-refused")
	s := read(t, p)
	for _, st := range s.Trunk.Steps {
		if st.Fork != nil {
			b := st.Fork.Branches[0]
			if b.Conv.Status != record.StatusError || !strings.Contains(b.Conv.Error, "not found") || len(b.Conv.Steps) != 0 {
				t.Errorf("refused branch: %s %q, %d steps", b.Conv.Status, b.Conv.Error, len(b.Conv.Steps))
			}
			return
		}
	}
	t.Fatal("no fork")
}

func TestNewest(t *testing.T) {
	home := t.TempDir()
	work := t.TempDir()
	chats := filepath.Join(home, ".gemini", "tmp", "work", "chats")
	os.MkdirAll(chats, 0o755)
	os.WriteFile(filepath.Join(home, ".gemini", "tmp", "work", ".project_root"), []byte(work), 0o644)
	_, p := session(t, "parallel-reads")
	b, _ := os.ReadFile(p)
	want := filepath.Join(chats, "session-2026-01-01T00-00-abc.jsonl")
	os.WriteFile(want, b, 0o644)
	getenv := func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	got, err := geminicli.Format{}.Newest(work, getenv)
	if err != nil || got != want {
		t.Errorf("Newest = %q, %v; want %q", got, err, want)
	}
	if _, err := (geminicli.Format{}).Newest(t.TempDir(), getenv); err == nil {
		t.Error("a folder with no session found one")
	}
}

// When Gemini CLI applies a compression (not every /compress does: it
// keeps the old history when the summary would not make it smaller, as in
// the committed compaction fixture), it starts a chat from the summary and
// writes the list again ("$set" messages): the <state_snapshot> as a user
// message, its own "Got it. Thanks for the additional context!" with no
// model and no tokens, and the history it kept under new ids (chatRecording
// Service.updateMessagesFromHistory in 0.61). The real fixture with that
// list added where the CLI writes it, before the /compress turn: the
// summary is a compaction, not a user turn; the CLI's words and the copies
// are no model calls.
func TestCompressed_SummaryIsACompaction(t *testing.T) {
	run, p := session(t, "compaction")
	// a fresh harness run (INSPECT_AGENTS_OUT) may be one whose compression
	// the CLI applied: then its own file is the case
	for _, st := range read(t, p).Trunk.Steps {
		if st.Compact != nil {
			checkCompressed(t, run, p, st.Compact.Summary)
			return
		}
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	at := -1
	var contextMsg, kept json.RawMessage
	for i, l := range lines {
		if strings.Contains(l, `"text": "/compress"`) || strings.Contains(l, `"text":"/compress"`) {
			at = i
			break
		}
		var set struct {
			Set struct {
				Messages []json.RawMessage `json:"messages"`
			} `json:"$set"`
		}
		if json.Unmarshal([]byte(l), &set) == nil && len(set.Set.Messages) > 0 {
			contextMsg = set.Set.Messages[0]
		}
		var m struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.Type == "user" && strings.Contains(string(m.Content), "functionResponse") {
			kept = m.Content // the last tool result, kept by the compression
		}
	}
	if at < 0 || contextMsg == nil || kept == nil {
		t.Fatalf("the fixture has no /compress turn after a resumed history (%d)", at)
	}
	const snapshot = "<state_snapshot>\nThe files read so far hold lines of their own names.\n</state_snapshot>"
	set, _ := json.Marshal(map[string]any{"$set": map[string]any{"messages": []any{
		contextMsg,
		map[string]any{"id": "c0mpre55-0001", "timestamp": "2026-12-02T05:25:17.890Z", "type": "user", "content": []any{map[string]string{"text": snapshot}}},
		map[string]any{"id": "c0mpre55-0002", "timestamp": "2026-12-02T05:25:17.890Z", "type": "gemini", "content": []any{map[string]string{"text": "Got it. Thanks for the additional context!"}}},
		map[string]any{"id": "c0mpre55-0003", "timestamp": "2026-12-02T05:25:17.890Z", "type": "user", "content": kept},
		map[string]any{"id": "c0mpre55-0004", "timestamp": "2026-12-02T05:25:17.890Z", "type": "gemini", "content": []any{map[string]string{"text": "a.txt and b.txt read."}}},
	}}})
	out := strings.Join(lines[:at], "") + string(set) + "\n" + strings.Join(lines[at:], "")
	q := filepath.Join(t.TempDir(), "chats", filepath.Base(p))
	os.MkdirAll(filepath.Dir(q), 0o755)
	if err := os.WriteFile(q, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}

	checkCompressed(t, run, q, snapshot)
}

// checkCompressed checks the session at path, whose main chat was compressed
// with summary snapshot, against the run's log.
func checkCompressed(t *testing.T, run *importerstest.AgentsRun, path, snapshot string) {
	t.Helper()
	s := read(t, path)
	if len(s.Tasks) != len(run.Prompts) {
		t.Errorf("user turns %q, want one per prompt %q", s.Tasks, run.Prompts)
	}
	var compacts []string
	var calls [][]string
	var users []string
	for _, st := range s.Trunk.Steps {
		switch {
		case st.Compact != nil:
			compacts = append(compacts, st.Compact.Summary)
		case st.LLM != nil:
			calls = append(calls, st.LLM.Calls)
		case st.User != nil:
			users = append(users, st.User.Text)
		}
	}
	if len(compacts) != 1 || compacts[0] != snapshot {
		t.Errorf("compactions %q, want the snapshot once", compacts)
	}
	// the model calls are the log's, one for one: no "Got it", no copy
	var logged [][]string
	for _, e := range run.Scripted(run.Plan.Trunk...) {
		logged = append(logged, e.Calls)
	}
	if len(calls) != len(logged) {
		t.Errorf("model calls %q, the log answered %q", calls, logged)
	}
	for _, u := range users {
		if strings.Contains(u, "state_snapshot") {
			t.Errorf("the summary is a user turn: %q", u)
		}
	}
}
