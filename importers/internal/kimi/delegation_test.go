package kimi

import (
	"reflect"
	"testing"

	"github.com/inspect-dev/inspect/record"
)

func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		want Args
	}{
		{"agent", `{"description": "auth", "prompt": "check auth", "subagent_type": "explore", "run_in_background": true}`,
			Args{Description: "auth", Prompt: "check auth", SubagentType: "explore", Background: true, Complete: true}},
		// The second call of the real with-subagent-collapsed wire, cut short.
		{"cut in the prompt", `{"description": "Sub agent 2: Shell 命令", "prompt": "你是一个测试用的 sub agent。\n\n完成后，`,
			Args{Description: "Sub agent 2: Shell 命令", Prompt: "你是一个测试用的 sub agent。\n\n完成后，"}},
		{"cut in the key", `{"description": "x", "pro`, Args{Description: "x"}},
		{"cut in an escape", `{"prompt": "a\u00`, Args{Prompt: "a"}},
		{"swarm", `{"description":"review","prompt_template":"Review {{item}}","items":["a.go"," b.go"],"resume_agent_ids":{"agent-3":"go on"},"fork":true}`,
			Args{Description: "review", PromptTemplate: "Review {{item}}", Items: []string{"a.go", "b.go"},
				ResumeIDs: []string{"agent-3"}, ResumePrompts: map[string]string{"agent-3": "go on"}, Fork: true, Complete: true}},
		{"legacy Task", `{"description":"d","subagent_name":"mocker","prompt":"p"}`,
			Args{Description: "d", SubagentType: "mocker", Prompt: "p", Complete: true}},
		{"not an object", `["x"]`, Args{}},
		{"empty", ``, Args{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ParseArgs(c.in); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
	a := ParseArgs(`{"prompt_template":"Review {{item}} now","items":["a","b"],"resume_agent_ids":{"agent-9":"again"}}`)
	if got, want := a.SwarmPrompts(), []string{"again", "Review a now", "Review b now"}; !reflect.DeepEqual(got, want) {
		t.Errorf("SwarmPrompts = %q, want %q", got, want)
	}
}

func TestParseResult(t *testing.T) {
	// The shape of the real results in with-subagent-collapsed/context.jsonl.
	r := ParseResult("agent_id: ac1f74988\nresumed: false\nactual_subagent_type: coder\nstatus: completed\n\n[summary]\n## report\nstatus: fine")
	if r.AgentID != "ac1f74988" || r.Type != "coder" || r.Status != "completed" || r.Summary != "## report\nstatus: fine" {
		t.Errorf("got %+v", r)
	}
	bg := ParseResult("task_id: agent-1a2b3c4d\nkind: agent\nstatus: running\ndescription: d\nagent_id: a12345678\nactual_subagent_type: explore")
	if bg.TaskID != "agent-1a2b3c4d" || bg.AgentID != "a12345678" || bg.Status != "running" || bg.Summary != "" {
		t.Errorf("background: got %+v", bg)
	}
	failed := ParseResult("agent_id: agent-2\nactual_subagent_type: coder\nstatus: failed\n\nsubagent error: Turn exceeded maxSteps=3.")
	if failed.Status != "failed" || failed.Error != "Turn exceeded maxSteps=3." {
		t.Errorf("failed: got %+v", failed)
	}
}

func TestParseSwarmResult(t *testing.T) {
	text := "<agent_swarm_result>\n<summary>completed: 1, failed: 1</summary>\n" +
		`<subagent agent_id="agent-1" item="a &amp; b" state="started" outcome="completed">done
two lines</subagent>` + "\n" +
		`<subagent mode="resume" agent_id="agent-2" outcome="failed">boom</subagent>` + "\n" +
		`<subagent item="c" state="not_started" outcome="aborted">unknown error</subagent>` + "\n</agent_swarm_result>"
	got := ParseSwarmResult(text)
	want := []SwarmEntry{
		{AgentID: "agent-1", Item: "a & b", Outcome: "completed", Body: "done\ntwo lines"},
		{AgentID: "agent-2", Outcome: "failed", Body: "boom"},
		{Item: "c", Outcome: "aborted", Body: "unknown error"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestOutcome(t *testing.T) {
	for _, c := range []struct {
		status, reason string
		want           record.Status
	}{
		{"completed", "", record.StatusOK},
		{"idle", "", record.StatusOK}, // Kimi CLI meta.json after a successful foreground run
		{"failed", "API error (500)", record.StatusError},
		{"failed", "Max steps reached", record.StatusExhausted},
		{"failed", "Turn exceeded maxSteps=40.", record.StatusExhausted},
		{"failed", "Agent timed out (600s)", record.StatusExhausted},
		{"timed_out", "", record.StatusExhausted},
		{"killed", "", record.StatusCancelled},
		{"aborted", "", record.StatusCancelled},
		{"lost", "", record.StatusInterrupted},
		{"running_foreground", "", record.StatusInterrupted},
		{"", "", record.StatusInterrupted},
	} {
		if got := Outcome(c.status, c.reason); got != c.want {
			t.Errorf("Outcome(%q, %q) = %s, want %s", c.status, c.reason, got, c.want)
		}
	}
}
