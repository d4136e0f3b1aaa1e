package ask

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/inspect-dev/inspect/chat"
)

// NotRun is the content of the tool result Question sends for each
// recorded tool call: the call is answered, so the request is valid, and the
// model is told that nothing ran.
const NotRun = "Not run: inspect is replaying this recorded call to ask about it; this tool was not executed and has no result."

// wireMessage is a chat message as Question appends it.
type wireMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Question builds the request that asks the model of a recorded call about
// its choice. The result is req.Body up to the end of its last message,
// byte for byte, then the recorded assistant turn (its text and tool
// calls), one tool message per tool call with NotRun, and question as a
// user message; after the messages array the recorded fields stay as they
// were (tools included) except that "tool_choice" is "none" (when the
// request has tools: the APIs refuse it without), "stream" is true and
// "stream_options" asks for usage, so the model answers in words and the
// answer streams.
//
// A recorded tool call without an id gets "call_<i>" (its index), so every
// tool message can name the call it answers.
func Question(req *Request, recorded *chat.Response, question string) ([]byte, error) {
	if recorded == nil {
		return nil, errors.New("no recorded response to ask about")
	}
	if strings.TrimSpace(question) == "" {
		return nil, errors.New("empty question")
	}
	rm := &recorded.Message
	msgs := make([]wireMessage, 0, len(rm.Calls)+2)
	asst := wireMessage{Role: "assistant"}
	if rm.Text != "" || len(rm.Calls) == 0 {
		c := rm.Text
		asst.Content = &c
	}
	var results []wireMessage
	for i, tc := range rm.Calls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		asst.ToolCalls = append(asst.ToolCalls, wireToolCall{ID: id, Type: "function",
			Function: wireFunction{Name: tc.Name, Arguments: tc.Arguments}})
		notRun := NotRun
		results = append(results, wireMessage{Role: "tool", ToolCallID: id, Content: &notRun})
	}
	msgs = append(msgs, asst)
	msgs = append(msgs, results...)
	q := question
	msgs = append(msgs, wireMessage{Role: "user", Content: &q})

	var tail []byte
	for _, m := range msgs {
		b, err := marshal(m)
		if err != nil {
			return nil, err
		}
		tail = append(append(tail, ','), b...)
	}
	if len(req.msgs) == 0 {
		tail = tail[1:]
	}
	at := req.PrefixLen()
	if len(req.msgs) > 0 {
		at = req.msgs[len(req.msgs)-1].end
	}
	body := splice(req.Body, span{at, at}, tail)
	var err error
	fields := []struct{ key, val string }{
		{"tool_choice", `"none"`},
		{"stream", `true`},
		{"stream_options", `{"include_usage":true}`},
	}
	if len(req.Read.Tools) == 0 {
		fields = fields[1:] // tool_choice is refused without tools
	}
	for _, kv := range fields {
		if body, err = setField(body, kv.key, []byte(kv.val)); err != nil {
			return nil, err
		}
	}
	return body, nil
}

// DefaultQuestion is the question asked when none is given: why the model
// chose the calls it made (naming them, and a fork's branches), or why it
// answered directly although it had tools.
func DefaultQuestion(req *Request, recorded *chat.Response) string {
	return defaultQuestion(req.Tools(), recorded)
}

// defaultQuestion is DefaultQuestion for a request offering the tools names.
func defaultQuestion(names []string, recorded *chat.Response) string {
	const preface = "I am reviewing your previous response, not asking you to continue the task. "
	if recorded == nil || len(recorded.Message.Calls) == 0 {
		tools := "a tool"
		if len(names) > 0 {
			tools = "one of your tools (" + strings.Join(names, ", ") + ")"
		}
		return preface + "Why did you answer directly at that point instead of calling " + tools + "? " +
			"Which instructions or messages led to that choice, and what would have had to be different " +
			"for you to call a tool, fork the work or hand it off instead?"
	}
	var calls []string
	for _, tc := range recorded.Message.Calls {
		calls = append(calls, describeCall(tc.Name, tc.Arguments))
	}
	what := strings.Join(calls, ", then ")
	if len(calls) > 1 {
		what = strings.Join(calls, " and ") + " in one response"
	}
	return preface + "Those tool calls were not run. Why did you call " + what + " at that point? " +
		"Which instructions, messages or tool descriptions led to that choice, what else did you consider " +
		"(another tool, several calls in one response, fork, a hand-off, answering directly), and what " +
		"would your instructions have had to say for you to choose differently?"
}

// describeCall names a call for the default question: a fork with its
// context and branches, any other call with its arguments, shortened.
func describeCall(name, args string) string {
	if name == "fork" {
		var f struct {
			Context  string `json:"context"`
			Branches []struct {
				Name  string `json:"name"`
				Agent string `json:"agent"`
			} `json:"branches"`
		}
		if json.Unmarshal([]byte(args), &f) == nil && len(f.Branches) > 0 {
			var names []string
			for _, b := range f.Branches {
				names = append(names, b.Name)
			}
			ctx := f.Context
			if ctx == "" {
				ctx = "inherit"
			}
			return fmt.Sprintf("fork with %d branches (%s; %s context)", len(f.Branches), strings.Join(names, ", "), ctx)
		}
	}
	a := strings.Join(strings.Fields(args), " ")
	if r := []rune(a); len(r) > 80 {
		a = string(r[:79]) + "…"
	}
	if a == "" || a == "{}" {
		return name
	}
	return name + " " + a
}
