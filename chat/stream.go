package chat

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// ReadEventStream assembles a response of format f from a server-sent
// event stream, calling onDelta (which may be nil) with each piece of the
// answer's text as it arrives: ReadStream for Chat Completions,
// ReadAnthropicStream, ReadResponsesStream. A stream that ends before the
// format says the answer is finished gives a Response whose FinishReason
// is "" (the caller tells a cut-off by it).
func ReadEventStream(r io.Reader, f Format, onDelta func(string)) (*Response, error) {
	switch f {
	case OpenAIChat, "":
		return ReadStream(r, onDelta)
	case Anthropic:
		return ReadAnthropicStream(r, onDelta)
	case OpenAIResponses:
		return ReadResponsesStream(r, onDelta)
	}
	return nil, unknownFormat(f)
}

// events calls fn with the JSON object of each data: line of an event
// stream (the event: lines name what the object's own "type" says, in
// both formats read here), up to the end of r or until fn says stop.
func events(r io.Reader, fn func(ev obj) (stop bool, err error)) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventLine)
	n := 0
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue // event:, id:, comments and blank separators
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			break
		}
		ev, err := top([]byte(data))
		if err != nil {
			return n, fmt.Errorf("read stream event: %w", err)
		}
		n++
		stop, err := fn(ev)
		if err != nil {
			return n, err
		}
		if stop {
			return n, nil
		}
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("read stream: %w", err)
	}
	return n, nil
}

