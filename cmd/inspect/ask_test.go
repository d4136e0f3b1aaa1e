package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/inspect-dev/inspect/ask"
	"github.com/inspect-dev/inspect/ask/asktest"
	"github.com/inspect-dev/inspect/internal/llmhttp/llmhttptest"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime"
	"github.com/inspect-dev/inspect/store"
)

const askTestKey = "fake-key-inspect-3b9f51c2d8e04a7f"

const (
	askHouse = "# House rules\n\nBe brief. Cite the file every number comes from.\n"
	askRole  = "# Analyst\n\nYou answer revenue questions by reading the regional reports.\nRead regions/index.md first.\n"
	askForks = "# Forking\n\nCall fork when independent items need the same work, one branch per item.\n"
	askYAML  = "model: gpt-4.1-mini\nagents:\n  - name: analyst\n    description: Answers revenue questions.\n    tools: [read_file]\n    fork: {agents: [analyst]}\n"
)

// askSystem composes a system prompt the way the runtime does.
func askSystem() string {
	return strings.Join([]string{strings.TrimSpace(askHouse), strings.TrimSpace(askRole), strings.TrimSpace(askForks)}, "\n\n")
}

func askTools() []openai.Tool {
	path := map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []string{"path"}}
	fork := map[string]any{"type": "object", "properties": map[string]any{
		"context":  map[string]any{"type": "string", "enum": []string{"inherit", "compact", "none"}},
		"branches": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}, "instructions": map[string]any{"type": "string"}}}},
	}, "required": []string{"branches"}}
	return []openai.Tool{
		{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "read_file", Description: "Read a workspace file.", Parameters: path}},
		{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "fork", Description: "Run independent work in parallel branches.", Parameters: fork}},
	}
}

func askCompletion(msg openai.ChatCompletionMessage) []byte {
	finish := openai.FinishReasonStop
	if len(msg.ToolCalls) > 0 {
		finish = openai.FinishReasonToolCalls
	}
	b, _ := json.Marshal(openai.ChatCompletionResponse{ID: "chatcmpl-rec", Object: "chat.completion", Model: "gpt-4.1-mini",
		Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: finish}}, Usage: openai.Usage{PromptTokens: 400, CompletionTokens: 40, TotalTokens: 440}})
	return b
}

// askRecordRun records a small run the way the runtime does: n1 user,
// n2 llm (read_file), n3 tool, n4 llm (fork), n5 fork, n6 llm failed, and
// returns its id.
func askRecordRun(t *testing.T, f *Factory) string {
	t.Helper()
	ctx := context.Background()
	db, err := f.Store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rec, err := db.CreateRun(ctx, &record.Run{Started: t0, Tasks: []string{"Compare Q3 revenue across EU, US and APAC"},
		BaseURL: "https://user:" + askTestKey + "@api.example.invalid/v1",
		Project: record.Project{Name: "demo", Files: []record.File{
			{Path: "agents.yaml", Content: askYAML},
			{Path: "agents/analyst.md", Content: askRole},
			{Path: "agents/fork-instructions.md", Content: askForks},
			{Path: "agents/house-rules.md", Content: askHouse},
		}}, Models: []string{"gpt-4.1-mini"}})
	if err != nil {
		t.Fatal(err)
	}
	task := "Compare Q3 revenue across EU, US and APAC"
	msgs := []openai.ChatCompletionMessage{{Role: "system", Content: askSystem()}, {Role: "user", Content: task}}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	add := func(n *record.Node) {
		t.Helper()
		if err := rec.AddNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	llm := func(start int, reply openai.ChatCompletionMessage, fail string) *record.Node {
		t.Helper()
		body, _ := json.Marshal(openai.ChatCompletionRequest{Model: "gpt-4.1-mini", Messages: msgs, Tools: askTools()})
		n := &record.Node{Kind: record.KindLLM, Agent: "analyst", Started: at(start), LLM: &record.LLM{Model: "gpt-4.1-mini", Request: body}}
		if err := rec.StartNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		n.Ended = at(start + 1)
		if fail != "" {
			n.Status, n.Error = record.StatusError, fail
		} else {
			n.LLM.Response = askCompletion(reply)
			n.LLM.Content = reply.Content
			for _, tc := range reply.ToolCalls {
				n.LLM.Calls = append(n.LLM.Calls, tc.Function.Name)
			}
			n.LLM.Usage = record.Usage{In: 400, Out: 40}
		}
		if err := rec.FinishNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	add(&record.Node{Kind: record.KindUser, Agent: "analyst", Started: at(0), Text: task})
	read := openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "call_1", Type: "function", Function: openai.FunctionCall{Name: "read_file", Arguments: `{"path":"regions/index.md"}`}}}}
	llm(0, read, "")
	add(&record.Node{Kind: record.KindTool, Agent: "analyst", Started: at(1), Tool: &record.Tool{CallID: "call_1", Name: "read_file", Args: `{"path":"regions/index.md"}`, Result: "eu, us, apac", Research: true}})
	msgs = append(msgs, read, openai.ChatCompletionMessage{Role: "tool", ToolCallID: "call_1", Content: "eu, us, apac"})
	forkArgs := `{"context":"compact","branches":[{"name":"eu","instructions":"EU total"},{"name":"us","instructions":"US total"}]}`
	fork := openai.ChatCompletionMessage{Role: "assistant", Content: "Forking per region.", ToolCalls: []openai.ToolCall{{ID: "call_2", Type: "function", Function: openai.FunctionCall{Name: "fork", Arguments: forkArgs}}}}
	llm(2, fork, "")
	add(&record.Node{Kind: record.KindFork, Agent: "analyst", Started: at(3), Fork: &record.Fork{Context: "compact", Branches: []record.ForkBranch{{Name: "eu", Agent: "analyst", Instructions: "EU total"}, {Name: "us", Agent: "analyst", Instructions: "US total"}}}})
	msgs = append(msgs, fork, openai.ChatCompletionMessage{Role: "tool", ToolCallID: "call_2", Content: "### eu (ok)\n4.2M\n### us (ok)\n6.1M"})
	llm(4, openai.ChatCompletionMessage{}, "provider error 500 after 3 attempts")
	if err := rec.Finish(ctx, record.StatusError, "the trunk failed", at(6)); err != nil {
		t.Fatal(err)
	}
	return rec.RunID()
}

