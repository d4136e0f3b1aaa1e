package ask

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/inspect-dev/inspect/ask/asktest"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/internal/llmhttp/llmhttptest"
	"github.com/inspect-dev/inspect/record"
)

const (
	planYAML = "model: gpt-4.1-mini\nagents:\n  - name: analyst\n    tools: [read_file, list_dir]\n    handoffs: [billing]\n    fork: {agents: [researcher]}\n  - name: researcher\n  - name: billing\n"
	planFork = "# Forking\n\nCall fork when several independent items need the same work: one branch per item, each with everything it needs in its instructions. Say what each branch must return.\n"
)

// recording is a Recording of fixed bodies, by node.
type recording struct {
	requests, responses map[int64][]byte
	err                 error
}

func (r *recording) Request(_ context.Context, _ string, seq int64) ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	return r.requests[seq], nil
}

func (r *recording) Response(_ context.Context, _ string, seq int64) ([]byte, error) {
	return r.responses[seq], nil
}

// planRun is a run in memory: n1 user, n2 llm (read_file), n3 tool, n4 llm
// (fork), n5 fork, n6 llm that failed; n2 and n4 record the serial and the
// fork call of testdata.
func planRun(t *testing.T, files ...record.File) (*graph.Run, *recording) {
	t.Helper()
	if files == nil {
		files = []record.File{{Path: "agents.yaml", Content: planYAML}, {Path: "agents/analyst.md", Content: oldRole}, {Path: "agents/fork-instructions.md", Content: planFork}}
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	llm := func(seq int64, calls ...string) *record.Node {
		return &record.Node{Seq: seq, Kind: record.KindLLM, Agent: "analyst", Started: at(int(seq)), Ended: at(int(seq) + 1), Status: record.StatusOK,
			LLM: &record.LLM{Model: "gpt-4.1-mini", Calls: calls}}
	}
	failed := llm(6)
	failed.Status, failed.Error = record.StatusError, "provider error 500 after 3 attempts"
	nodes := []*record.Node{
		{Seq: 1, Kind: record.KindUser, Agent: "analyst", Started: at(0), Ended: at(0), Status: record.StatusOK, Text: "Compare Q3 revenue"},
		llm(2, "read_file"),
		{Seq: 3, Kind: record.KindTool, Agent: "analyst", Started: at(3), Ended: at(3), Status: record.StatusOK, Tool: &record.Tool{Name: "read_file", CallID: "call_eu"}},
		llm(4, "fork"),
		{Seq: 5, Kind: record.KindFork, Agent: "analyst", Started: at(5), Ended: at(5), Status: record.StatusOK, Fork: &record.Fork{Context: "compact", Branches: []record.ForkBranch{{Name: "eu"}, {Name: "us"}}}},
		failed,
	}
	g, err := graph.Build(&record.Run{ID: "7f3a00000000", Status: record.StatusError, BaseURL: "scripted:demo",
		Project: record.Project{Name: "demo", Files: files}}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recording{
		requests:  map[int64][]byte{2: readTestdata(t, "serial_request.json"), 4: readTestdata(t, "fork_request.json"), 6: readTestdata(t, "fork_request.json")},
		responses: map[int64][]byte{2: readTestdata(t, "serial_response.json"), 4: readTestdata(t, "fork_response.json")},
	}
	return g, rec
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "analyst.md")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNewPlan_Modes(t *testing.T) {
	ctx := context.Background()
	g, rec := planRun(t)
	req, recorded := loadCall(t, "fork")

	t.Run("question", func(t *testing.T) {
		p, err := NewPlan(ctx, rec, g, 4, Options{})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := Question(req, recorded, DefaultQuestion(req, recorded))
		if p.Mode != ModeQuestion || !p.DefaultAsked || p.Question != DefaultQuestion(req, recorded) || !bytes.Equal(p.Body, want) {
			t.Errorf("plan = mode %s, default %v, question %q; want the default question spliced after the recording", p.Mode, p.DefaultAsked, p.Question)
		}
		if p.Recorded != "calls fork" || p.Model != "gpt-4.1-mini" || p.BaseURL != DefaultBaseURL || p.Notes != nil {
			t.Errorf("recorded %q, model %q, base %q, notes %q", p.Recorded, p.Model, p.BaseURL, p.Notes)
		}
		if got := p.Describe(); got != "asking n4 (analyst, calls fork)" {
			t.Errorf("Describe() = %q", got)
		}
	})
	t.Run("question given", func(t *testing.T) {
		p, err := NewPlan(ctx, rec, g, 4, Options{Question: "Why fork?"})
		if err != nil || p.DefaultAsked || p.Question != "Why fork?" {
			t.Fatalf("plan %+v, %v; want the given question", p, err)
		}
	})
	t.Run("replay", func(t *testing.T) {
		p, err := NewPlan(ctx, rec, g, 4, Options{Replay: true})
		if err != nil {
			t.Fatal(err)
		}
		if p.Mode != ModeReplay || p.Samples != DefaultSamples || !bytes.Equal(p.Body, req.Body) {
			t.Errorf("mode %s, samples %d: want a replay of the recorded body, %d samples", p.Mode, p.Samples, DefaultSamples)
		}
		if got := p.Describe(); got != "replaying n4 (analyst, calls fork) unchanged 5×" {
			t.Errorf("Describe() = %q", got)
		}
	})
	t.Run("prompt", func(t *testing.T) {
		file := writeFile(t, newRole)
		p, err := NewPlan(ctx, rec, g, 4, Options{PromptFile: file, Samples: 2, Model: "gpt-4.1"})
		if err != nil {
			t.Fatal(err)
		}
		want, _, _ := ReplacePrompt(req, oldRole, newRole)
		want, _ = SetModel(want, "gpt-4.1")
		if p.Mode != ModePrompt || p.RolePath != "agents/analyst.md" || p.PromptFile != file || p.Change == nil || p.Samples != 2 || !bytes.Equal(p.Body, want) {
			t.Errorf("plan = mode %s, role %q, change %v, samples %d; want agents/analyst.md replaced, 2 samples", p.Mode, p.RolePath, p.Change, p.Samples)
		}
		if p.Model != "gpt-4.1" {
			t.Errorf("Model = %q, want the --model one", p.Model)
		}
	})
}

func TestNewPlan_BaseURL(t *testing.T) {
	ctx := context.Background()
	g, rec := planRun(t)
	tests := []struct {
		name, flag, env, run, want string
	}{
		{"flag wins", "http://flag/v1/", "http://env/v1", "https://run/v1", "http://flag/v1"},
		{"env next", "", "http://env/v1/", "https://run/v1", "http://env/v1"},
		{"the run's", "", "", "https://run/v1/", "https://run/v1"},
		{"scripted run", "", "", "scripted:demo", DefaultBaseURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g.BaseURL = tt.run
			p, err := NewPlan(ctx, rec, g, 4, Options{BaseURL: tt.flag, EnvBaseURL: tt.env})
			if err != nil || p.BaseURL != tt.want {
				t.Errorf("BaseURL = %v, %v; want %q", p, err, tt.want)
			}
		})
	}
}

func TestNewPlan_Notes(t *testing.T) {
	ctx := context.Background()
	g, rec := planRun(t, record.File{Path: "agents.yaml", Content: planYAML}, record.File{Path: "agents/fork-instructions.md", Content: "# Other fork rules\n"})
	p, err := NewPlan(ctx, rec, g, 4, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "agents/fork-instructions.md is not in this call's system prompt") {
		t.Errorf("Notes = %q, want the fork instructions missing from the prompt", p.Notes)
	}
	noFork := bytes.Replace(rec.requests[4], []byte(`"name":"fork"`), []byte(`"name":"fork_not"`), 1)
	rec.requests[4] = noFork
	if p, err = NewPlan(ctx, rec, g, 4, Options{Replay: true}); err != nil {
		t.Fatal(err)
	}
	if len(p.Notes) != 1 || !strings.HasPrefix(p.Notes[0], "fork is not among this call's tools") {
		t.Errorf("Notes = %q, want fork missing from the tools", p.Notes)
	}
}

func TestNewPlan_Errors(t *testing.T) {
	ctx := context.Background()
	role := writeFile(t, newRole)
	noAnalyst := []record.File{{Path: "agents.yaml", Content: "agents:\n  - name: researcher\n  - name: billing\n"}}
	tests := []struct {
		name  string
		seq   int64
		opts  Options
		files []record.File
		input bool // an *InputError
		want  []string
	}{
		{name: "tool node", seq: 3, input: true, want: []string{"n3 is a tool node (read_file), not a model call", "the model call that made it is n2: try `inspect ask n2`", "nearest llm nodes: n2 (analyst, calls read_file), n4 (analyst, calls fork), n6 (analyst, no choice (the call ended error))"}},
		{name: "fork node", seq: 5, input: true, want: []string{"n5 is a fork node (2 branches: eu, us)", "try `inspect ask n4`"}},
		{name: "user node", seq: 1, input: true, want: []string{"the model call that answered it first is n2"}},
		{name: "no response", seq: 6, input: true, want: []string{"n6 cannot be questioned: it ended error (provider error 500 after 3 attempts) without a response", "--replay"}},
		{name: "question and replay", seq: 4, opts: Options{Question: "why?", Replay: true}, input: true, want: []string{"a question goes with the default mode only"}},
		{name: "samples alone", seq: 4, opts: Options{Samples: 3}, input: true, want: []string{"--samples goes with --replay or --prompt"}},
		{name: "too many samples", seq: 4, opts: Options{Replay: true, Samples: 101}, input: true, want: []string{"--samples must be between 1 and 100, got 101"}},
		{name: "negative timeout", seq: 4, opts: Options{Timeout: -time.Second}, input: true, want: []string{"--timeout must be positive"}},
		{name: "bad base URL", seq: 4, opts: Options{BaseURL: "localhost:11434/v1"}, input: true, want: []string{`provider base URL "localhost:11434/v1"`, "is not an http(s) URL"}},
		{name: "prompt file missing", seq: 4, opts: Options{PromptFile: filepath.Join(t.TempDir(), "none.md")}, input: true, want: []string{"--prompt: open"}},
		{name: "no agents.yaml", seq: 4, opts: Options{PromptFile: role}, files: []record.File{{Path: "x.md", Content: "x"}}, input: true, want: []string{"run 7f3a00000000 has no agents.yaml in its project snapshot, so the role file of analyst is unknown"}},
		{name: "agents.yaml broken", seq: 4, opts: Options{PromptFile: role}, files: []record.File{{Path: "agents.yaml", Content: "agents: [\n"}}, input: true, want: []string{"run 7f3a00000000: agents.yaml: yaml:"}},
		{name: "agent undeclared", seq: 4, opts: Options{PromptFile: role}, files: noAnalyst, input: true, want: []string{`agents.yaml declares no agent "analyst" (it has researcher, billing)`}},
		{name: "role file missing", seq: 4, opts: Options{PromptFile: role}, files: []record.File{{Path: "agents.yaml", Content: planYAML}}, input: true, want: []string{"project snapshot has no agents/analyst.md (the role file of analyst)"}},
		{name: "role text not in prompt", seq: 4, opts: Options{PromptFile: role}, files: []record.File{{Path: "agents.yaml", Content: planYAML}, {Path: "agents/analyst.md", Content: "# Analyst v2\n\nSomething else.\n"}}, input: true,
			want: []string{"n4: no system message of the recorded request contains the role-file text: agents/analyst.md as stored with run 7f3a00000000 is not in its system prompt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, rec := planRun(t, tt.files...)
			_, err := NewPlan(ctx, rec, g, tt.seq, tt.opts)
			var ie *InputError
			if err == nil || errors.As(err, &ie) != tt.input {
				t.Fatalf("err = %v (%T), want an input error: %v", err, err, tt.input)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %q, want it to contain %q", err, w)
				}
			}
		})
	}
	g, rec := planRun(t)
	var unknown *UnknownNodeError
	if _, err := NewPlan(ctx, rec, g, 42, Options{}); !errors.As(err, &unknown) || unknown.Seq != 42 {
		t.Errorf("unknown node: err = %v, want an *UnknownNodeError for 42", err)
	}
	stored := errors.New("no request stored")
	rec.err = stored
	if _, err := NewPlan(ctx, rec, g, 4, Options{}); !errors.Is(err, stored) || !strings.HasPrefix(err.Error(), "n4: ") {
		t.Errorf("recording error: err = %v, want it wrapped, naming n4", err)
	}
}

