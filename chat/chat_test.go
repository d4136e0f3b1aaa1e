package chat

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/record"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// msg is a Message without its parts, for comparing.
type msg struct {
	Role, Name, Text, CallID string
	Calls                    []Call
	IsError                  bool
}

func messages(ms []Message) []msg {
	out := make([]msg, len(ms))
	for i, m := range ms {
		out[i] = msg{Role: m.Role, Name: m.Name, Text: m.Text, CallID: m.CallID, Calls: m.Calls, IsError: m.IsError}
	}
	return out
}

func partTypes(ps []Part) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Type)
	}
	return out
}

func TestReadRequest_OpenAIChat(t *testing.T) {
	body := readTestdata(t, "openai_chat_request.json")
	r, err := ReadRequest(body, "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Format != OpenAIChat || r.Model != "gpt-4.1-mini" || r.Stream {
		t.Errorf("format, model, stream = %s, %q, %v; want openai-chat, gpt-4.1-mini, false", r.Format, r.Model, r.Stream)
	}
	wantSys := "# House rules\n\nBe brief.\n\n# Analyst\n\nYou answer revenue questions.\n\n# Forking\n\nCall fork when independent items need the same work.\n" +
		"\n\n" + "Prefer tables."
	if r.System != wantSys {
		t.Errorf("System = %q, want %q (the system message, a blank line, the developer message's parts concatenated)", r.System, wantSys)
	}
	if got, want := r.ToolNames(), []string{"read_file", "transfer_to_billing", "fork"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ToolNames() = %q, want %q", got, want)
	}
	if d := r.Tools[1].Description; d != "Questions about invoices & <billing> disputes." {
		t.Errorf("Tools[1].Description = %q (escapes decoded)", d)
	}
	if f := r.Tool("fork"); f == nil || !strings.Contains(string(f.Parameters), `"enum":["analyst","researcher"]`) {
		t.Errorf("Tool(fork).Parameters = %v, want the schema as recorded", f)
	}
	if string(r.ToolChoice) != `{"type":"function","function":{"name":"fork"}}` {
		t.Errorf("ToolChoice = %s", r.ToolChoice)
	}
	want := []msg{
		{Role: "system", Text: "# House rules\n\nBe brief.\n\n# Analyst\n\nYou answer revenue questions.\n\n# Forking\n\nCall fork when independent items need the same work.\n"},
		{Role: "developer", Text: "Prefer tables."},
		{Role: "user", Text: "Compare Q3 revenue across EU, US and APAC"},
		{Role: "assistant", Calls: []Call{{ID: "call_idx1", Name: "read_file", Arguments: `{"path":"regions/index.md"}`}, {ID: "call_idx2", Name: "list_dir", Arguments: `{"path":"regions"}`}}},
		{Role: "tool", Text: "# Regions\n\n- eu: regions/eu.md\n", CallID: "call_idx1"},
		{Role: "tool", Text: "eu.md us.md apac.md", CallID: "call_idx2"},
		{}, // "not a message": kept as an empty entry so indexes match the array
		{Role: "assistant", Name: "analyst", Text: "Reading the three reports."},
	}
	if got := messages(r.Messages); !reflect.DeepEqual(got, want) {
		t.Errorf("Messages =\n%+v\nwant\n%+v", got, want)
	}
	if got := partTypes(r.Messages[2].Parts); !reflect.DeepEqual(got, []string{"text", "image_url", "text"}) {
		t.Errorf("user parts = %q, want text, image_url, text", got)
	}
	if r.Messages[0].Parts != nil {
		t.Errorf("string content has parts %v, want none", r.Messages[0].Parts)
	}
}