func TestNewCmdAsk(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		want    AskOptions
		wantErr string
	}{
		{name: "node", args: "n7", want: AskOptions{RunRef: "latest", NodeRef: "n7", Timeout: ask.DefaultHeaderTimeout}},
		{name: "run node question", args: "7f3a n12 why|so?", want: AskOptions{RunRef: "7f3a", NodeRef: "n12", Question: "why so?", Timeout: ask.DefaultHeaderTimeout}},
		{name: "question words", args: "n3 why did you fork", want: AskOptions{RunRef: "latest", NodeRef: "n3", Question: "why did you fork", Timeout: ask.DefaultHeaderTimeout}},
		{name: "db ref", args: "base.db:latest N4", want: AskOptions{RunRef: "base.db:latest", NodeRef: "N4", Timeout: ask.DefaultHeaderTimeout}},
		{name: "flags", args: "n4 --replay --samples 9 --model gpt-4.1 --base-url http://x/v1 --timeout 5s --dry-run",
			want: AskOptions{RunRef: "latest", NodeRef: "n4", Replay: true, Samples: 9, Model: "gpt-4.1", BaseURL: "http://x/v1", Timeout: 5 * time.Second, DryRun: true}},
		{name: "prompt", args: "n4 --prompt new.md", want: AskOptions{RunRef: "latest", NodeRef: "n4", Prompt: "new.md", Timeout: ask.DefaultHeaderTimeout}},
		{name: "no node", args: "latest why", wantErr: "no node in"},
		{name: "two runs", args: "a b n4", wantErr: "at most one run"},
		{name: "nothing", args: "", wantErr: "needs a node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, _ := testFactoryEnv(t, nil)
			var got *AskOptions
			cmd := NewCmdAsk(f, func(o *AskOptions) error { got = o; return nil })
			args := strings.Fields(tt.args)
			for i, a := range args {
				args[i] = strings.ReplaceAll(a, "|", " ")
			}
			cmd.SetArgs(args)
			cmd.SetOut(new(bytes.Buffer))
			cmd.SetErr(new(bytes.Buffer))
			err := cmd.Execute()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.F, tt.want.F = nil, nil
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("options = %+v\nwant      %+v", *got, tt.want)
			}
		})
	}
}

// askRunCLI runs `inspect args...` on f and returns the exit code.
func askRunCLI(f *Factory, args ...string) int {
	return run(context.Background(), f, args)
}