func TestPlan_Send(t *testing.T) {
	ctx := context.Background()
	g, rec := planRun(t)
	t.Run("dry run", func(t *testing.T) {
		g.BaseURL = "https://user:secret@api.example.invalid/v1"
		defer func() { g.BaseURL = "scripted:demo" }()
		p, err := NewPlan(ctx, rec, g, 4, Options{PromptFile: writeFile(t, newRole), DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		var out, log bytes.Buffer
		a, err := p.Send(ctx, SendOptions{Out: &out, Log: &log})
		if err != nil || a != nil {
			t.Fatalf("Send = %v, %v; want nothing to store", a, err)
		}
		if !bytes.Equal(out.Bytes(), p.Body) {
			t.Errorf("stdout is not the body exactly")
		}
		for _, w := range []string{"dry run: replaying n4 (analyst, calls fork) with agents/analyst.md replaced 5× would POST this body (model gpt-4.1-mini) to https://api.example.invalid/v1/chat/completions\n",
			"agents/analyst.md: messages[0] (system): role-file text replaced", "  - Read regions/index.md first to find the regions."} {
			if !strings.Contains(log.String(), w) {
				t.Errorf("log = %q, want it to contain %q", log.String(), w)
			}
		}
		if strings.Contains(log.String(), "secret") {
			t.Error("the base URL's password was printed")
		}
	})
	t.Run("no key", func(t *testing.T) {
		p, _ := NewPlan(ctx, rec, g, 4, Options{})
		_, err := p.Send(ctx, SendOptions{Out: new(bytes.Buffer), Log: new(bytes.Buffer)})
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), "OPENAI_API_KEY is not set") {
			t.Errorf("err = %v, want an input error about the key", err)
		}
	})
	t.Run("question", func(t *testing.T) {
		srv := asktest.New(t, testKey)
		srv.Register("question", asktest.ToolChoiceNone, asktest.Answer(asktest.Reply{Content: "Because of " + testKey + ".",
			Usage: &openai.Usage{PromptTokens: 12345, CompletionTokens: 21, PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: 1024}}}))
		p, err := NewPlan(ctx, rec, g, 4, Options{BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		var out, log bytes.Buffer
		a, err := p.Send(ctx, SendOptions{Key: testKey, Out: &out, Log: &log, Tune: func(c *Client) { c.Clock = llmhttptest.NewClock(time.Now()) }})
		if err != nil {
			t.Fatal(err)
		}
		srv.Verify(t)
		if out.String() != "Because of [redacted].\n" {
			t.Errorf("stdout = %q, want the scrubbed answer and a newline", out.String())
		}
		if !strings.Contains(log.String(), "question: I am reviewing") || !strings.Contains(log.String(), "12,345 tokens in (1,024 cached) · 21 out") {
			t.Errorf("log = %q", log.String())
		}
		if a.Mode != ModeQuestion || a.Answer != "Because of [redacted]." || a.BaseURL != srv.URL || a.Question != p.Question {
			t.Errorf("Asked = %+v", a)
		}
	})
	t.Run("replay", func(t *testing.T) {
		srv := asktest.New(t, testKey)
		srv.Register("replay", nil, asktest.Answer(asktest.Reply{ToolCalls: []openai.ToolCall{asktest.Call("c", "fork", `{}`)}}))
		p, err := NewPlan(ctx, rec, g, 2, Options{Replay: true, Samples: 3, EnvBaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		var out, log bytes.Buffer
		a, err := p.Send(ctx, SendOptions{Key: testKey, Out: &out, Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		if out.String() != "calls fork 3/3 (recorded: calls read_file)\n" || !strings.Contains(log.String(), "0 of 3 samples made the recorded choice (calls read_file)") {
			t.Errorf("stdout %q, log %q", out.String(), log.String())
		}
		if a.Mode != ModeReplay || a.Question != "replay 3× unchanged" || a.Answer != "calls fork 3/3 (recorded: calls read_file)" {
			t.Errorf("Asked = %+v", a)
		}
	})
}
