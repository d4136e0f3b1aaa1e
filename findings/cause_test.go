package findings_test

import (
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/stack"
)

// failedBranchRun is a run of our runtime whose analyst forks branches eu
// (ok) and us, which ends with status st: with a model call unless
// noModel, then a read_file call that failed with toolErr when it is set,
// then its final, whose error is why.
func failedBranchRun(t *testing.T, st record.Status, why, toolErr string, noModel bool) *graph.Run {
	t.Helper()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var nodes []*record.Node
	add := func(n *record.Node) *record.Node {
		n.Seq = int64(len(nodes) + 1)
		if n.Status == "" {
			n.Status = record.StatusOK
		}
		if n.Agent == "" {
			n.Agent = "analyst"
		}
		nodes = append(nodes, n)
		return n
	}
	add(&record.Node{Kind: record.KindUser, Text: "Compare the regions", Started: at(0), Ended: at(0)})
	f := add(&record.Node{Kind: record.KindFork, Started: at(0), Ended: at(0), Fork: &record.Fork{Context: "none", Branches: []record.ForkBranch{
		{Name: "eu", Agent: "analyst", Instructions: "Total the EU."}, {Name: "us", Agent: "analyst", Instructions: "Total the US."}}}})
	add(&record.Node{Kind: record.KindLLM, Branch: "eu", ForkSeq: f.Seq, Depth: 1, Started: at(0), Ended: at(100), LLM: &record.LLM{Usage: record.Usage{In: 100, Out: 5}}})
	add(&record.Node{Kind: record.KindFinal, Branch: "eu", ForkSeq: f.Seq, Depth: 1, Started: at(100), Ended: at(100), Text: "4.2M"})
	if !noModel {
		add(&record.Node{Kind: record.KindLLM, Branch: "us", ForkSeq: f.Seq, Depth: 1, Started: at(0), Ended: at(100), LLM: &record.LLM{Usage: record.Usage{In: 100, Out: 5}, Calls: []string{"read_file"}}})
	}
	if toolErr != "" {
		add(&record.Node{Kind: record.KindTool, Branch: "us", ForkSeq: f.Seq, Depth: 1, Started: at(100), Ended: at(150), Status: record.StatusError, Error: toolErr,
			Tool: &record.Tool{Name: "read_file", Args: `{"path":"regions/us.md"}`, Result: toolErr, Research: true}})
	}
	add(&record.Node{Kind: record.KindFinal, Branch: "us", ForkSeq: f.Seq, Depth: 1, Started: at(150), Ended: at(150), Status: st, Error: why})
	add(&record.Node{Kind: record.KindJoin, Started: at(150), Ended: at(150), Join: &record.Join{ForkSeq: f.Seq, Branches: []record.JoinBranch{
		{Name: "eu", Agent: "analyst", Status: record.StatusOK, Duration: 100 * time.Millisecond, Answer: "4.2M"},
		{Name: "us", Agent: "analyst", Status: st, Duration: 150 * time.Millisecond, Answer: why}}}})
	r := &record.Run{ID: "failed", Status: record.StatusOK, Started: t0, Ended: at(150),
		Project: record.Project{Name: "p", Files: []record.File{
			{Path: "agents.yaml", Content: "agents:\n  - name: analyst\n    tools: [read_file]\n    fork: {agents: [analyst]}\n"},
			{Path: "agents/analyst.md", Content: "You total regions.\nFork one branch per region.\n"}}}}
	g, err := graph.Build(r, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestBranchFailed_Cause: branch.failed names what made a branch fail, and
// only a prompt cause is told to put facts into the instructions. Before,
// every failed branch — a 500 from the provider, a step limit — got that
// prompt advice, and the JSON had no cause.
func TestBranchFailed_Cause(t *testing.T) {
	const promptAdvice = "put every fact"
	for _, tt := range []struct {
		name           string
		status         record.Status
		why, toolErr   string
		noModel        bool
		profile        *stack.Profile // nil: our runtime
		cause          string
		fixHas, fixNot string
	}{
		{name: "three HTTP 500s", status: record.StatusError, why: "model call failed with HTTP 500 after 3 retries: internal server error",
			cause: findings.CauseProvider, fixHas: "retries", fixNot: promptAdvice},
		{name: "overloaded 529", status: record.StatusError, why: `API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			cause: findings.CauseProvider, fixHas: "fall back", fixNot: promptAdvice},
		{name: "timeout", status: record.StatusError, why: "request timed out after 600s",
			cause: findings.CauseProvider, fixNot: promptAdvice},
		// Gemini CLI records Google's error body as the sub-agent's failure
		// (testdata/agents/gemini/subagent-fails): before, cause prompt.
		{name: "Gemini CLI's Google error", status: record.StatusError, profile: stack.GeminiCLI,
			why:   `Subagent 'generalist' failed. Error: {"error":{"code":400,"message":"scripted failure of t1 at step 0","status":"INVALID_ARGUMENT"}}`,
			cause: findings.CauseProvider, fixHas: "a retry of the same request will not help: check the model (gemini --model, or model.name in .gemini/settings.json), GEMINI_API_KEY", fixNot: promptAdvice},
		{name: "Gemini CLI's unavailable model", status: record.StatusError, profile: stack.GeminiCLI,
			why:   `Subagent 'generalist' failed. Error: {"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`,
			cause: findings.CauseProvider, fixHas: "Gemini CLI retries 429 and 5xx answers itself", fixNot: "will not help"},
		{name: "Gemini CLI's quota, no code", status: record.StatusError, profile: stack.GeminiCLI,
			why:   `Subagent 'generalist' failed. Error: {"error":{"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}`,
			cause: findings.CauseProvider, fixHas: "fall back to another model (gemini --model", fixNot: "will not help"},
		// a sentence's "not found" is no Google status
		{name: "a lower-case not found", status: record.StatusError, profile: stack.GeminiCLI, why: "the figures were not found in any file",
			cause: findings.CausePrompt, fixHas: promptAdvice},
		// Codex (testdata/agents/codex/subagent-fails): an OpenAI 400, no retry
		{name: "Codex's invalid request", status: record.StatusError, profile: stack.Codex,
			why:   `the sub-agent's turn failed: {"error":{"message":"scripted failure of t1 at step 0","type":"invalid_request_error"},"type":"error"}`,
			cause: findings.CauseProvider, fixHas: "will not help: check the model (codex --model, or model in ~/.codex/config.toml)", fixNot: promptAdvice},
		{name: "Codex's 500", status: record.StatusError, profile: stack.Codex, why: "stream error: HTTP 500 Internal Server Error",
			cause: findings.CauseProvider, fixHas: "request_max_retries", fixNot: "will not help"},
		// Claude Code (testdata/agents/claude/subagent-fails): a 400 Claude Code does not retry
		{name: "Claude Code's 400", status: record.StatusError, profile: stack.ClaudeCode,
			why:   "Agent terminated early due to an API error: API Error: 400 scripted failure of t1 at step 0 (error type unknown, HTTP 400)",
			cause: findings.CauseProvider, fixHas: "will not help: check the model (claude --model", fixNot: "retried it itself"},
		{name: "Claude Code's 529", status: record.StatusError, profile: stack.ClaudeCode, why: `API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			cause: findings.CauseProvider, fixHas: "Claude Code retried it itself", fixNot: "will not help"},
		{name: "step limit", status: record.StatusExhausted, why: "maxSteps (2) reached",
			cause: findings.CauseLimit, fixHas: "maxSteps", fixNot: promptAdvice},
		{name: "turn limit by its words", status: record.StatusError, why: "the sub-agent reached its limit (max_turns)",
			cause: findings.CauseLimit, fixNot: promptAdvice},
		{name: "ended on a failing tool", status: record.StatusError, why: "the branch stopped", toolErr: "open regions/us.md: permission denied",
			cause: findings.CauseTool, fixHas: "tool read_file", fixNot: promptAdvice},
		{name: "a denied call", status: record.StatusError, why: "The user doesn't want to proceed with this tool use.",
			cause: findings.CauseRejected, fixNot: promptAdvice},
		{name: "gave up for want of facts", status: record.StatusError, why: "I do not know which file holds the US figures",
			cause: findings.CausePrompt, fixHas: promptAdvice},
		// no model call ran and the reason names no agent type: not a refused
		// delegation, whatever "not found" says
		{name: "a file not found before any model call", status: record.StatusError, why: "regions/us.md not found", noModel: true,
			cause: findings.CausePrompt, fixHas: promptAdvice},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := failedBranchRun(t, tt.status, tt.why, tt.toolErr, tt.noModel)
			cfg := &findings.Config{Rules: rules.All}
			if tt.profile != nil {
				g.Source = record.Source{Format: tt.profile.Format}
				cfg.Profile = tt.profile
			}
			rep, err := cfg.Audit(g)
			if err != nil {
				t.Fatal(err)
			}
			var got []findings.Finding
			for _, f := range rep.Findings {
				if f.Rule == "branch.failed" {
					got = append(got, f)
				}
				if f.Rule == "delegation.rejected" {
					t.Errorf("delegation.rejected on a branch whose call was not refused: %s", f.Message)
				}
			}
			if len(got) != 1 {
				t.Fatalf("%d branch.failed findings, want 1:\n%s", len(got), dump(rep))
			}
			f := got[0]
			if f.Cause != tt.cause {
				t.Errorf("cause = %q, want %q (%s)", f.Cause, tt.cause, f.Message)
			}
			if !strings.Contains(f.Message, "(cause: "+tt.cause+")") {
				t.Errorf("message %q does not name the cause", f.Message)
			}
			if tt.fixHas != "" && !strings.Contains(f.Fix.Text, tt.fixHas) {
				t.Errorf("fix %q lacks %q", f.Fix.Text, tt.fixHas)
			}
			if tt.fixNot != "" && strings.Contains(f.Fix.Text, tt.fixNot) {
				t.Errorf("fix %q gives prompt advice to a %s cause", f.Fix.Text, tt.cause)
			}
		})
	}
}

// TestBranchFailed_CauseOfFixtures: the recorded fixtures' failed branches
// carry the cause their scripts and sessions give them, by hand: the
// runtime's scripted 500s are the provider's, its step limit a limit; the
// real Claude Code sub-agent that died on an API error the provider's.
func TestBranchFailed_CauseOfFixtures(t *testing.T) {
	for name, want := range map[string]string{
		"audit-branch-failed":           findings.CauseProvider, // us: error 500 at its second model call
		"audit-branch-failed-nested":    findings.CauseProvider, // amer/ca: error 500
		"audit-branch-failed-exhausted": findings.CauseLimit,    // us: both of maxSteps' 2 calls spent
		"audit-branch-failed-provider":  findings.CauseProvider, // Claude Code: "API Error: 400 …"
		// Gemini CLI: Google's {"error":{"code":400,…,"status":"INVALID_ARGUMENT"}}
		"audit-branch-failed-provider-gemini": findings.CauseProvider,
		// Codex: OpenAI's {"error":{…,"type":"invalid_request_error"}}
		"audit-branch-failed-provider-codex": findings.CauseProvider,
	} {
		rep := recordFixture(t, name).audit(t)
		n := 0
		for _, f := range rep.Findings {
			if f.Rule != "branch.failed" {
				continue
			}
			n++
			if f.Cause != want {
				t.Errorf("%s: cause %q, want %q (%s)", name, f.Cause, want, f.Message)
			}
		}
		if n != 1 {
			t.Errorf("%s: %d branch.failed findings, want 1", name, n)
		}
	}
}

// TestDelegationRejected_TypesThatExist: a refused sub-agent type gets a
// fix naming the types that exist and the name the type exists under,
// in the stack's files. The real session is Claude Code 2.1.4's
// (shared/transcripts … 2.1.4-fanout-errors, excerpted here as the
// refusal text it recorded): three researcher types asked for without the
// plugin's namespace.
func TestDelegationRejected_TypesThatExist(t *testing.T) {
	why := "the call was refused: Agent type 'repo-research-analyst' not found. Available agents: Bash, general-purpose, Explore, Plan, entire-engineering:research:repo-research-analyst, entire-engineering:research:best-practices-researcher"
	g := failedBranchRun(t, record.StatusError, why, "", true)
	g.Source = record.Source{Format: "claude-code"}
	for _, fk := range g.Forks {
		for _, b := range fk.Branches {
			if b.Name == "us" {
				b.Agent = "repo-research-analyst"
			}
		}
	}
	rep, err := (&findings.Config{Rules: rules.All, Profile: stack.ClaudeCode}).Audit(g)
	if err != nil {
		t.Fatal(err)
	}
	var got []findings.Finding
	for _, f := range rep.Findings {
		switch f.Rule {
		case "delegation.rejected":
			got = append(got, f)
		case "branch.failed":
			t.Errorf("the refusal is also a failed branch: %s", f.Message)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d delegation.rejected findings, want 1:\n%s", len(got), dump(rep))
	}
	f := got[0]
	for _, s := range []string{`ask for "entire-engineering:research:repo-research-analyst"`, "Bash, general-purpose, Explore, Plan", ".claude/agents/repo-research-analyst.md"} {
		if !strings.Contains(f.Fix.Text, s) {
			t.Errorf("fix %q lacks %q", f.Fix.Text, s)
		}
	}
	if f.Cause != findings.CauseRejected || f.Severity != findings.Error || f.Area != findings.Delegation {
		t.Errorf("cause %q, severity %s, area %s", f.Cause, f.Severity, f.Area)
	}
	// turned off, the refusal is branch.failed's again, with its cause
	o := findings.NewOptions(rules.All)
	if err := o.TurnOff("delegation.rejected", "test"); err != nil {
		t.Fatal(err)
	}
	rep, err = (&findings.Config{Rules: rules.All, Options: o, Profile: stack.ClaudeCode}).Audit(g)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range rep.Findings {
		if f.Rule == "branch.failed" {
			n++
			if f.Cause != findings.CauseRejected {
				t.Errorf("with delegation.rejected off, branch.failed's cause is %q, want rejected", f.Cause)
			}
		}
	}
	if n != 1 {
		t.Errorf("with delegation.rejected off, %d branch.failed findings, want 1", n)
	}
}
