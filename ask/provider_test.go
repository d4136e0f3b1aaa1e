package ask

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/inspect-dev/inspect/ask/asktest"
	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/internal/llmhttp/llmhttptest"
	"github.com/inspect-dev/inspect/record"
)

// validate is the check of the API of format f.
func validate(f chat.Format) func([]byte) error {
	switch f {
	case chat.Anthropic:
		return asktest.ValidateAnthropic
	case chat.OpenAIResponses:
		return asktest.ValidateResponses
	}
	return asktest.ValidateChat
}

// importedRun is a run of source format src in memory: n1 a user turn,
// n2 an llm node whose request and response are body and resp (exact or
// reconstructed), with the snapshot files and the agent's instruction
// files given.
func importedRun(t *testing.T, src string, exact bool, body, resp []byte, instructions map[string]string, files ...record.File) (*graph.Run, *recording) {
	t.Helper()
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	fid := record.FidelityReconstructed
	if exact {
		fid = record.FidelityExact
	}
	nodes := []*record.Node{
		{Seq: 1, Kind: record.KindUser, Agent: "main", Started: t0, Ended: t0, Status: record.StatusOK, Text: "go"},
		{Seq: 2, Kind: record.KindLLM, Agent: "main", Started: t0, Ended: t0.Add(time.Second), Status: record.StatusOK,
			LLM: &record.LLM{Model: modelOf(body), Calls: []string{"Read"}, Fidelity: fid}},
	}
	run := &record.Run{ID: "0123456789ab", Status: record.StatusOK, Source: record.Source{Format: src},
		Options: record.Options{Instructions: instructions}, Project: record.Project{Files: files}}
	if !exact {
		run.Options.RequestsLack = []string{"the system prompt", "the tool definitions"}
	}
	g, err := graph.Build(run, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return g, &recording{requests: map[int64][]byte{2: body}, responses: map[int64][]byte{2: resp}}
}

// A reconstructed Claude Code call as the importer writes it: Chat
// Completions messages, no system prompt, no tools; an excerpt, so it
// starts with the assistant, has a result whose call it lacks and a call
// whose result it lacks.
const ccRequest = `{"messages":[{"role":"assistant","content":"Picking up.","tool_calls":[{"id":"toolu_0","type":"function","function":{"name":"Bash","arguments":"{\"command\":\"ls\"}"}}]},` +
	`{"role":"tool","content":"a.md b.md","tool_call_id":"toolu_0"},{"role":"tool","content":"stale","tool_call_id":"toolu_gone"},` +
	`{"role":"user","content":"Read both"},{"role":"assistant","content":null,"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"mcp.fs/read","arguments":"oops"}}]},` +
	`{"role":"user","content":""},{"role":"user","content":"And?"}],"model":"claude-sonnet-4-5"}`

const ccResponse = `{"id":"","object":"chat.completion","created":0,"model":"claude-sonnet-4-5","choices":[{"index":0,"message":{"role":"assistant","content":"Reading.","tool_calls":[{"id":"toolu_2","type":"function","function":{"name":"Read","arguments":"{\"file_path\":\"a.md\"}"}},{"id":"toolu_3","type":"function","function":{"name":"Read","arguments":"{\"file_path\":\"b.md\"}"}}]},"finish_reason":"tool_calls"}]}`

// Each source's call goes to its stack's API unless the request says
// otherwise: exact requests in their own format; reconstructed ones of
// Claude Code to Anthropic, of Codex to Responses, of the others to Chat
// Completions; an Anthropic-shaped recorded body to Anthropic whatever the
// source; --provider over all.
func TestNewPlan_Provider(t *testing.T) {
	ctx := context.Background()
	anth := []byte(`{"model":"claude-sonnet-4-5","max_tokens":100,"system":"You are Claude Code.","messages":[{"role":"user","content":"go"}]}`)
	exactChat := `{"model":"claude-sonnet-4-5","messages":[{"role":"system","content":"s"},{"role":"user","content":"go"}],"tools":[{"type":"function","function":{"name":"Read","parameters":{"type":"object"}}}]}`
	resp := []byte(`{"type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn"}`)
	tests := []struct {
		name, src string
		exact     bool
		body      string
		provider  string
		want      *Provider
		wantURL   string
	}{
		{"claude-code reconstructed", "claude-code", false, ccRequest, "", Anthropic, "https://api.anthropic.com/v1/messages"},
		{"codex reconstructed", "codex", false, ccRequest, "", OpenAIResponses, "https://api.openai.com/v1/responses"},
		{"kimi reconstructed", "kimi-cli", false, ccRequest, "", OpenAIChat, "https://api.openai.com/v1/chat/completions"},
		{"otlp reconstructed", "otlp", false, ccRequest, "", OpenAIChat, "https://api.openai.com/v1/chat/completions"},
		{"agents sdk reconstructed", "openai-agents", false, ccRequest, "", OpenAIChat, "https://api.openai.com/v1/chat/completions"},
		{"anthropic-shaped body", "otlp", false, string(anth), "", Anthropic, "https://api.anthropic.com/v1/messages"},
		{"exact anthropic", "claude-code", true, string(anth), "", Anthropic, "https://api.anthropic.com/v1/messages"},
		{"exact chat of claude-code", "claude-code", true, exactChat, "", OpenAIChat, "https://api.openai.com/v1/chat/completions"},
		{"--provider", "claude-code", false, ccRequest, "openai-chat", OpenAIChat, "https://api.openai.com/v1/chat/completions"},
		{"--provider format name", "kimi-cli", false, ccRequest, "anthropic-messages", Anthropic, "https://api.anthropic.com/v1/messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := []byte(ccResponse)
			if strings.Contains(tt.body, "max_tokens") {
				r = resp
			}
			g, rec := importedRun(t, tt.src, tt.exact, []byte(tt.body), r, nil)
			for _, mode := range []Options{{Provider: tt.provider, DryRun: true}, {Provider: tt.provider, Replay: true, DryRun: true}} {
				p, err := NewPlan(ctx, rec, g, 2, mode)
				if err != nil {
					t.Fatal(err)
				}
				if p.Provider != tt.want || p.Endpoint() != tt.wantURL {
					t.Errorf("%s: provider %s at %s, want %s at %s", p.Mode, p.Provider.Name, p.Endpoint(), tt.want.Name, tt.wantURL)
				}
				if err := validate(p.Provider.Format)(p.Body); err != nil {
					t.Errorf("%s: the body would be refused: %v\n%s", p.Mode, err, p.Body)
				}
				var log bytes.Buffer
				if err := p.dryRun(SendOptions{Out: new(bytes.Buffer), Log: &log}); err != nil {
					t.Fatal(err)
				}
				for _, w := range []string{"would POST this body (model " + p.Model + ") to " + tt.wantURL + "\n", "provider: " + tt.want.Name + " (" + tt.want.Title + ", key " + tt.want.KeyEnv + ")"} {
					if !strings.Contains(log.String(), w) {
						t.Errorf("%s: dry run says %q, want %q", p.Mode, log.String(), w)
					}
				}
				if want := "is exact"; tt.exact != strings.Contains(log.String(), want) {
					t.Errorf("%s: exact %v, dry run says %q", p.Mode, tt.exact, log.String())
				}
				if want := "request is reconstructed"; !tt.exact && !strings.Contains(log.String(), want) {
					t.Errorf("%s: dry run of a reconstructed request does not say so: %q", p.Mode, log.String())
				}
			}
		})
	}
	if _, err := NewPlan(ctx, &recording{}, &graph.Run{}, 2, Options{Provider: "gemini"}); err == nil || !strings.Contains(err.Error(), `unknown --provider "gemini": the providers are anthropic, openai-responses, openai-chat`) {
		t.Errorf("unknown provider: %v", err)
	}
}

