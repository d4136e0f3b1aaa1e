package scripted

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/runtime/model"
	openai "github.com/sashabaranov/go-openai"
)

const script = `task: t
conversations:
  trunk:
    - calls:
        - read_file: {path: a.md, start_line: 2}
        - list_dir:
      latency: 2.5s
      tool_latency: 300ms
    - say: done
      usage: {in: 7, out: 3}
  eu:
    - bogus: 1
  us:
    - error: 503
      latency: 4s
`

func req(conv string, msgs ...string) *model.Request {
	r := &model.Request{Conversation: conv, Turn: "s#1", Body: openai.ChatCompletionRequest{Model: "m",
		Messages: []openai.ChatCompletionMessage{{Role: "system", Content: "You are the agent."}}}}
	for _, m := range msgs {
		r.Body.Messages = append(r.Body.Messages, openai.ChatCompletionMessage{Role: "user", Content: m})
	}
	return r
}

func TestModel_Replies(t *testing.T) {
	m := newModel(t, "script.yaml", script)
	ctx := context.Background()

	var sent []byte
	r := req("", "hello")
	r.Sent = func(b []byte) { sent = b }
	resp, err := m.Complete(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(sent) == 0 || !strings.HasPrefix(string(sent), `{"model":"m","messages":[`) {
		t.Errorf("Sent got %q, want the OpenAI-shaped body", sent)
	}
	calls := resp.Message.ToolCalls
	if len(calls) != 2 || calls[0].Function.Arguments != `{"path":"a.md","start_line":2}` || calls[1].Function.Arguments != "{}" || calls[0].ID != "call_trunk_1_1" {
		t.Errorf("calls = %+v", calls)
	}
	if resp.Latency != 2500*time.Millisecond || resp.ToolLatency != 300*time.Millisecond {
		t.Errorf("latency %s tool %s", resp.Latency, resp.ToolLatency)
	}
	if resp.Usage.In != int64(len(sent)/4) || !resp.Usage.CachedReported || resp.Usage.Cached != 0 {
		t.Errorf("usage = %+v, want in = %d bytes/4, cached 0 on the first request", resp.Usage, len(sent))
	}

	resp, err = m.Complete(ctx, req("", "hello", "more"))
	if err != nil || resp.Message.Content != "done" || resp.Usage.In != 7 || resp.Usage.Out != 3 {
		t.Fatalf("second reply = %+v, %v", resp, err)
	}
	if resp.Usage.Cached == 0 {
		t.Errorf("cached = 0, want the shared prefix with the first request")
	}

	// out of replies: an error naming the script line, never a hang
	_, err = m.Complete(ctx, req("", "again"))
	if err == nil || !strings.Contains(err.Error(), "script.yaml:3") || !strings.Contains(err.Error(), "ran out of replies after 2") {
		t.Errorf("out of replies: %v", err)
	}
	_, err = m.Complete(ctx, req("eu"))
	if err == nil || !strings.Contains(err.Error(), "script.yaml:12") || !strings.Contains(err.Error(), `unknown reply key "bogus"`) {
		t.Errorf("unusable reply: %v", err)
	}
	_, err = m.Complete(ctx, req("us"))
	var ce *model.CallError
	if !asCallError(err, &ce) || ce.Status != 503 || ce.Latency != 4*time.Second || !strings.Contains(ce.Reason, "script.yaml:14") {
		t.Errorf("scripted error: %#v", err)
	}
	_, err = m.Complete(ctx, req("apac"))
	if err == nil || !strings.Contains(err.Error(), `no entry "apac"`) {
		t.Errorf("missing conversation: %v", err)
	}
}

func asCallError(err error, ce **model.CallError) bool {
	c, ok := err.(*model.CallError)
	*ce = c
	return ok
}

func TestModel_CacheOrder(t *testing.T) {
	m := newModel(t, "s.yaml", "conversations:\n  trunk: [{say: a}, {say: b}, {say: c}]\n")
	a := req("", "same start, then one thing")
	a.Body.Tools = []openai.Tool{{Type: "function", Function: &openai.FunctionDefinition{Name: "x"}}}
	m.Complete(context.Background(), a)
	b := req("", "same start, then another")
	b.Body.Tools = a.Body.Tools
	resp, _ := m.Complete(context.Background(), b)
	// tools + system + the shared part of the user message
	if resp.Usage.Cached < 20 || resp.Usage.Cached >= resp.Usage.In {
		t.Errorf("cached = %d of in %d", resp.Usage.Cached, resp.Usage.In)
	}
	c := req("", "same start, then another")
	c.Body.Model = "other"
	resp, _ = m.Complete(context.Background(), c)
	if resp.Usage.Cached != 0 {
		t.Errorf("cached = %d across models, want 0", resp.Usage.Cached)
	}
}

func TestParse_Errors(t *testing.T) {
	for _, src := range []string{"", "task: [1\n", "conversations: 3\n", "tasks: x\nconversations: {}\n", "weird: 1\nconversations: {}\n"} {
		if _, err := Parse("s.yaml", []byte(src)); err == nil {
			t.Errorf("Parse(%q) = nil error", src)
		}
	}
}

// A usage that gives only one side estimates the other (bytes / 4), as if
// usage were absent for it; a misspelt usage key is an unusable reply
// naming its line, not a silent 0.
func TestModel_PartialUsage(t *testing.T) {
	m := newModel(t, "s.yaml", "conversations:\n  trunk:\n    - say: a\n      usage: {in: 7}\n    - say: b\n      usage: {out: 3}\n    - say: c\n      usage: {input: 7}\n")
	ctx := context.Background()
	var sent []byte
	r := req("", "hello")
	r.Sent = func(b []byte) { sent = b }
	resp, err := m.Complete(ctx, r)
	if err != nil || resp.Usage.In != 7 || resp.Usage.Out == 0 {
		t.Errorf("usage {in: 7} = %+v (%v), want in 7 and out estimated from the reply", resp.Usage, err)
	}
	r = req("", "hello")
	r.Sent = func(b []byte) { sent = b }
	resp, err = m.Complete(ctx, r)
	if err != nil || resp.Usage.Out != 3 || resp.Usage.In != int64(len(sent)/4) {
		t.Errorf("usage {out: 3} = %+v (%v), want out 3 and in = %d bytes/4", resp.Usage, err, len(sent))
	}
	_, err = m.Complete(ctx, req("", "hello"))
	if err == nil || !strings.Contains(err.Error(), "s.yaml:7") || !strings.Contains(err.Error(), `"input"`) {
		t.Errorf("usage {input: 7}: %v, want an error naming line 7 and the key", err)
	}
}

// Problems of the script itself are CallErrors with Script set; an `error:`
// reply stands for a provider failure and is not one.
func TestModel_ScriptFlag(t *testing.T) {
	m := newModel(t, "script.yaml", script)
	ctx := context.Background()
	m.next[""] = 2 // the trunk is out of replies
	for _, tt := range []struct {
		conv   string
		script bool
	}{{"", true}, {"eu", true}, {"apac", true}, {"us", false}} {
		_, err := m.Complete(ctx, req(tt.conv))
		var ce *model.CallError
		if !asCallError(err, &ce) || ce.Script != tt.script {
			t.Errorf("conversation %q: %#v, want a CallError with Script %v", tt.conv, err, tt.script)
		}
	}
}

// The simulated cache holds a request from its start plus its latency on:
// a sibling starting at the same virtual moment, or while the first is
// still being processed, does not hit it; one starting when it is done does.
func TestModel_CacheTime(t *testing.T) {
	m := newModel(t, "s.yaml", "conversations:\n  eu: [{say: a, latency: 2s}]\n  us: [{say: b, latency: 2s}]\n  apac: [{say: c}]\n  nordics: [{say: d}]\n")
	ctx := context.Background()
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		conv   string
		at     time.Duration
		cached bool
	}{
		{"eu", 0, false},
		{"us", 0, false},                         // eu's sibling at the same moment
		{"apac", 1999 * time.Millisecond, false}, // eu and us still in flight
		{"nordics", 2 * time.Second, true},       // eu and us answered: cached
	} {
		r := req(tt.conv, "the same branch instructions")
		r.At = t0.Add(tt.at)
		resp, err := m.Complete(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Usage.Cached > 0; got != tt.cached {
			t.Errorf("%s at +%s: cached %d, want cached %v", tt.conv, tt.at, resp.Usage.Cached, tt.cached)
		}
	}
}

// A request the provider did not answer — an `error:` reply, an unusable
// reply — never enters the cache.
func TestModel_CacheSkipsFailures(t *testing.T) {
	m := newModel(t, "s.yaml", "conversations:\n  eu: [{error: 500}]\n  us: [{say: b, latency: nope}]\n  apac: [{say: c}]\n")
	ctx := context.Background()
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, conv := range []string{"eu", "us"} {
		r := req(conv, "the same branch instructions")
		r.At = t0
		if _, err := m.Complete(ctx, r); err == nil {
			t.Fatalf("%s: no error", conv)
		}
	}
	r := req("apac", "the same branch instructions")
	r.At = t0.Add(time.Minute)
	resp, err := m.Complete(ctx, r)
	if err != nil || resp.Usage.Cached != 0 {
		t.Errorf("after two failed requests: cached %d (%v), want 0", resp.Usage.Cached, err)
	}
}

// newModel parses script text (named name) and returns its model.
func newModel(t *testing.T, name, text string) *Model {
	t.Helper()
	s, err := Parse(name, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return New(s)
}
