package chat

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/inspect-dev/inspect/record"
)

// tricky are strings whose escaping differs between JSON writers.
var tricky = []string{"", "plain", `quote " back \ slash`, "<b>&amp;</b>", "\b\f\n\r\t\x00\x01\x1f\x7f",
	"line\u2028sep\u2029para", "é ü 日本語 🦀", "bad \xff\xfe utf8 \xe2\x82", "\u00a0\ufeff", strings.Repeat("x<", 300)}

// randomString is a string of random bytes drawn to hit every escaping
// branch: ASCII, controls, HTML characters, multi-byte runes, U+2028,
// invalid UTF-8.
func randomString(r *rand.Rand) string {
	pieces := []string{"a", "Z", " ", "\"", "\\", "<", ">", "&", "\n", "\x00", "\x1f", "\b", "\f", "é", "日", "🦀", "\u2028", "\u2029", "\xff", "\xe2\x80", "\x7f"}
	var b strings.Builder
	for n := r.Intn(20); n > 0; n-- {
		b.WriteString(pieces[r.Intn(len(pieces))])
	}
	return b.String()
}

// TestAppendString_AsEncodingJSON: every string is written exactly as
// encoding/json writes it (the bytes our runtime records).
func TestAppendString_AsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	cases := append([]string(nil), tricky...)
	for range 5000 {
		cases = append(cases, randomString(r))
	}
	for _, s := range cases {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

// FuzzAppendString: any string is written as encoding/json writes it.
func FuzzAppendString(f *testing.F) {
	for _, s := range tricky {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}

// requestMessage is how importers.Write encoded a request's message
// before chat did (its own struct through encoding/json).
type requestMessage struct {
	Role       string            `json:"role"`
	Content    string            `json:"content,omitempty"`
	ToolCalls  []requestToolCall `json:"tool_calls,omitempty"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
}

type requestToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func randomMessage(r *rand.Rand) Message {
	m := Message{Role: []string{"system", "user", "assistant", "tool"}[r.Intn(4)]}
	if r.Intn(3) > 0 {
		m.Text = randomString(r)
	}
	if m.Role == "assistant" {
		for n := r.Intn(3); n > 0; n-- {
			m.Calls = append(m.Calls, Call{ID: randomString(r), Name: randomString(r), Arguments: randomString(r)})
		}
	}
	if m.Role == "tool" {
		m.CallID = randomString(r)
	}
	return m
}

// TestAppendMessage_AsBefore: a request's message is written as
// importers.Write wrote it with encoding/json.
func TestAppendMessage_AsBefore(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for range 3000 {
		m := randomMessage(r)
		old := requestMessage{Role: m.Role, Content: m.Text, ToolCallID: m.CallID}
		for _, c := range m.Calls {
			var tc requestToolCall
			tc.ID, tc.Type = c.ID, "function"
			tc.Function.Name, tc.Function.Arguments = c.Name, c.Arguments
			old.ToolCalls = append(old.ToolCalls, tc)
		}
		want, _ := json.Marshal(old)
		if got := AppendMessage(nil, m); string(got) != string(want) {
			t.Fatalf("AppendMessage(%+v)\n got %s\nwant %s", m, got, want)
		}
	}
}

// TestAppendTools_AsGoOpenAI: the tools array is go-openai's, schema
// compacted, null when missing or not JSON.
func TestAppendTools_AsGoOpenAI(t *testing.T) {
	tools := []Tool{
		{Name: "read_file", Description: "Read <a> file & more", Parameters: json.RawMessage(`{ "type": "object", "properties": {"p": {"type": "string", "description": "<path>"}} }`)},
		{Name: "nothing"},
		{Name: "broken", Description: "d", Parameters: json.RawMessage(`{"type":`)},
	}
	var ts []openai.Tool
	for _, tl := range tools {
		var params any
		if len(tl.Parameters) > 0 && json.Valid(tl.Parameters) {
			params = tl.Parameters
		}
		ts = append(ts, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: tl.Name, Description: tl.Description, Parameters: params}})
	}
	b, err := json.Marshal(ts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(AppendTools(nil, tools)), `,"tools":`+string(b); got != want {
		t.Errorf("AppendTools\n got %s\nwant %s", got, want)
	}
	if got := AppendTools([]byte("x"), nil); string(got) != "x" {
		t.Errorf("no tools: %q", got)
	}
}

// TestEncodeResponse_Reconstructed_AsGoOpenAI: the Reconstructed response
// is go-openai's ChatCompletionResponse as encoding/json writes it, for
// every combination of text, calls and reported usage.
func TestEncodeResponse_Reconstructed_AsGoOpenAI(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for i := range 2000 {
		m := randomMessage(r)
		m.Role, m.CallID = "assistant", ""
		if i%5 == 0 { // empty ids, names, arguments: go-openai leaves them out
			m.Calls = []Call{{}, {Name: "n"}, {Arguments: "{}"}}
		}
		u := record.Usage{In: r.Int63n(1e6), Out: r.Int63n(1e5), Cached: r.Int63n(1e5), Reasoning: r.Int63n(1e4),
			CachedReported: r.Intn(2) == 0, ReasoningReported: r.Intn(2) == 0}
		model := randomString(r)
		msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: m.Text}
		for _, c := range m.Calls {
			msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{ID: c.ID, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
		}
		finish := openai.FinishReasonStop
		if len(m.Calls) > 0 {
			finish = openai.FinishReasonToolCalls
		}
		usage := openai.Usage{PromptTokens: int(u.In), CompletionTokens: int(u.Out), TotalTokens: int(u.In + u.Out)}
		if u.CachedReported {
			usage.PromptTokensDetails = &openai.PromptTokensDetails{CachedTokens: int(u.Cached)}
		}
		if u.ReasoningReported {
			usage.CompletionTokensDetails = &openai.CompletionTokensDetails{ReasoningTokens: int(u.Reasoning)}
		}
		want, err := json.Marshal(openai.ChatCompletionResponse{Object: "chat.completion", Model: model,
			Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: finish}}, Usage: usage})
		if err != nil {
			t.Fatal(err)
		}
		if got := EncodeResponse(model, m, "", u, Reconstructed); string(got) != string(want) {
			t.Fatalf("EncodeResponse(%+v, %+v)\n got %s\nwant %s", m, u, got, want)
		}
	}
}

// TestEncode_ReadsBack: a request and a response in either layout read
// back through ReadRequest and ReadResponse as what was put in.
func TestEncode_ReadsBack(t *testing.T) {
	msgs := []Message{
		{Role: "system", Text: "Be brief <always>."},
		{Role: "user", Name: "ann", Text: "hi & bye"},
		{Role: "assistant", Calls: []Call{{ID: "c1", Name: "read", Arguments: `{"p":"a\u2028b"}`}}},
		{Role: "tool", CallID: "c1", Text: "contents\n"},
		{Role: "assistant", Text: "done"},
	}
	tools := []Tool{{Name: "read", Description: "reads", Parameters: json.RawMessage(`{"type":"object"}`)}}
	u := record.Usage{In: 100, Out: 7, Cached: 40, CachedReported: true}
	for _, l := range []Layout{Reconstructed, Traced} {
		req, err := ReadRequest(EncodeRequest("m-1", msgs, tools, l), OpenAIChat)
		if err != nil {
			t.Fatalf("layout %d: %v", l, err)
		}
		if req.Model != "m-1" || req.System != "Be brief <always>." || !reflect.DeepEqual(req.ToolNames(), []string{"read"}) ||
			string(req.Tools[0].Parameters) != `{"type":"object"}` || len(req.Messages) != len(msgs) {
			t.Fatalf("layout %d: request %+v", l, req)
		}
		for i, m := range req.Messages {
			w := msgs[i]
			if m.Role != w.Role || m.Text != w.Text || m.Name != w.Name || m.CallID != w.CallID || !reflect.DeepEqual(m.Calls, w.Calls) {
				t.Errorf("layout %d message %d: %+v, want %+v", l, i, m, w)
			}
		}
		resp, err := ReadResponse(EncodeResponse("m-1", msgs[2], "", u, l), OpenAIChat)
		if err != nil {
			t.Fatalf("layout %d: %v", l, err)
		}
		if resp.Model != "m-1" || resp.FinishReason != "tool_calls" || !reflect.DeepEqual(resp.Message.Calls, msgs[2].Calls) ||
			resp.Usage == nil || *resp.Usage != u {
			t.Errorf("layout %d: response %+v usage %+v", l, resp, resp.Usage)
		}
	}
	raw, err := EncodeRawRequest("m", json.RawMessage(`[ {"role": "user", "content": "<hi>"} ]`))
	if err != nil || string(raw) != `{"messages":[{"role":"user","content":"\u003chi\u003e"}],"model":"m"}` {
		t.Errorf("EncodeRawRequest: %s %v", raw, err)
	}
}