func TestReadResponse_OpenAIChat(t *testing.T) {
	r, err := ReadResponse(readTestdata(t, "openai_chat_response.json"), "")
	if err != nil {
		t.Fatal(err)
	}
	want := msg{Role: "assistant", Text: "Forking per region.", Calls: []Call{
		{ID: "call_fork1", Name: "fork", Arguments: `{"context":"compact","branches":[{"name":"eu","instructions":"Total EU Q3 revenue."}]}`},
		{ID: "call_r2", Name: "read_file", Arguments: `{"path":"regions/us.md"}`}, // an object, kept as its JSON text
	}}
	if got := messages([]Message{r.Message})[0]; !reflect.DeepEqual(got, want) {
		t.Errorf("Message = %+v, want %+v", got, want)
	}
	if r.Format != OpenAIChat || r.ID != "chatcmpl-rec1" || r.Model != "gpt-4.1-mini-2025-04-14" || r.FinishReason != "tool_calls" {
		t.Errorf("format, id, model, finish = %s, %q, %q, %q", r.Format, r.ID, r.Model, r.FinishReason)
	}
	wantUsage := record.Usage{In: 812, Out: 96, Cached: 768, CachedReported: true, Reasoning: 64, ReasoningReported: true}
	if r.Usage == nil || *r.Usage != wantUsage {
		t.Errorf("Usage = %+v, want %+v", r.Usage, wantUsage)
	}
	if !strings.HasPrefix(string(r.UsageJSON), `{"prompt_tokens":812,`) {
		t.Errorf("UsageJSON = %s, want the object as sent", r.UsageJSON)
	}
	if got := r.Message.CallNames(); !reflect.DeepEqual(got, []string{"fork", "read_file"}) {
		t.Errorf("CallNames() = %q", got)
	}
}

func TestReadResponse_OpenAIChatUsage(t *testing.T) {
	tests := []struct {
		name, usage string
		want        *record.Usage
	}{
		{"details null", `{"prompt_tokens":812,"completion_tokens":96,"prompt_tokens_details":null,"completion_tokens_details":null}`, &record.Usage{In: 812, Out: 96}},
		{"deepseek cache hits", `{"prompt_tokens":100,"completion_tokens":5,"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36}`, &record.Usage{In: 100, Out: 5, Cached: 64, CachedReported: true}},
		{"cached zero is reported", `{"prompt_tokens":10,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":0}}`, &record.Usage{In: 10, Out: 1, CachedReported: true}},
		{"absent", `null`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ReadResponse([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":`+tt.usage+`}`), OpenAIChat)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.Usage, tt.want) {
				t.Errorf("Usage = %+v, want %+v", r.Usage, tt.want)
			}
		})
	}
}