// fastClient makes error tests quick: the client's waits between attempts
// are counted by a clock, not slept, and a silence times out sooner.
func fastClient(c *ask.Client) {
	c.Clock = llmhttptest.NewClock(time.Now())
	c.IdleTimeout = 2 * time.Second
}

func TestAskRun_Question(t *testing.T) {
	srv := asktest.New(t, askTestKey)
	answer := "I forked because the three regions are independent and my instructions say one branch per item."
	srv.Register("question", asktest.ToolChoiceNone, asktest.Answer(asktest.Reply{Content: answer,
		Usage: &openai.Usage{PromptTokens: 520, CompletionTokens: 21, PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: 384}}}))
	f, out, errOut := testFactoryEnv(t, map[string]string{"OPENAI_API_KEY": askTestKey})
	id := askRecordRun(t, f)
	ctx := context.Background()
	opts := &AskOptions{F: f, RunRef: "latest", NodeRef: "n4", BaseURL: srv.URL, Tune: fastClient}
	if err := askRun(ctx, opts); err != nil {
		t.Fatalf("askRun: %v\nstderr: %s", err, errOut)
	}
	srv.Verify(t)
	if got := out.String(); got != answer+"\n" {
		t.Errorf("stdout = %q, want the streamed answer", got)
	}
	for _, want := range []string{"asking n4 (analyst, calls fork) with gpt-4.1-mini at " + srv.URL + "/chat/completions", "question: I am reviewing", "520 tokens in (384 cached) · 21 out"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr = %q, want it to contain %q", errOut, want)
		}
	}

	// The body: the recorded request byte for byte up to the end of its
	// messages, and a valid chat (every tool call answered).
	db, _ := f.Store(ctx)
	recorded, err := db.Request(ctx, id, 4)
	if err != nil {
		t.Fatal(err)
	}
	req, err := ask.ParseRequest(recorded)
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	sent := reqs[0].Body
	if !bytes.HasPrefix(sent, recorded[:req.PrefixLen()]) {
		t.Errorf("sent body does not start with the recorded request's messages byte for byte")
	}
	if err := asktest.ValidateChat(sent); err != nil {
		t.Errorf("sent body is not a valid chat: %v", err)
	}
	var body struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
		ToolChoice string `json:"tool_choice"`
	}
	if err := json.Unmarshal(sent, &body); err != nil {
		t.Fatal(err)
	}
	added := body.Messages[req.Messages():]
	if len(added) != 3 || added[0].Role != "assistant" || added[0].ToolCalls[0].ID != "call_2" ||
		added[1].Role != "tool" || added[1].ToolCallID != "call_2" || added[2].Role != "user" || body.ToolChoice != "none" {
		t.Errorf("appended messages = %+v, tool_choice %q; want assistant(call_2), tool(call_2), user and none", added, body.ToolChoice)
	}

	// The ask is stored with the run.
	asks, err := db.Asks(ctx, id, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(asks) != 1 || asks[0].Mode != "question" || asks[0].Answer != answer || asks[0].Model != "gpt-4.1-mini" ||
		!strings.HasPrefix(asks[0].Question, "I am reviewing") || asks[0].BaseURL != srv.URL {
		t.Errorf("stored asks = %+v", asks)
	}

	// The key is in no database file, open or closed.
	askNoKeyInFiles(t, f.DBPath)
	f.Close()
	askNoKeyInFiles(t, f.DBPath)
}

// askNoKeyInFiles fails if the key's bytes are in the database or its WAL.
func askNoKeyInFiles(t *testing.T, path string) {
	t.Helper()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(askTestKey)) {
			t.Errorf("%s contains the API key", filepath.Base(p))
		}
	}
}

func TestAskRun_QuestionStyled(t *testing.T) {
	srv := asktest.New(t, askTestKey)
	srv.Register("question", nil, asktest.Answer(asktest.Reply{Content: "## Why\n\nBecause the **regions** are independent.\n\n```\nfork x3\n```\n"}))
	f, out, _ := testFactoryEnv(t, map[string]string{"OPENAI_API_KEY": askTestKey, "GLAMOUR_STYLE": "dark"})
	f.IO.OutTTY, f.IO.NoColor = true, false
	askRecordRun(t, f)
	if err := askRun(context.Background(), &AskOptions{F: f, RunRef: "latest", NodeRef: "n2", Question: "why?", BaseURL: srv.URL, Tune: fastClient}); err != nil {
		t.Fatal(err)
	}
	srv.Verify(t)
	got := out.String()
	if !strings.Contains(got, "\x1b[") || strings.Contains(got, "**regions**") || !strings.Contains(got, "regions") || !strings.Contains(got, "fork x3") {
		t.Errorf("styled stdout = %q, want glamour-rendered Markdown", got)
	}
}

