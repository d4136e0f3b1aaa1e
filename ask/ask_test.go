package ask

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goldenfile "github.com/inspect-dev/inspect/internal/golden"

	openai "github.com/sashabaranov/go-openai"

	"github.com/inspect-dev/inspect/ask/asktest"
	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/internal/llmhttp/llmhttptest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const (
	testKey = "fake-key-8f2c1e0b7a6d4c3e9f10"
	oldRole = "# Analyst\n\nYou answer revenue questions by reading the regional reports in the workspace.\nRead regions/index.md first to find the regions.\n"
	newRole = "# Analyst\n\nYou answer revenue questions by reading the regional reports in the workspace.\nWhen several regions need the same work, fork: one branch per region, each returning its total.\n"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func loadCall(t *testing.T, name string) (*Request, *chat.Response) {
	t.Helper()
	req, err := ParseRequest(readTestdata(t, name+"_request.json"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := chat.ReadResponse(readTestdata(t, name+"_response.json"), chat.OpenAIChat)
	if err != nil {
		t.Fatal(err)
	}
	return req, rep
}

// rawField returns the bytes of a top-level field's value.
func rawField(t *testing.T, body []byte, key string) []byte {
	t.Helper()
	o, err := parseObject(body)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := o.get(key)
	if !ok {
		return nil
	}
	return body[f.val.start:f.val.end]
}

type chatMessage struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func TestQuestion(t *testing.T) {
	for _, name := range []string{"fork", "serial"} {
		t.Run(name, func(t *testing.T) {
			req, rec := loadCall(t, name)
			q := DefaultQuestion(req, rec)
			body, err := Question(req, rec, q)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "question_"+name+".golden", body)

			// The recorded request up to the end of its messages is kept byte for byte.
			if !bytes.HasPrefix(body, req.Body[:req.PrefixLen()]) {
				t.Fatalf("body does not start with the recorded request's %d bytes up to the end of its messages", req.PrefixLen())
			}
			// The tools, byte for byte.
			if got, want := rawField(t, body, "tools"), rawField(t, req.Body, "tools"); !bytes.Equal(got, want) {
				t.Errorf("tools changed:\ngot  %s\nwant %s", got, want)
			}
			if err := asktest.ValidateChat(body); err != nil {
				t.Errorf("ValidateChat: %v", err)
			}
			var got struct {
				Messages      []chatMessage   `json:"messages"`
				ToolChoice    string          `json:"tool_choice"`
				Stream        bool            `json:"stream"`
				StreamOptions json.RawMessage `json:"stream_options"`
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if got.ToolChoice != "none" || !got.Stream || string(got.StreamOptions) != `{"include_usage":true}` {
				t.Errorf("tool_choice=%q stream=%v stream_options=%s, want none, true, include_usage", got.ToolChoice, got.Stream, got.StreamOptions)
			}
			added := got.Messages[req.Messages():]
			if want := 1 + len(rec.Message.Calls) + 1; len(added) != want {
				t.Fatalf("appended %d messages, want %d", len(added), want)
			}
			asst := added[0]
			if asst.Role != "assistant" || len(asst.ToolCalls) != len(rec.Message.Calls) {
				t.Fatalf("first appended message = %+v, want the recorded assistant turn", asst)
			}
			for i, tc := range asst.ToolCalls {
				if rc := rec.Message.Calls[i]; tc.ID != rc.ID || tc.Function.Name != rc.Name || tc.Function.Arguments != rc.Arguments {
					t.Errorf("tool_calls[%d] = %+v, want the recorded %+v", i, tc, rc)
				}
				res := added[1+i]
				if res.Role != "tool" || res.ToolCallID != tc.ID || res.Content != NotRun {
					t.Errorf("message after the assistant turn #%d = %+v, want a tool result for %s saying it was not run", i, res, tc.ID)
				}
			}
			if rec.Message.Text != "" && asst.Content != rec.Message.Text {
				t.Errorf("assistant content = %v, want %q", asst.Content, rec.Message.Text)
			}
			last := added[len(added)-1]
			if last.Role != "user" || last.Content != q {
				t.Errorf("last message = %+v, want the question as a user message", last)
			}
		})
	}
}

func TestQuestion_ToolCallWithoutID(t *testing.T) {
	req, _ := loadCall(t, "fork")
	rec := &chat.Response{Message: chat.Message{Calls: []chat.Call{{Name: "read_file", Arguments: `{"path":"a"}`}, {Name: "read_file", Arguments: `{"path":"b"}`}}}}
	body, err := Question(req, rec, "why?")
	if err != nil {
		t.Fatal(err)
	}
	if err := asktest.ValidateChat(body); err != nil {
		t.Errorf("ValidateChat: %v", err)
	}
}

func TestDefaultQuestion(t *testing.T) {
	req, rec := loadCall(t, "fork")
	q := DefaultQuestion(req, rec)
	for _, want := range []string{"Why did you call fork with 3 branches (eu, us, apac; compact context)", "not run"} {
		if !strings.Contains(q, want) {
			t.Errorf("DefaultQuestion() = %q, want it to contain %q", q, want)
		}
	}
	q = DefaultQuestion(req, &chat.Response{Message: chat.Message{Text: "EU is larger."}})
	if want := "Why did you answer directly at that point instead of calling one of your tools (read_file, list_dir, transfer_to_billing, fork)?"; !strings.Contains(q, want) {
		t.Errorf("DefaultQuestion(answer) = %q, want it to contain %q", q, want)
	}
}

func TestReplacePrompt(t *testing.T) {
	req, _ := loadCall(t, "fork")
	body, change, err := ReplacePrompt(req, oldRole, newRole)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "prompt_fork.golden", body)
	if change.Message != 0 || change.Role != "system" || change.Occurrences != 1 || change.Trimmed {
		t.Errorf("change = %+v, want messages[0] system, 1 occurrence, untrimmed", change)
	}
	if got, want := change.Diff(0), []string{"- Read regions/index.md first to find the regions.", "+ When several regions need the same work, fork: one branch per region, each returning its total."}; !reflect.DeepEqual(got, want) {
		t.Errorf("Diff() = %q, want %q", got, want)
	}
	if !strings.Contains(change.String(), "-1/+1 lines") {
		t.Errorf("String() = %q", change.String())
	}

	// Only the role-file text changed: decode both, put the old text back, compare.
	var before, after map[string]any
	if err := json.Unmarshal(req.Body, &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, &after); err != nil {
		t.Fatal(err)
	}
	sys := after["messages"].([]any)[0].(map[string]any)
	sys["content"] = strings.Replace(sys["content"].(string), newRole, oldRole, 1)
	if !reflect.DeepEqual(before, after) {
		t.Error("the request changed beyond the role-file text")
	}
	// And at the byte level: everything around the system content is kept.
	if !bytes.HasPrefix(body, req.Body[:req.msgs[0].start]) || !bytes.HasSuffix(body, req.Body[req.msgs[0].end:]) {
		t.Error("bytes outside the system message changed")
	}
}

func TestReplacePrompt_Trimmed(t *testing.T) {
	req, _ := loadCall(t, "fork")
	_, change, err := ReplacePrompt(req, "\n\n"+oldRole+"\n\n", newRole+"\n")
	if err != nil {
		t.Fatal(err)
	}
	if !change.Trimmed {
		t.Error("Trimmed = false, want true: the padded text is only found trimmed")
	}
}

func TestReplacePrompt_ErrNotFound(t *testing.T) {
	req, _ := loadCall(t, "fork")
	if _, _, err := ReplacePrompt(req, "# Billing\n\nYou handle invoices.\n", newRole); err == nil {
		t.Error("ReplacePrompt with text not in the prompt: err = nil, want an error")
	}
}

func TestSetModel(t *testing.T) {
	req, _ := loadCall(t, "fork")
	body, err := SetModel(req.Body, "gpt-4.1")
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Replace(req.Body, []byte(`"model":"gpt-4.1-mini"`), []byte(`"model":"gpt-4.1"`), 1)
	if !bytes.Equal(body, want) {
		t.Errorf("SetModel changed more than the model:\n%s", body)
	}
}

func TestSetField_Insert(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", `{}`, `{"k":1}`},
		{"spaced", "{ \"a\" : [1, 2] }\n", "{ \"a\" : [1, 2],\"k\":1 }\n"},
		{"replace", `{"k":"x","b":2}`, `{"k":1,"b":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := setField([]byte(tt.in), "k", []byte("1"))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("setField(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestChoiceOf(t *testing.T) {
	tests := []struct {
		calls []string
		want  string
	}{
		{nil, "answers"},
		{[]string{"fork"}, "calls fork"},
		{[]string{"read_file", "read_file", "read_file"}, "calls read_file ×3"},
		{[]string{"read_file", "fork"}, "calls read_file, fork"},
	}
	for _, tt := range tests {
		if got := ChoiceOf(tt.calls); got != tt.want {
			t.Errorf("ChoiceOf(%q) = %q, want %q", tt.calls, got, tt.want)
		}
	}
}

// newTestClient returns a client for srv with short timeouts, whose waits
// between attempts are counted by a clock, not slept.
func newTestClient(srv *asktest.Server) *Client {
	c := NewClient(testKey, srv.URL)
	c.Clock = llmhttptest.NewClock(time.Now())
	c.HeaderTimeout = 2 * time.Second
	c.IdleTimeout = 2 * time.Second
	return c
}

func TestClient_Send(t *testing.T) {
	req, rec := loadCall(t, "fork")
	body, err := Question(req, rec, "why?")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("OK", func(t *testing.T) {
		srv := asktest.New(t, testKey)
		srv.Register("answer", asktest.ToolChoiceNone, asktest.Answer(asktest.Reply{Content: "Because the regions are independent.",
			Usage: &openai.Usage{PromptTokens: 900, CompletionTokens: 8, PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: 768}}}))
		var deltas []string
		r, err := newTestClient(srv).Send(context.Background(), body, func(s string) { deltas = append(deltas, s) })
		if err != nil {
			t.Fatal(err)
		}
		srv.Verify(t)
		if r.Message.Text != "Because the regions are independent." || len(deltas) < 2 || strings.Join(deltas, "") != r.Message.Text {
			t.Errorf("reply %q from deltas %q: want the streamed text in several pieces", r.Message.Text, deltas)
		}
		if r.Usage == nil || !r.Usage.CachedReported || r.Usage.Cached != 768 {
			t.Errorf("usage = %+v, want the stream's usage", r.Usage)
		}
		got := srv.Requests()
		if len(got) != 1 || !bytes.Equal(got[0].Body, body) {
			t.Fatalf("server got %d requests; want 1 with the body exactly as built", len(got))
		}
		if h := got[0].Header.Get("Authorization"); h != "Bearer "+testKey {
			t.Errorf("Authorization = %q", h)
		}
	})
	t.Run("JSON", func(t *testing.T) {
		srv := asktest.New(t, testKey)
		srv.Register("answer", nil, asktest.Answer(asktest.Reply{ToolCalls: []openai.ToolCall{asktest.Call("c1", "fork", `{}`)}}))
		r, err := newTestClient(srv).Send(context.Background(), req.Body, nil)
		if err != nil {
			t.Fatal(err)
		}
		srv.Verify(t)
		if Choice(r) != "calls fork" {
			t.Errorf("Choice() = %q, want calls fork", Choice(r))
		}
	})
	t.Run("ErrUnauthorized", func(t *testing.T) {
		srv := asktest.New(t, "sk-other")
		_, err := newTestClient(srv).Send(context.Background(), body, nil)
		var apiErr *APIError
		if !errors.As(err, &apiErr) || !apiErr.Unauthorized() {
			t.Fatalf("err = %v, want a 401 APIError", err)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("a 401 was sent %d times, want 1 (no retry)", n)
		}
	})
	t.Run("ErrModelNotFound", func(t *testing.T) {
		srv := asktest.New(t, testKey)
		srv.Register("404", nil, asktest.Error(http.StatusNotFound, "model_not_found", "The model `gpt-4.1-mini` does not exist or you do not have access to it."))
		_, err := newTestClient(srv).Send(context.Background(), body, nil)
		srv.Verify(t)
		var apiErr *APIError
		if !errors.As(err, &apiErr) || !apiErr.ModelNotFound() || apiErr.Model != "gpt-4.1-mini" {
			t.Fatalf("err = %v, want a model-not-found APIError naming gpt-4.1-mini", err)
		}
	})
	t.Run("RetryThenOK", func(t *testing.T) {
		srv := asktest.New(t, testKey)
		srv.Register("429 then 500 then ok", nil, asktest.Sequence(
			asktest.Error(http.StatusTooManyRequests, "rate_limit_exceeded", "slow down"),
			asktest.Error(http.StatusInternalServerError, "server_error", "oops"),
			asktest.Answer(asktest.Reply{Content: "ok"})))
		c := newTestClient(srv)
		r, err := c.Send(context.Background(), body, nil)
		if err != nil || r.Message.Text != "ok" {
			t.Fatalf("Send = %v, %v; want ok after two retries", r, err)
		}
		if n := len(srv.Requests()); n != 3 {
			t.Errorf("sent %d times, want 3", n)
		}
		if w := c.Clock.(*llmhttptest.Clock).Waits(); len(w) != 2 || w[0] != time.Second || w[1] != 2*time.Second {
			t.Errorf("waited %v between attempts, want [1s 2s] (the policy the runtime's provider has)", w)
		}
	})
	t.Run("ErrRetriesExhausted", func(t *testing.T) {
		srv := asktest.New(t, testKey)
		srv.Register("503", nil, asktest.Error(http.StatusServiceUnavailable, "unavailable", "down"))
		c := newTestClient(srv)
		c.Retries = 2
		_, err := c.Send(context.Background(), body, nil)
		var apiErr *APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Attempts != 3 {
			t.Fatalf("err = %v, want a 503 after 3 attempts", err)
		}
	})
	t.Run("ErrTimeout", func(t *testing.T) {
		srv := asktest.New(t, testKey)
		srv.Register("hang", nil, asktest.Hang(5*time.Second, nil))
		c := newTestClient(srv)
		c.HeaderTimeout = 50 * time.Millisecond
		c.Retries = 1
		start := time.Now()
		_, err := c.Send(context.Background(), body, nil)
		var te *TimeoutError
		if !errors.As(err, &te) || te.Attempts != 2 || te.Waiting != "the response to start" {
			t.Fatalf("err = %v, want a TimeoutError after 2 attempts", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("timed out after %s, want about 100ms", d)
		}
	})
	t.Run("ErrIdleTimeout", func(t *testing.T) {
		srv := asktest.New(t, testKey)
		srv.Register("stall", nil, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"}}]}\n\n"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		})
		c := newTestClient(srv)
		c.IdleTimeout = 50 * time.Millisecond
		var got string
		_, err := c.Send(context.Background(), body, func(s string) { got += s })
		var te *TimeoutError
		if !errors.As(err, &te) || te.Waiting != "more of the response" {
			t.Fatalf("err = %v, want an idle TimeoutError", err)
		}
		if n := len(srv.Requests()); n != 1 || got != "par" {
			t.Errorf("sent %d times after delivering %q; want no retry once text was shown", n, got)
		}
	})
	t.Run("KeyScrubbed", func(t *testing.T) {
		srv := asktest.New(t, testKey)
		srv.Register("echo", nil, asktest.Error(http.StatusBadRequest, "bad", "bad key "+testKey))
		_, err := newTestClient(srv).Send(context.Background(), body, nil)
		if err == nil || strings.Contains(err.Error(), testKey) {
			t.Fatalf("err = %v, want an error without the key", err)
		}
	})
}

func TestReplay(t *testing.T) {
	req, rec := loadCall(t, "fork")
	srv := asktest.New(t, testKey)
	var inFlight, peak atomic.Int32
	fork := asktest.Answer(asktest.Reply{ToolCalls: []openai.ToolCall{asktest.Call("c1", "fork", `{"branches":[]}`)}})
	read := asktest.Answer(asktest.Reply{ToolCalls: []openai.ToolCall{asktest.Call("c1", "read_file", `{"path":"regions/eu.md"}`)}})
	seq := asktest.Sequence(fork, fork, read, fork, fork)
	srv.Register("replay", func(b []byte) bool { return bytes.Equal(b, req.Body) }, func(w http.ResponseWriter, r *http.Request, b []byte) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(30 * time.Millisecond)
		inFlight.Add(-1)
		seq(w, r, b)
	})
	samples, err := Replay(context.Background(), newTestClient(srv), req.Body, 5, 2)
	if err != nil {
		t.Fatal(err)
	}
	srv.Verify(t)
	d := TallySamples(Choice(rec), samples)
	if got, want := d.String(), "calls fork 4/5 · calls read_file 1/5 (recorded: calls fork)"; got != want {
		t.Errorf("distribution = %q, want %q", got, want)
	}
	if d.Matches() != 4 || d.Err() != nil {
		t.Errorf("Matches() = %d, Err() = %v; want 4, nil", d.Matches(), d.Err())
	}
	if p := peak.Load(); p > 2 || p < 2 {
		t.Errorf("peak concurrency = %d, want 2 (the bound)", p)
	}
	for i, r := range srv.Requests() {
		if !bytes.Equal(r.Body, req.Body) {
			t.Errorf("replay request %d differs from the recorded body", i)
		}
	}
}

func TestTallySamples_Failed(t *testing.T) {
	e := errors.New("boom")
	d := TallySamples("calls fork", []Sample{{Err: e}, {Err: e}})
	if d.Err() != e || d.String() != "failed 2/2 (recorded: calls fork)" {
		t.Errorf("TallySamples(all failed) = %q, Err() = %v", d.String(), d.Err())
	}
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, name, got, *update)
}