// The reconstructed Claude Code excerpt, questioned for Anthropic: every
// rule the API has is kept, and each change is said.
func TestNewPlan_ReconstructedMadeValid(t *testing.T) {
	ctx := context.Background()
	g, rec := importedRun(t, "claude-code", false, []byte(ccRequest), []byte(ccResponse), nil)
	p, err := NewPlan(ctx, rec, g, 2, Options{Question: "Why read them one by one?"})
	if err != nil {
		t.Fatal(err)
	}
	if err := asktest.ValidateAnthropic(p.Body); err != nil {
		t.Fatalf("refused: %v\n%s", err, p.Body)
	}
	var body struct {
		MaxTokens  int             `json:"max_tokens"`
		ToolChoice json.RawMessage `json:"tool_choice"`
		Stream     bool            `json:"stream"`
		Tools      []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"tools"`
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string          `json:"type"`
				Text      string          `json:"text"`
				ToolUseID string          `json:"tool_use_id"`
				Content   string          `json:"content"`
				Input     json.RawMessage `json:"input"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(p.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.MaxTokens != DefaultMaxTokens || string(body.ToolChoice) != `{"type":"none"}` || !body.Stream {
		t.Errorf("max_tokens %d, tool_choice %s, stream %v", body.MaxTokens, body.ToolChoice, body.Stream)
	}
	var names []string
	for _, tl := range body.Tools {
		names = append(names, tl.Name)
		if tl.Description != ToolNotRecorded {
			t.Errorf("tool %s: description %q, want it said to be unrecorded", tl.Name, tl.Description)
		}
	}
	if got := strings.Join(names, ","); got != "Bash,mcp_fs_read,Read" {
		t.Errorf("tools = %s, want the three called, by names the API accepts", got)
	}
	first := body.Messages[0].Content[0]
	last := body.Messages[len(body.Messages)-1].Content
	if first.Text != EarlierNotRecorded || last[len(last)-1].Text != "Why read them one by one?" || last[0].ToolUseID != "toolu_2" || last[0].Content != NotRun {
		t.Errorf("first block %+v, last turn %+v", first, last)
	}
	fixes := strings.Join(p.Fixes, "\n")
	for _, w := range []string{"does not start with a user message", "1 recorded tool call(s) have no recorded result (mcp.fs/read)", "1 tool result(s) answer a call the request does not hold",
		"1 empty message(s) left out", "not a JSON object", `"mcp.fs/read" as mcp_fs_read`, "sent by name only"} {
		if !strings.Contains(fixes, w) {
			t.Errorf("fixes %q lack %q", fixes, w)
		}
	}
	// The same conversation for the other APIs.
	for _, prov := range []string{"openai-chat", "openai-responses"} {
		p, err := NewPlan(ctx, rec, g, 2, Options{Question: "Why?", Provider: prov})
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(p.Provider.Format)(p.Body); err != nil {
			t.Errorf("%s: refused: %v\n%s", prov, err, p.Body)
		}
	}
}

// Whatever a reconstructed conversation holds, the body written for each
// API is one it accepts: random conversations of every message kind in
// any order, in each format, question and replay.
func TestRebuilt_AlwaysValid(t *testing.T) {
	rng := rand.New(rand.NewSource(27))
	names := []string{"Read", "Bash", "mcp__x__y", "a.b", "", "Task"}
	texts := []string{"", "  ", "hello", "<tag> & \u2028"}
	args := []string{"", "{}", `{"a":1}`, "not json", "[1,2]", "null"}
	ids := []string{"", "toolu_1", "call:1", "toolu_1", "c 2"}
	for i := 0; i < 400; i++ {
		r := &chat.Request{Model: "m"}
		if rng.Intn(2) == 0 {
			r.System = "sys"
		}
		if rng.Intn(3) == 0 {
			r.Tools = []chat.Tool{{Name: names[rng.Intn(len(names))], Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}}
		}
		for j := rng.Intn(8); j >= 0; j-- {
			switch rng.Intn(5) {
			case 0:
				r.Messages = append(r.Messages, chat.Message{Role: "user", Text: texts[rng.Intn(len(texts))]})
			case 1:
				m := chat.Message{Role: "assistant", Text: texts[rng.Intn(len(texts))]}
				for k := rng.Intn(3); k > 0; k-- {
					m.Calls = append(m.Calls, chat.Call{ID: ids[rng.Intn(len(ids))], Name: names[rng.Intn(len(names))], Arguments: args[rng.Intn(len(args))]})
				}
				r.Messages = append(r.Messages, m)
			case 2:
				r.Messages = append(r.Messages, chat.Message{Role: "tool", CallID: ids[rng.Intn(len(ids))], Text: texts[rng.Intn(len(texts))]})
			case 3:
				r.Messages = append(r.Messages, chat.Message{Role: "system", Text: "s"})
			case 4:
				r.Messages = append(r.Messages, chat.Message{Role: "user", Text: "img", Parts: []chat.Part{{Type: "image_url"}}})
			}
		}
		for _, f := range chat.Formats {
			for _, question := range []bool{false, true} {
				cv := fromRequest(r)
				if question {
					cv.withTurn(&chat.Message{Role: "assistant", Calls: []chat.Call{{ID: ids[rng.Intn(len(ids))], Name: names[rng.Intn(len(names))], Arguments: args[rng.Intn(len(args))]}}}, "why?")
				}
				cv.valid()
				body, err := cv.encode(f, encoding{ToolChoiceNone: question, Stream: question})
				if err != nil {
					t.Fatalf("case %d %s: %v", i, f, err)
				}
				if err := validate(f)(body); err != nil {
					in, _ := json.Marshal(r)
					t.Fatalf("case %d %s (question %v): refused: %v\nfrom %s\nsent %s", i, f, question, err, in, body)
				}
			}
		}
	}
}

// A Claude Code request recorded byte for byte (Anthropic Messages, with
// cache_control, thinking and tools) is questioned in place: its bytes
// are kept up to the end of its messages, the recorded content blocks
// (thinking and signature included) follow, then a tool_result per
// tool_use and the question.
func TestQuestion_ExactAnthropic(t *testing.T) {
	ctx := context.Background()
	body := readTestdata(t, "anthropic_request.json")
	resp := readTestdata(t, "anthropic_response.json")
	g, rec := importedRun(t, "claude-code", true, body, resp, nil)
	p, err := NewPlan(ctx, rec, g, 2, Options{Question: "Why both at once?"})
	if err != nil {
		t.Fatal(err)
	}
	if err := asktest.ValidateAnthropic(p.Body); err != nil {
		t.Fatalf("refused: %v\n%s", err, p.Body)
	}
	o, _ := parseObject(body)
	f, _ := o.get("messages")
	elems, _ := parseArray(body, f.val)
	keep := elems[len(elems)-1].end
	if !bytes.HasPrefix(p.Body, body[:keep]) {
		t.Error("the question does not start with the recorded request byte for byte")
	}
	if !bytes.Contains(p.Body, []byte(`"signature":"sig-A"`)) || p.Fixes != nil {
		t.Errorf("the recorded thinking block is not sent as received (fixes %q)", p.Fixes)
	}
	if p.Fidelity == "" || !strings.Contains(p.Fidelity, "is exact") || p.Notes != nil {
		t.Errorf("fidelity %q, notes %q", p.Fidelity, p.Notes)
	}
	// The response as an event stream (no content blocks as received):
	// thinking is turned off rather than sending a turn the API refuses.
	stream := []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"claude-opus-4-6\",\"usage\":{}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_A\",\"name\":\"Read\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"}}\n\n")
	rec.responses[2] = stream
	p, err = NewPlan(ctx, rec, g, 2, Options{Question: "Why?"})
	if err != nil {
		t.Fatal(err)
	}
	if err := asktest.ValidateAnthropic(p.Body); err != nil {
		t.Fatalf("refused: %v\n%s", err, p.Body)
	}
	if thinkingOn(p.Body) || bytes.Contains(p.Body, []byte("clear_thinking")) || len(p.Fixes) != 1 || !strings.Contains(p.Fixes[0], "extended thinking is turned off") {
		t.Errorf("thinking on %v, fixes %q", thinkingOn(p.Body), p.Fixes)
	}
	// Replay: the recorded bytes.
	p, err = NewPlan(ctx, rec, g, 2, Options{Replay: true})
	if err != nil || !bytes.Equal(p.Body, body) {
		t.Errorf("replay body differs from the recording (%v)", err)
	}
	// A recording of a server that answered without thinking blocks
	// (the harness's scripted model): its tool-using turn would be
	// refused with thinking on, so thinking goes, said.
	unsigned := bytes.Replace(body, []byte(`"messages":[`), []byte(`"messages":[{"role":"user","content":"first"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_0","name":"Read","input":{"file_path":"x"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_0","content":"x"}]},{"role":"assistant","content":"ok"},`), 1)
	unsigned = bytes.Replace(unsigned, []byte(`{"role":"assistant","content":"ok"},`), nil, 1)
	unsigned = bytes.Replace(unsigned, []byte(`"content":"x"}]},{"role":"user","content":[{"type":"text","text":"<system-reminder>`), []byte(`"content":"x"},{"type":"text","text":"<system-reminder>`), 1)
	if err := asktest.ValidateAnthropic(unsigned); err == nil || !strings.Contains(err.Error(), "must start with a thinking block") {
		t.Fatalf("the test's recording should be one the API refuses: %v\n%s", err, unsigned)
	}
	rec.requests[2] = unsigned
	p, err = NewPlan(ctx, rec, g, 2, Options{Replay: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := asktest.ValidateAnthropic(p.Body); err != nil || len(p.Fixes) != 1 || !strings.Contains(p.Fixes[0], "has no thinking block (the API refuses it): thinking is turned off") {
		t.Errorf("replay: %v, fixes %q", err, p.Fixes)
	}
}

// A Responses request recorded byte for byte is questioned in place too.
func TestQuestion_ExactResponses(t *testing.T) {
	ctx := context.Background()
	body := []byte(`{"model":"gpt-5-codex","instructions":"You are Codex.","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"List files"}]}],"tools":[{"type":"function","name":"shell","parameters":{"type":"object"},"strict":false}],"stream":true,"store":false}`)
	resp := []byte(`{"id":"resp_1","object":"response","status":"completed","model":"gpt-5-codex","output":[{"type":"reasoning","summary":[]},{"type":"function_call","call_id":"call_9","name":"shell","arguments":"{\"command\":[\"ls\"]}"}]}`)
	g, rec := importedRun(t, "codex", true, body, resp, nil)
	p, err := NewPlan(ctx, rec, g, 2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Provider != OpenAIResponses {
		t.Fatalf("provider %s", p.Provider.Name)
	}
	if err := asktest.ValidateResponses(p.Body); err != nil {
		t.Fatalf("refused: %v\n%s", err, p.Body)
	}
	if !bytes.HasPrefix(p.Body, body[:bytes.Index(body, []byte(`}]}],"tools"`))+3]) || !bytes.Contains(p.Body, []byte(`"tool_choice":"none"`)) {
		t.Errorf("body %s", p.Body)
	}
}

// --prompt on an imported run: the instruction file the run keeps for the
// agent (a Claude Code sub-agent file, front matter aside) is replaced
// where the exact request holds it; a reconstructed request without a
// system prompt is refused, saying what it lacks and what works instead,
// --dry-run kept in the hint.
func TestNewPlan_PromptImported(t *testing.T) {
	ctx := context.Background()
	agent := "---\nname: Explore\ndescription: Finds files\ntools: Read, Grep\n---\n\nYou explore the code base.\nReport paths.\n"
	fixed := "---\nname: Explore\ndescription: Finds files\n---\n\nYou explore the code base.\nRead independent files in one response.\n"
	file := writeFile(t, fixed)
	body := []byte(`{"model":"claude-haiku-4-5","max_tokens":32000,"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"You explore the code base.\nReport paths.\n\nEnv: linux"}],"messages":[{"role":"user","content":"Find the configs"}],"tools":[{"name":"Read","input_schema":{"type":"object"}}],"stream":true}`)
	instr := map[string]string{"main": ".claude/agents/Explore.md"}
	files := []record.File{{Path: ".claude/agents/Explore.md", Content: agent}}
	g, rec := importedRun(t, "claude-code", true, body, []byte(`{"type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn"}`), instr, files...)
	p, err := NewPlan(ctx, rec, g, 2, Options{PromptFile: file})
	if err != nil {
		t.Fatal(err)
	}
	if p.RolePath != ".claude/agents/Explore.md" || p.Change.Where != "system[1]" || !bytes.Contains(p.Body, []byte(`Read independent files in one response.\n\nEnv: linux`)) || bytes.Contains(p.Body, []byte("description")) {
		t.Errorf("role %s, change %+v, body %s", p.RolePath, p.Change, p.Body)
	}
	if !strings.HasPrefix(p.Change.String(), "system[1] (system): role-file text replaced") || !strings.HasSuffix(p.Change.String(), "every other byte of the request is unchanged") {
		t.Errorf("change = %s", p.Change)
	}
	if err := asktest.ValidateAnthropic(p.Body); err != nil {
		t.Errorf("refused: %v", err)
	}

	// Reconstructed, without the system prompt: refused.
	g, rec = importedRun(t, "claude-code", false, []byte(ccRequest), []byte(ccResponse), instr, files...)
	_, err = NewPlan(ctx, rec, g, 2, Options{PromptFile: file, DryRun: true})
	var ie *InputError
	if !errorsAs(err, &ie) || !strings.Contains(err.Error(), "--prompt replaces .claude/agents/Explore.md as stored with run 0123456789ab inside the recorded request, but it is not in the request's system prompt or messages; the request is reconstructed from the claude-code source") ||
		!strings.Contains(err.Error(), "it lacks the system prompt") || !strings.Contains(err.Error(), "`inspect ask n2 --dry-run`") {
		t.Errorf("err = %v", err)
	}
	// No instruction file kept: refused, naming where the stack keeps them.
	g, rec = importedRun(t, "claude-code", false, []byte(ccRequest), []byte(ccResponse), nil)
	if _, err = NewPlan(ctx, rec, g, 2, Options{PromptFile: file}); err == nil || !strings.Contains(err.Error(), "keeps no instructions of agent main") || !strings.Contains(err.Error(), "CLAUDE.md or .claude/agents/<type>.md") {
		t.Errorf("err = %v", err)
	}
	// A stack whose instructions are in code: the system prompt is theirs.
	agents := []byte(`{"messages":[{"role":"system","content":"You plan trips."},{"role":"user","content":"Plan Rome"}],"model":"gpt-4.1"}`)
	g, rec = importedRun(t, "openai-agents", false, agents, []byte(ccResponse), nil)
	p, err = NewPlan(ctx, rec, g, 2, Options{PromptFile: file})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(p.Body, []byte(`"content":"---\nname: Explore`)) || !p.Change.Rebuilt || p.Change.Where != "the system prompt" {
		t.Errorf("change %+v body %s", p.Change, p.Body)
	}
	if err := asktest.ValidateChat(p.Body); err != nil {
		t.Errorf("refused: %v", err)
	}
}

func errorsAs(err error, target **InputError) bool {
	for err != nil {
		if e, ok := err.(*InputError); ok {
			*target = e
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

// Every hint an ask prints keeps --dry-run (and --provider, --model) when
// the user gave it: a hint never turns a dry run into a paid call.
func TestHints_KeepDryRun(t *testing.T) {
	ctx := context.Background()
	g, rec := planRun(t)
	for _, tt := range []struct {
		seq  int64
		opts Options
		want string
	}{
		{5, Options{DryRun: true}, "try `inspect ask n4 --dry-run`"},
		{3, Options{DryRun: true, Provider: "anthropic", Model: "claude-x"}, "try `inspect ask n2 --provider anthropic --model claude-x --dry-run`"},
		{6, Options{DryRun: true}, "try `inspect ask n6 --replay --dry-run` to send its request again"},
		{6, Options{}, "try `inspect ask n6 --replay` to send"},
	} {
		_, err := NewPlan(ctx, rec, g, tt.seq, tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("n%d %+v: err = %v, want %q", tt.seq, tt.opts, err, tt.want)
		}
	}
}

// The key each provider reads, and the refusal when it is not set.
func TestPlan_Send_Keys(t *testing.T) {
	ctx := context.Background()
	g, rec := importedRun(t, "claude-code", false, []byte(ccRequest), []byte(ccResponse), nil)
	srv := asktest.New(t, testKey)
	srv.Register("question", asktest.ToolChoiceNone, asktest.Answer(asktest.Reply{Content: "Because they were independent.",
		Usage: &openai.Usage{PromptTokens: 300, CompletionTokens: 7, PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: 200}}}))
	for _, env := range []map[string]string{{"ANTHROPIC_API_KEY": testKey}, {"ANTHROPIC_AUTH_TOKEN": testKey}} {
		env["ANTHROPIC_BASE_URL"] = srv.URL
		getenv := func(k string) string { return env[k] }
		p, err := NewPlan(ctx, rec, g, 2, Options{Getenv: getenv})
		if err != nil {
			t.Fatal(err)
		}
		var out, log bytes.Buffer
		a, err := p.Send(ctx, SendOptions{Getenv: getenv, Out: &out, Log: &log, Tune: func(c *Client) { c.Clock = llmhttptest.NewClock(time.Now()) }})
		if err != nil {
			t.Fatalf("%v: %v\n%s", env, err, log.String())
		}
		if out.String() != "Because they were independent.\n" || a.Answer != "Because they were independent." || a.BaseURL != srv.URL {
			t.Errorf("stdout %q, asked %+v", out.String(), a)
		}
		if !strings.Contains(log.String(), "claude-sonnet-4-5 · 300 tokens in (200 cached) · 7 out") {
			t.Errorf("log = %q", log.String())
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].Path != asktest.MessagesPath || reqs[0].Header.Get("x-api-key") != testKey || reqs[1].Header.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("requests: %+v", reqs)
	}
	if bad := srv.Invalid(); len(bad) > 0 {
		t.Errorf("invalid bodies sent: %+v", bad)
	}
	p, _ := NewPlan(ctx, rec, g, 2, Options{})
	_, err := p.Send(ctx, SendOptions{Getenv: func(string) string { return "" }, Out: new(bytes.Buffer), Log: new(bytes.Buffer)})
	if err == nil || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) is not set") || !strings.Contains(err.Error(), "Anthropic Messages") {
		t.Errorf("err = %v", err)
	}
}

var _ = fmt.Sprint