func TestAskRun_Replay(t *testing.T) {
	srv := asktest.New(t, askTestKey)
	fork := asktest.Answer(asktest.Reply{ToolCalls: []openai.ToolCall{asktest.Call("c", "fork", `{"branches":[]}`)}})
	read := asktest.Answer(asktest.Reply{ToolCalls: []openai.ToolCall{asktest.Call("c", "read_file", `{"path":"regions/eu.md"}`)}})
	stub := srv.Register("replay", nil, asktest.Sequence(fork, read, fork, fork, fork))
	f, out, errOut := testFactoryEnv(t, map[string]string{"OPENAI_API_KEY": askTestKey})
	id := askRecordRun(t, f)
	if code := askRunCLI(f, "ask", "n4", "--replay", "--base-url", srv.URL); code != ExitOK {
		t.Fatalf("exit %d; stderr: %s", code, errOut)
	}
	srv.Verify(t)
	if got, want := out.String(), "calls fork 4/5 · calls read_file 1/5 (recorded: calls fork)\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if !strings.Contains(errOut.String(), "4 of 5 samples made the recorded choice") {
		t.Errorf("stderr = %q", errOut)
	}
	if stub.Used() != 5 {
		t.Errorf("replayed %d times, want 5", stub.Used())
	}
	ctx := context.Background()
	db, err := store.Open(ctx, f.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	recorded, _ := db.Request(ctx, id, 4)
	for i, r := range srv.Requests() {
		if !bytes.Equal(r.Body, recorded) {
			t.Errorf("replay %d: body differs from the recorded request", i)
		}
	}
	asks, _ := db.Asks(ctx, id, 4)
	if len(asks) != 1 || asks[0].Mode != "replay" || asks[0].Answer != "calls fork 4/5 · calls read_file 1/5 (recorded: calls fork)" {
		t.Errorf("stored asks = %+v", asks)
	}
}

func TestAskRun_Prompt(t *testing.T) {
	srv := asktest.New(t, askTestKey)
	srv.Register("replay", nil, asktest.Answer(asktest.Reply{ToolCalls: []openai.ToolCall{asktest.Call("c", "fork", `{"branches":[]}`)}}))
	f, out, errOut := testFactoryEnv(t, map[string]string{"OPENAI_API_KEY": askTestKey})
	id := askRecordRun(t, f)
	newRole := "# Analyst\n\nYou answer revenue questions by reading the regional reports.\nWhen several regions need the same work, fork one branch per region.\n"
	file := filepath.Join(t.TempDir(), "analyst.md")
	os.WriteFile(file, []byte(newRole), 0o644)
	if code := askRunCLI(f, "ask", "n2", "--prompt", file, "--samples", "2", "--base-url", srv.URL); code != ExitOK {
		t.Fatalf("exit %d; stderr: %s", code, errOut)
	}
	srv.Verify(t)
	for _, want := range []string{"agents/analyst.md: messages[0] (system): role-file text replaced", "- Read regions/index.md first.", "+ When several regions need the same work, fork one branch per region.", "calls fork 2/2 (recorded: calls read_file)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout = %q, want it to contain %q", out, want)
		}
	}
	ctx := context.Background()
	db, err := store.Open(ctx, f.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	recorded, _ := db.Request(ctx, id, 2)
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("server got %d requests, want 2", len(reqs))
	}
	// Only the role-file text changed: put the old text back and compare.
	var sentJSON, recJSON map[string]any
	if err := json.Unmarshal(reqs[0].Body, &sentJSON); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(recorded, &recJSON); err != nil {
		t.Fatal(err)
	}
	sys := sentJSON["messages"].([]any)[0].(map[string]any)
	if !strings.Contains(sys["content"].(string), strings.TrimSpace(newRole)) {
		t.Fatalf("system prompt does not contain the new role file")
	}
	sys["content"] = strings.Replace(sys["content"].(string), strings.TrimSpace(newRole), strings.TrimSpace(askRole), 1)
	if !reflect.DeepEqual(sentJSON, recJSON) {
		t.Errorf("--prompt changed more than the role-file text")
	}
	asks, _ := db.Asks(ctx, id, 2)
	if len(asks) != 1 || asks[0].Mode != "prompt" || !strings.Contains(asks[0].Question, "agents/analyst.md replaced by "+file) {
		t.Errorf("stored asks = %+v", asks)
	}
}