// ReadAnthropicStream assembles an Anthropic Messages response from its
// event stream: message_start (id, model, input usage),
// content_block_start / _delta / _stop (text, tool_use with its input as
// partial JSON, thinking), message_delta (stop_reason, output usage),
// message_stop. FinishReason is the stop_reason, "" when the stream ended
// before message_delta gave one (the usage it carries comes with it). An error event gives a *StreamError.
func ReadAnthropicStream(r io.Reader, onDelta func(string)) (*Response, error) {
	resp := &Response{Format: Anthropic, Message: Message{Role: "assistant"}}
	type block struct {
		typ   string
		text  strings.Builder
		call  Call
		input strings.Builder
		given string // a tool_use's input as content_block_start gave it
	}
	blocks := map[int64]*block{}
	usage := obj{}
	n, err := events(r, func(ev obj) (bool, error) {
		switch ev.str("type") {
		case "error":
			e := errorBody(ev)
			if e == nil {
				e = &ErrorBody{Message: "no message"}
			}
			return true, &StreamError{Message: e.Message}
		case "message_start":
			m := object(ev["message"])
			resp.ID, resp.Model = m.str("id"), m.str("model")
			for k, v := range object(m["usage"]) {
				usage[k] = v
			}
		case "content_block_start":
			i, _ := ev.int("index")
			cb := object(ev["content_block"])
			b := &block{typ: cb.str("type")}
			switch b.typ {
			case "tool_use", "server_tool_use":
				b.call = Call{ID: cb.str("id"), Name: cb.str("name")}
				if in := cb.raw("input"); len(in) > 0 && string(in) != "{}" {
					b.given = string(in)
				}
			case "text":
				if s := cb.str("text"); s != "" {
					b.text.WriteString(s)
					if onDelta != nil {
						onDelta(s)
					}
				}
			case "thinking":
				b.text.WriteString(cb.str("thinking"))
			}
			blocks[i] = b
		case "content_block_delta":
			i, _ := ev.int("index")
			b := blocks[i]
			if b == nil {
				b = &block{typ: "text"}
				blocks[i] = b
			}
			d := object(ev["delta"])
			switch d.str("type") {
			case "text_delta":
				s := d.str("text")
				b.text.WriteString(s)
				if onDelta != nil && s != "" {
					onDelta(s)
				}
			case "input_json_delta":
				b.input.WriteString(d.str("partial_json"))
			case "thinking_delta":
				b.text.WriteString(d.str("thinking"))
			}
		case "message_delta":
			if s := object(ev["delta"]).str("stop_reason"); s != "" {
				resp.FinishReason = s
			}
			for k, v := range object(ev["usage"]) {
				usage[k] = v
			}
		case "message_stop":
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errors.New("the stream held no events")
	}
	idx := make([]int64, 0, len(blocks))
	for i := range blocks {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	var txt strings.Builder
	for _, i := range idx {
		b := blocks[i]
		switch b.typ {
		case "tool_use", "server_tool_use":
			c := b.call
			c.Arguments = b.input.String()
			if c.Arguments == "" {
				c.Arguments = b.given
			}
			if c.Arguments == "" {
				c.Arguments = "{}"
			}
			if b.typ == "tool_use" {
				resp.Message.Calls = append(resp.Message.Calls, c)
			}
		case "text":
			txt.WriteString(b.text.String())
			resp.Message.Parts = append(resp.Message.Parts, Part{Type: "text", Text: b.text.String()})
		case "thinking":
			resp.Message.Parts = append(resp.Message.Parts, Part{Type: "thinking", Text: b.text.String()})
		default:
			resp.Message.Parts = append(resp.Message.Parts, Part{Type: b.typ})
		}
	}
	resp.Message.Text = txt.String()
	if len(usage) > 0 {
		raw, _ := marshalObj(usage)
		resp.Usage, resp.UsageJSON = anthropicUsage(raw)
	}
	return resp, nil
}

// ReadResponsesStream assembles an OpenAI Responses response from its
// event stream: response.output_text.delta (text, passed to onDelta),
// response.output_item.done (each finished item: a message, a function
// call), and the final response.completed or response.incomplete, whose
// response object gives the id, model, status and usage (and the output,
// when it holds one). FinishReason is that status ("completed", or the
// incomplete reason), "" when the stream ended before it. An error event,
// or response.failed, gives a *StreamError.
func ReadResponsesStream(r io.Reader, onDelta func(string)) (*Response, error) {
	resp := &Response{Format: OpenAIResponses, Message: Message{Role: "assistant"}}
	var txt strings.Builder
	var done []obj // output items, in the order they finished
	var final obj
	n, err := events(r, func(ev obj) (bool, error) {
		switch typ := ev.str("type"); typ {
		case "error":
			msg := ev.str("message")
			if e := errorBody(ev); e != nil && msg == "" {
				msg = e.Message
			}
			if msg == "" {
				msg = "no message"
			}
			return true, &StreamError{Message: msg}
		case "response.failed":
			msg := "the response failed"
			if e := object(object(ev["response"])["error"]); e != nil && e.str("message") != "" {
				msg = e.str("message")
			}
			return true, &StreamError{Message: msg}
		case "response.created", "response.in_progress":
			m := object(ev["response"])
			resp.ID, resp.Model = m.str("id"), m.str("model")
		case "response.output_text.delta":
			s := ev.str("delta")
			txt.WriteString(s)
			if onDelta != nil && s != "" {
				onDelta(s)
			}
		case "response.output_item.done":
			if it := object(ev["item"]); it != nil {
				done = append(done, it)
			}
		case "response.completed", "response.incomplete":
			final = object(ev["response"])
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errors.New("the stream held no events")
	}
	items := done
	if final != nil && len(array(final["output"])) > 0 {
		items = nil
		for _, raw := range array(final["output"]) {
			items = append(items, object(raw))
		}
	}
	var fromItems strings.Builder
	for _, it := range items {
		switch it.str("type") {
		case "message":
			t, ps := content(it["content"])
			fromItems.WriteString(t)
			resp.Message.Parts = append(resp.Message.Parts, ps...)
		case "function_call", "custom_tool_call":
			resp.Message.Calls = append(resp.Message.Calls, responsesCall(it))
		}
	}
	resp.Message.Text = fromItems.String()
	if resp.Message.Text == "" {
		resp.Message.Text = txt.String()
	}
	if final != nil {
		if s := final.str("id"); s != "" {
			resp.ID = s
		}
		if s := final.str("model"); s != "" {
			resp.Model = s
		}
		resp.FinishReason = final.str("status")
		if d := object(final["incomplete_details"]); d != nil && d.str("reason") != "" {
			resp.FinishReason = d.str("reason")
		}
		if resp.FinishReason == "" {
			resp.FinishReason = "completed"
		}
		resp.Usage, resp.UsageJSON = responsesUsage(final.raw("usage"))
	}
	return resp, nil
}

func marshalObj(o obj) (json.RawMessage, error) { return json.Marshal(map[string]json.RawMessage(o)) }