func TestReadStream(t *testing.T) {
	var deltas []string
	f, err := os.Open(filepath.Join("testdata", "openai_chat_stream.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ReadStream(f, func(s string) { deltas = append(deltas, s) })
	if err != nil {
		t.Fatal(err)
	}
	want := msg{Role: "assistant", Text: "Hi there", Calls: []Call{{ID: "c1", Name: "fork", Arguments: `{"a":1}`}, {ID: "c2", Name: "read_file", Arguments: `{}`}}}
	if got := messages([]Message{r.Message})[0]; !reflect.DeepEqual(got, want) {
		t.Errorf("Message = %+v, want %+v (choice 1 ignored, calls by index)", got, want)
	}
	if !reflect.DeepEqual(deltas, []string{"Hi ", "there"}) {
		t.Errorf("deltas = %q, want the first choice's pieces in order", deltas)
	}
	if r.ID != "chatcmpl-s1" || r.Model != "gpt-4.1-mini" || r.FinishReason != "tool_calls" {
		t.Errorf("id, model, finish = %q, %q, %q", r.ID, r.Model, r.FinishReason)
	}
	if wantU := (record.Usage{In: 520, Out: 21, Cached: 384, CachedReported: true}); r.Usage == nil || *r.Usage != wantU {
		t.Errorf("Usage = %+v, want %+v", r.Usage, wantU)
	}
	// A recorded stream reads the same through ReadResponse.
	r2, err := ReadResponse(readTestdata(t, "openai_chat_stream.txt"), "")
	if err != nil || !reflect.DeepEqual(r2, r) {
		t.Errorf("ReadResponse(stream) = %+v, %v; want what ReadStream read", r2, err)
	}
}

func TestReadStream_Errors(t *testing.T) {
	tests := []struct {
		name, stream, want string
	}{
		{"error event", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n", "the provider sent an error in the stream: overloaded"},
		{"no chunks", "event: ping\n\ndata: [DONE]\n\n", "the stream held no chunks"},
		{"broken chunk", "data: {\"choices\":[\n\n", "read stream chunk: not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadStream(strings.NewReader(tt.stream), nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	_, err := ReadStream(strings.NewReader("data: {\"error\":{\"message\":\"overloaded\"}}\n"), nil)
	var se *StreamError
	if !errors.As(err, &se) || se.Message != "overloaded" {
		t.Errorf("err = %v, want a *StreamError", err)
	}
}

func TestReadRequest_OpenAIResponses(t *testing.T) {
	r, err := ReadRequest(readTestdata(t, "openai_responses_request.json"), "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Format != OpenAIResponses || r.Model != "gpt-5-codex" || !r.Stream || string(r.ToolChoice) != `"auto"` {
		t.Errorf("format, model, stream, tool_choice = %s, %q, %v, %s", r.Format, r.Model, r.Stream, r.ToolChoice)
	}
	if want := "You are Codex, a coding agent.\n\n<permissions instructions>sandbox: workspace-write</permissions instructions>"; r.System != want {
		t.Errorf("System = %q, want the instructions then the developer message", r.System)
	}
	if got, want := r.ToolNames(), []string{"spawn_agent", "web_search_preview"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ToolNames() = %q, want %q", got, want)
	}
	if r.Tools[0].Description != "Start a sub-agent." || !strings.Contains(string(r.Tools[0].Parameters), `"message"`) {
		t.Errorf("Tools[0] = %+v", r.Tools[0])
	}
	want := []msg{
		{Role: "developer", Text: "<permissions instructions>sandbox: workspace-write</permissions instructions>"},
		{Role: "user", Text: "Compare the three regional reports"},
		{Role: "assistant", Calls: []Call{
			{ID: "call_1", Name: "spawn_agent", Arguments: `{"message":"Summarise eu.csv","agent_type":"explorer"}`},
			{ID: "call_2", Name: "spawn_agent", Arguments: `{"message":"Summarise us.csv","agent_type":"explorer"}`}}},
		{Role: "tool", CallID: "call_1", Text: `{"agent_id":"C1","nickname":"Kepler"}`},
		{Role: "tool", CallID: "call_2", Text: `{"agent_id":"C2"}`},
		{Role: "assistant", Text: "Both agents are running.", Calls: []Call{{ID: "call_3", Name: "apply_patch", Arguments: "*** Begin Patch"}}},
		{Role: "tool", CallID: "call_3", Text: "Done"},
	}
	if got := messages(r.Messages); !reflect.DeepEqual(got, want) {
		t.Errorf("Messages =\n%+v\nwant\n%+v", got, want)
	}

	// input as a plain string.
	r, err = ReadRequest([]byte(`{"model":"gpt-4.1","input":"Tell me a joke"}`), "")
	if err != nil || len(r.Messages) != 1 || r.Messages[0].Role != "user" || r.Messages[0].Text != "Tell me a joke" || r.System != "" {
		t.Errorf("string input: %+v, %v", r, err)
	}
}

func TestReadResponse_OpenAIResponses(t *testing.T) {
	r, err := ReadResponse(readTestdata(t, "openai_responses_response.json"), "")
	if err != nil {
		t.Fatal(err)
	}
	want := msg{Role: "assistant", Text: "Reading the EU report.", Calls: []Call{{ID: "call_9", Name: "shell", Arguments: `{"command":["cat","eu.csv"]}`}}}
	if got := messages([]Message{r.Message})[0]; !reflect.DeepEqual(got, want) {
		t.Errorf("Message = %+v, want %+v", got, want)
	}
	if r.Format != OpenAIResponses || r.ID != "resp_67ccd2bed1ec8190" || r.Model != "gpt-5-codex-2025-09-15" || r.FinishReason != "completed" {
		t.Errorf("format, id, model, finish = %s, %q, %q, %q", r.Format, r.ID, r.Model, r.FinishReason)
	}
	if got := partTypes(r.Message.Parts); !reflect.DeepEqual(got, []string{"reasoning", "output_text"}) {
		t.Errorf("parts = %q", got)
	}
	wantU := record.Usage{In: 5200, Out: 180, Cached: 3000, CachedReported: true, Reasoning: 64, ReasoningReported: true}
	if r.Usage == nil || *r.Usage != wantU {
		t.Errorf("Usage = %+v, want %+v", r.Usage, wantU)
	}

	r, err = ReadResponse([]byte(`{"object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[]}`), "")
	if err != nil || r.FinishReason != "max_output_tokens" {
		t.Errorf("incomplete: finish %q, %v; want the incomplete reason", r.FinishReason, err)
	}
}

func TestReadRequest_Anthropic(t *testing.T) {
	r, err := ReadRequest(readTestdata(t, "anthropic_request.json"), "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Format != Anthropic || r.Model != "claude-opus-4-6" || !r.Stream {
		t.Errorf("format, model, stream = %s, %q, %v", r.Format, r.Model, r.Stream)
	}
	if want := "You are Claude Code, Anthropic's official CLI for Claude.\n\n# Project rules\nRun mix test before committing."; r.System != want {
		t.Errorf("System = %q, want the two system blocks joined by a blank line", r.System)
	}
	if got, want := r.ToolNames(), []string{"Bash", "Read", "web_search"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ToolNames() = %q, want %q", got, want)
	}
	if !strings.Contains(string(r.Tool("Bash").Parameters), `"command"`) {
		t.Errorf("Bash parameters = %s, want its input_schema", r.Tool("Bash").Parameters)
	}
	want := []msg{
		{Role: "user", Text: "start phoenix in background"},
		{Role: "assistant", Text: "Starting the server.", Calls: []Call{
			{ID: "toolu_018GZVh9ymkrdx1TnR8reg5Y", Name: "Bash", Arguments: `{"command":"mix phx.server","description":"Start Phoenix server in background","run_in_background":true}`},
			{ID: "toolu_01FZ9TWbiy1LPzHm1AAyUazo", Name: "Read", Arguments: `{"file_path":"/r/a.yaml"}`}}},
		{Role: "tool", CallID: "toolu_018GZVh9ymkrdx1TnR8reg5Y", Text: "Command running in background with ID: bae407b."},
		{Role: "tool", CallID: "toolu_01FZ9TWbiy1LPzHm1AAyUazo", Text: "File does not exist.", IsError: true},
		{Role: "user", Text: "[Request interrupted by user]"},
	}
	if got := messages(r.Messages); !reflect.DeepEqual(got, want) {
		t.Errorf("Messages =\n%+v\nwant\n%+v", got, want)
	}
	if got := r.Messages[1].Parts; len(got) != 2 || got[0] != (Part{Type: "thinking", Text: "Start it with run_in_background."}) {
		t.Errorf("assistant parts = %+v, want the thinking block then the text", got)
	}

	// A system string.
	r, err = ReadRequest([]byte(`{"model":"claude-sonnet-4-5","system":"Be brief.","messages":[{"role":"user","content":"hi"}]}`), Anthropic)
	if err != nil || r.System != "Be brief." {
		t.Errorf("system string: %q, %v", r.System, err)
	}
}

func TestReadResponse_Anthropic(t *testing.T) {
	r, err := ReadResponse(readTestdata(t, "anthropic_response.json"), "")
	if err != nil {
		t.Fatal(err)
	}
	want := msg{Role: "assistant", Text: "Reading both configs.", Calls: []Call{
		{ID: "toolu_A", Name: "Read", Arguments: `{"file_path":"/r/a.yaml"}`},
		{ID: "toolu_B", Name: "Read", Arguments: `{"file_path":"/r/b.yaml"}`}}}
	if got := messages([]Message{r.Message})[0]; !reflect.DeepEqual(got, want) {
		t.Errorf("Message = %+v, want %+v", got, want)
	}
	if r.Format != Anthropic || r.ID != "msg_0167kgZUrgcT7dg7uZK7hVSg" || r.FinishReason != "tool_use" {
		t.Errorf("format, id, finish = %s, %q, %q", r.Format, r.ID, r.FinishReason)
	}
	// in = 3 uncached + 7883 written + 17915 read.
	wantU := record.Usage{In: 3 + 7883 + 17915, Out: 27, Cached: 17915, CachedReported: true, CacheWrite: 7883, CacheWriteReported: true}
	if r.Usage == nil || *r.Usage != wantU {
		t.Errorf("Usage = %+v, want %+v", r.Usage, wantU)
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Format
	}{
		{"chat request", "openai_chat_request.json", OpenAIChat},
		{"chat response", "openai_chat_response.json", OpenAIChat},
		{"chat stream", "openai_chat_stream.txt", OpenAIChat},
		{"responses request", "openai_responses_request.json", OpenAIResponses},
		{"responses response", "openai_responses_response.json", OpenAIResponses},
		{"anthropic request", "anthropic_request.json", Anthropic},
		{"anthropic response", "anthropic_response.json", Anthropic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Detect(readTestdata(t, tt.body))
			if err != nil || got != tt.want {
				t.Errorf("Detect(%s) = %q, %v; want %q", tt.body, got, err, tt.want)
			}
		})
	}
	inline := []struct {
		name, body string
		want       Format
	}{
		{"chat without tools", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, OpenAIChat},
		{"anthropic by tool_result", `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}]}`, Anthropic},
		{"anthropic by input_schema", `{"messages":[],"tools":[{"name":"x","input_schema":{}}]}`, Anthropic},
		{"responses by instructions", `{"instructions":"be brief"}`, OpenAIResponses},
		{"anthropic error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, Anthropic},
		{"responses stream", "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{}}\n\n", OpenAIResponses},
		{"anthropic stream", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n", Anthropic},
	}
	for _, tt := range inline {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Detect([]byte(tt.body))
			if err != nil || got != tt.want {
				t.Errorf("Detect() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestRead_Errors(t *testing.T) {
	tests := []struct {
		name, body string
		format     Format
		response   bool
		want       string
	}{
		{"empty", "  ", "", false, "the body is empty"},
		{"not json", "{nope", "", false, "not valid JSON"},
		{"array", `[1,2]`, "", false, "not a JSON object"},
		{"unknown shape", `{"hello":"world"}`, "", false, "not a body of a format we read (tried OpenAI Chat Completions, OpenAI Responses, Anthropic Messages)"},
		{"chat without messages", `{"model":"m"}`, OpenAIChat, false, "read openai-chat request: it has no messages array"},
		{"chat messages not an array", `{"messages":{"role":"user"}}`, OpenAIChat, false, "its messages is not an array"},
		{"responses without input", `{"model":"m"}`, OpenAIResponses, false, "it has neither input nor instructions"},
		{"anthropic without messages", `{"model":"m","system":"x"}`, Anthropic, false, "it has no messages array"},
		{"unknown format", `{"messages":[]}`, "gemini", false, `unknown format "gemini"`},
		{"no choices", `{"object":"chat.completion","choices":[]}`, "", true, "the response has no choices"},
		{"openai error", `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, "", true, "the response is an error: Rate limit reached"},
		{"anthropic error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "", true, "the response is an error: Overloaded"},
		{"responses failed", `{"object":"response","status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}`, "", true, "the response is an error: boom"},
		{"anthropic stream error", "event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n", "", true, "the provider sent an error in the stream: Overloaded"},
		{"responses stream failed", "data: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\ndata: {\"type\":\"response.failed\",\"response\":{\"error\":{\"message\":\"boom\"}}}\n", "", true, "the provider sent an error in the stream: boom"},
		{"anthropic without content", `{"type":"message","role":"assistant"}`, "", true, "the response has no content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.response {
				_, err = ReadResponse([]byte(tt.body), tt.format)
			} else {
				_, err = ReadRequest([]byte(tt.body), tt.format)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	_, err := ReadResponse([]byte(`{"error":{"message":"bad key","type":"invalid_request_error","code":401}}`), "")
	var eb *ErrorBody
	if !errors.As(err, &eb) || eb.Code != "401" || eb.Type != "invalid_request_error" {
		t.Errorf("err = %#v, want an *ErrorBody with code 401", err)
	}
}

// Lenient: fields of the wrong type are ignored, not fatal.
func TestReadRequest_Lenient(t *testing.T) {
	body := `{"model":5,"stream":"yes","messages":[{"role":"user","content":42},{"role":"assistant","tool_calls":[{"id":7,"function":"read_file"},{"function":{"name":"fork","arguments":null}}]}],"tools":[{"type":"function","function":{"name":["x"]}},"junk"]}`
	r, err := ReadRequest([]byte(body), "")
	if err != nil {
		t.Fatal(err)
	}
	want := []msg{{Role: "user"}, {Role: "assistant", Calls: []Call{{}, {Name: "fork"}}}}
	if got := messages(r.Messages); r.Model != "" || r.Stream || !reflect.DeepEqual(got, want) {
		t.Errorf("model %q stream %v messages %+v; want the readable parts: %+v", r.Model, r.Stream, got, want)
	}
	if got := r.ToolNames(); !reflect.DeepEqual(got, []string{"", ""}) {
		t.Errorf("ToolNames() = %q", got)
	}
}