func TestAskRun_DryRun(t *testing.T) {
	f, out, errOut := testFactoryEnv(t, map[string]string{}) // no key, no server
	id := askRecordRun(t, f)
	if code := askRunCLI(f, "ask", "n4", "Why fork?", "--dry-run", "--model", "gpt-4.1"); code != ExitOK {
		t.Fatalf("exit %d; stderr: %s", code, errOut)
	}
	if !strings.Contains(errOut.String(), "dry run: asking n4 (analyst, calls fork) would POST this body (model gpt-4.1) to https://api.example.invalid/v1/chat/completions\n") {
		t.Errorf("stderr = %q", errOut)
	}
	if strings.Contains(errOut.String()+out.String(), askTestKey) {
		t.Error("the key (in the recorded base URL's user info) was printed")
	}
	var body struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(out.Bytes(), &body); err != nil {
		t.Fatalf("stdout is not the JSON body: %v\n%s", err, out)
	}
	if last := body.Messages[len(body.Messages)-1]; body.Model != "gpt-4.1" || last.Role != "user" || last.Content != "Why fork?" {
		t.Errorf("dry-run body: model %q, last message %+v", body.Model, last)
	}
	db, _ := store.Open(context.Background(), f.DBPath)
	defer db.Close()
	if asks, _ := db.Asks(context.Background(), id, 0); len(asks) != 0 {
		t.Errorf("a dry run stored %d asks, want 0", len(asks))
	}
}

// --replay --dry-run prints the recorded request byte for byte: its
// SHA-256 is the recorded body's, so `| sha256sum` proves what would be
// sent (issue 12, item 14: a trailing newline was added).
func TestAskRun_DryRunBytes(t *testing.T) {
	f, out, errOut := testFactoryEnv(t, map[string]string{})
	id := askRecordRun(t, f)
	if code := askRunCLI(f, "ask", "n4", "--replay", "--dry-run"); code != ExitOK {
		t.Fatalf("exit %d; stderr: %s", code, errOut)
	}
	db, err := store.Open(context.Background(), f.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rec, err := db.Request(context.Background(), id, 4)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sha256.Sum256(out.Bytes()), sha256.Sum256(rec); got != want {
		t.Errorf("dry-run stdout (%d bytes) does not hash to the recorded body (%d bytes); ends %q", out.Len(), len(rec), out.Bytes()[max(0, out.Len()-5):])
	}
}

func TestAskRun_Errors(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		stub  asktest.Responder
		code  int
		wants []string // RUN stands for the run's id, DB for its database
		lacks []string
	}{
		{name: "not llm", args: []string{"n3"}, code: ExitUsage,
			wants: []string{"n3 is a tool node (read_file), not a model call", "the model call that made it is n2", "nearest llm nodes: n2 (analyst, calls read_file), n4 (analyst, calls fork)"}},
		// the command a hint names pastes as is: the run by id, --db (issue 12, item 11)
		{name: "fork node", args: []string{"n5"}, code: ExitUsage, wants: []string{"n5 is a fork node (2 branches: eu, us)", "try `inspect ask RUN n4 --db DB`"}},
		{name: "unknown node", args: []string{"n42"}, code: ExitUsage, wants: []string{"has no node n42", "nearest"}},
		{name: "no response", args: []string{"n6"}, code: ExitUsage, wants: []string{"n6 cannot be questioned", "provider error 500", "try `inspect ask RUN n6 --replay --db DB`"}},
		{name: "no key", args: []string{"n4"}, env: map[string]string{}, code: ExitUsage, wants: []string{"OPENAI_API_KEY is not set", "--dry-run"}},
		{name: "401", args: []string{"n4"}, env: map[string]string{"OPENAI_API_KEY": "sk-wrong-key-000"}, code: ExitUsage,
			wants: []string{"answered 401", "OPENAI_API_KEY"}},
		{name: "404 model", args: []string{"n4", "--model", "gpt-9"}, code: ExitUsage,
			stub:  asktest.Error(http.StatusNotFound, "model_not_found", "The model `gpt-9` does not exist or you do not have access to it."),
			wants: []string{"answered 404", `does not serve model "gpt-9"`, "--model"}},
		// the hint never suggests the model that was just refused (issue 12, item 12)
		{name: "404 recorded model", args: []string{"n4"}, code: ExitUsage,
			stub:  asktest.Error(http.StatusNotFound, "model_not_found", "The model `gpt-4.1-mini` does not exist or you do not have access to it."),
			wants: []string{"answered 404", `does not serve model "gpt-4.1-mini"`, "pass --model with a model it does serve"}, lacks: []string{"--model gpt-4.1-mini"}},
		{name: "timeout", args: []string{"n4", "--timeout", "50ms"}, code: ExitToolError,
			stub:  asktest.Hang(5*time.Second, nil),
			wants: []string{"no answer within 50ms", "4 attempts", "raise --timeout"}},
		{name: "question with replay", args: []string{"n4", "why?", "--replay"}, code: ExitUsage, wants: []string{"a question goes with the default mode only"}},
		{name: "samples alone", args: []string{"n4", "--samples", "3"}, code: ExitUsage, wants: []string{"--samples goes with --replay or --prompt"}},
		{name: "samples zero", args: []string{"n4", "--replay", "--samples", "0"}, code: ExitUsage, wants: []string{"--samples must be between 1 and 100, got 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := asktest.New(t, askTestKey)
			if tt.stub != nil {
				srv.Register(tt.name, nil, tt.stub)
			}
			env := tt.env
			if env == nil {
				env = map[string]string{"OPENAI_API_KEY": askTestKey}
			}
			f, _, errOut := testFactoryEnv(t, env)
			id := askRecordRun(t, f)
			cmd := NewCmdAsk(f, func(o *AskOptions) error {
				o.Tune = fastClient
				return askRun(context.Background(), o)
			})
			cmd.SetArgs(append(tt.args, "--base-url", srv.URL))
			cmd.SetOut(new(bytes.Buffer))
			cmd.SetErr(new(bytes.Buffer))
			err := cmd.Execute()
			if got := exitCode(err); got != tt.code {
				t.Errorf("exit code = %d, want %d (err %v)", got, tt.code, err)
			}
			if err == nil {
				t.Fatal("err = nil")
			}
			msg := explain(err)
			for _, w := range tt.wants {
				w = strings.NewReplacer("RUN", id, "DB", f.DBPath).Replace(w)
				if !strings.Contains(msg, w) {
					t.Errorf("error = %q, want it to contain %q", msg, w)
				}
			}
			for _, l := range tt.lacks {
				if strings.Contains(msg, l) {
					t.Errorf("error = %q, want it without %q", msg, l)
				}
			}
			if strings.Contains(msg+errOut.String(), askTestKey) {
				t.Errorf("the key was printed")
			}
			srv.Verify(t)
		})
	}
}

// A base URL without a scheme is refused before anything is sent (it used
// to print "would POST ... to localhost:11434/v1/chat/completions").
func TestAskRun_BadBaseURL(t *testing.T) {
	for _, env := range []map[string]string{
		{"OPENAI_API_KEY": askTestKey, "OPENAI_BASE_URL": "localhost:11434/v1"},
		{"OPENAI_API_KEY": askTestKey},
	} {
		f, _, _ := testFactoryEnv(t, env)
		askRecordRun(t, f)
		args := []string{"n4", "--dry-run"}
		if env["OPENAI_BASE_URL"] == "" {
			args = append(args, "--base-url", "notaurl")
		}
		cmd := NewCmdAsk(f, nil)
		cmd.SetArgs(args)
		cmd.SetOut(new(bytes.Buffer))
		cmd.SetErr(new(bytes.Buffer))
		err := cmd.Execute()
		if exitCode(err) != ExitUsage || err == nil || !strings.Contains(err.Error(), "is not an http(s) URL") {
			t.Errorf("%v %v: err = %v, want a usage error about the URL", env, args, err)
		}
	}
}

// TestAsk_Fixture runs the fanout-compact fixture with the scripted model
// and asks the llm node that called fork, end to end against a local server.
func TestAsk_Fixture(t *testing.T) {
	ctx := context.Background()
	f, out, errOut := testFactoryEnv(t, map[string]string{"OPENAI_API_KEY": askTestKey})
	db, err := f.Store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "..", "fixtures", "fanout-compact")
	res, err := runtime.Run(ctx, runtime.Config{Project: dir, Script: filepath.Join(dir, "script.yaml"), DB: db,
		Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	var forkCall, branchCall int64
	if err := db.ScanNodes(ctx, &record.Run{ID: res.RunID}, func(n *record.Node) error {
		if forkCall == 0 && n.Kind == record.KindLLM && len(n.LLM.Calls) > 0 && n.LLM.Calls[0] == "fork" {
			forkCall = n.Seq
		}
		if branchCall == 0 && n.Kind == record.KindLLM && n.Agent == "researcher" {
			branchCall = n.Seq
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if forkCall == 0 {
		t.Fatal("the fixture run has no llm node that called fork")
	}
	node := fmt.Sprintf("n%d", forkCall)

	srv := asktest.New(t, askTestKey)
	srv.Register("question", asktest.ToolChoiceNone, asktest.Answer(asktest.Reply{Content: "The regions are independent, so one branch each."}))
	srv.Register("replay", nil, asktest.Answer(asktest.Reply{ToolCalls: []openai.ToolCall{asktest.Call("c", "fork", `{"branches":[]}`)}}))

	if code := askRunCLI(f, "ask", node, "--base-url", srv.URL); code != ExitOK {
		t.Fatalf("ask %s: exit %d; stderr: %s", node, code, errOut)
	}
	if got := out.String(); got != "The regions are independent, so one branch each.\n" {
		t.Errorf("stdout = %q", got)
	}
	// The fixture run is scripted: its base URL is not HTTP, so without
	// --base-url the ask would go to OPENAI_BASE_URL or the OpenAI API.
	out.Reset()
	f2, out2, errOut2 := testFactoryEnv(t, map[string]string{"OPENAI_API_KEY": askTestKey, "OPENAI_BASE_URL": srv.URL})
	f2.DBPath = f.DBPath
	if code := askRunCLI(f2, "ask", res.RunID, node, "--replay", "--samples", "3"); code != ExitOK {
		t.Fatalf("ask --replay: exit %d; stderr: %s", code, errOut2)
	}
	if got := out2.String(); got != "calls fork 3/3 (recorded: calls fork)\n" {
		t.Errorf("replay stdout = %q", got)
	}
	srv.Verify(t)

	reqs := srv.Requests()
	db2, err := store.Open(ctx, f.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	recorded, err := db2.Request(ctx, res.RunID, forkCall)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := ask.ParseRequest(recorded)
	if !bytes.HasPrefix(reqs[0].Body, recorded[:req.PrefixLen()]) {
		t.Error("question body does not start with the recorded request byte for byte")
	}
	if err := asktest.ValidateChat(reqs[0].Body); err != nil {
		t.Errorf("question body: %v", err)
	}
	asks, _ := db2.Asks(ctx, res.RunID, forkCall)
	if len(asks) != 2 || asks[0].Mode != "question" || asks[1].Mode != "replay" {
		t.Errorf("stored asks = %+v", asks)
	}
	askNoKeyInFiles(t, f.DBPath)

	// A researcher branch cannot fork: the cheap cause is named first.
	f3, _, errOut3 := testFactoryEnv(t, nil)
	f3.DBPath = f.DBPath
	if code := askRunCLI(f3, "ask", fmt.Sprintf("n%d", branchCall), "--dry-run"); code != ExitOK {
		t.Fatalf("ask --dry-run: exit %d; stderr: %s", code, errOut3)
	}
	if want := "note: fork is not among this call's tools"; !strings.Contains(errOut3.String(), want) {
		t.Errorf("stderr = %q, want it to contain %q", errOut3, want)
	}
}

// A provider that closes the event stream halfway through the answer: the
// half is printed, the command says the answer was cut off and after how
// many bytes, exits 3, and the ask is stored marked incomplete — whether the
// stream just ends or the connection breaks (issue 12, item 2: it exited 0
// and stored the half as the answer).
func TestAskRun_CutOff(t *testing.T) {
	half := "I forked because the three regions "
	chunk := func(w http.ResponseWriter, content string) {
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4.1-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", content)
		w.(http.Flusher).Flush()
	}
	tests := []struct {
		name  string
		close func(w http.ResponseWriter)
	}{
		{"stream ends", func(http.ResponseWriter) {}},
		{"connection breaks", func(w http.ResponseWriter) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := asktest.New(t, askTestKey)
			srv.Register("half", nil, func(w http.ResponseWriter, r *http.Request, body []byte) {
				w.Header().Set("Content-Type", "text/event-stream")
				chunk(w, "I forked because ")
				chunk(w, "the three regions ")
				tt.close(w)
			})
			f, out, errOut := testFactoryEnv(t, map[string]string{"OPENAI_API_KEY": askTestKey})
			id := askRecordRun(t, f)
			code := askRunCLI(f, "ask", "n4", "--base-url", srv.URL)
			want := fmt.Sprintf("the answer was cut off after %d bytes", len(half))
			if code != ExitToolError || !strings.Contains(errOut.String(), want) || !strings.Contains(errOut.String(), "marked incomplete") {
				t.Errorf("exit %d, stderr %q; want 3 and %q", code, errOut, want)
			}
			if out.String() != half+"\n" {
				t.Errorf("stdout = %q, want the part that arrived", out)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests: a cut-off answer must not be asked again behind the user's back", n)
			}
			db, err := store.Open(context.Background(), f.DBPath)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			asks, err := db.Asks(context.Background(), id, 4)
			if err != nil || len(asks) != 1 || asks[0].Answer != half || !strings.Contains(asks[0].Incomplete, want) {
				t.Fatalf("stored asks = %+v (%v), want the half marked incomplete", asks, err)
			}
			// show says so beside the stored answer
			f2, out2, errOut2 := testFactoryEnv(t, nil)
			f2.DBPath = f.DBPath
			if code := run(context.Background(), f2, []string{"show", "n4"}); code != ExitOK || !strings.Contains(out2.String(), "· question · gpt-4.1-mini · incomplete") ||
				!strings.Contains(out2.String(), "**Incomplete:** "+want) {
				t.Errorf("show n4: exit %d, stderr %s, the ask not marked incomplete:\n%s", code, errOut2, out2)
			}
		})
	}
}

// A failed model call chose nothing: show does not say it "answers", and
// --replay does not weigh samples against "answers" (issue 12, item 8).
func TestAskRun_FailedCall(t *testing.T) {
	srv := asktest.New(t, askTestKey)
	srv.Register("replay", nil, asktest.Answer(asktest.Reply{ToolCalls: []openai.ToolCall{asktest.Call("c1", "fork", `{"branches":[]}`)}}))
	f, out, errOut := testFactoryEnv(t, map[string]string{"OPENAI_API_KEY": askTestKey})
	askRecordRun(t, f)
	if code := run(context.Background(), f, []string{"show", "n6"}); code != ExitOK {
		t.Fatalf("show n6: exit %d: %s", code, errOut)
	}
	if strings.Contains(out.String(), "- answers") || !strings.Contains(out.String(), "- no choice: the call ended error") {
		t.Errorf("show of a failed call:\n%s", out)
	}
	out.Reset()
	cmd := NewCmdAsk(f, func(o *AskOptions) error { o.Tune = fastClient; return askRun(context.Background(), o) })
	cmd.SetArgs([]string{"n6", "--replay", "--samples", "2", "--base-url", srv.URL})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("ask n6 --replay: %v\n%s", err, errOut)
	}
	if strings.Contains(out.String()+errOut.String(), "recorded: answers") || !strings.Contains(out.String(), "calls fork 2/2 (recorded: no choice (the call ended error))") ||
		!strings.Contains(errOut.String(), "the recorded call ended error and made no choice") {
		t.Errorf("replay of a failed call: stdout %q, stderr %q", out, errOut)
	}
}

// show of a model call that failed after retries: how many attempts it
// took and the body the provider last sent, as received (issue 12, item 8).
func TestShow_FailedCallAttemptsAndBody(t *testing.T) {
	f, out, errOut := testFactory(t)
	ctx := context.Background()
	db, err := f.Store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := db.CreateRun(ctx, &record.Run{Tasks: []string{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "t"}}})
	n := &record.Node{Kind: record.KindLLM, Agent: "a", LLM: &record.LLM{Model: "m", Request: body}}
	if err := rec.StartNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	n.Status, n.Error = record.StatusError, "model call failed with HTTP 503: overloaded (gave up after 4 attempts)"
	n.LLM.Attempts, n.LLM.Response = 4, []byte(`{"error":{"message":"overloaded: shard 7","type":"server_error"}}`)
	if err := rec.FinishNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	if err := rec.Finish(ctx, record.StatusError, n.Error, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if code := run(ctx, f, []string{"show", "n1"}); code != ExitOK {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"- no choice: the call ended error\n", "- attempts: 4 (the request was sent again after 3 failures)\n",
		"### Response of the failed call (", "\"message\": \"overloaded: shard 7\""} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out.String(), "- answers") {
		t.Errorf("show says a failed call answers:\n%s", out)
	}
}
