package ask

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Reply is one model response: its text, its tool calls and what the
// provider reported about it.
type Reply struct {
	// Content is the assistant's text ("" when it only called tools).
	Content string
	// ToolCalls are the calls the response made, in order.
	ToolCalls []openai.ToolCall
	// Model is the model the provider says answered, or "".
	Model string
	// FinishReason is the provider's finish_reason of the first choice.
	FinishReason string
	// Usage is the token usage when the provider reported it, else nil.
	Usage *openai.Usage
}

// Calls returns the names of the tools the reply called, in order.
func (r *Reply) Calls() []string {
	out := make([]string, len(r.ToolCalls))
	for i, c := range r.ToolCalls {
		out[i] = c.Function.Name
	}
	return out
}

// Choice is the reply's choice label (see ChoiceOf).
func (r *Reply) Choice() string { return ChoiceOf(r.Calls()) }

// ChoiceOf labels what a model response chose, given the tool names it
// called in order: "answers" when it called nothing, "calls fork",
// "calls read_file ×3", "calls read_file, fork". Recorded nodes and
// replayed replies get the same label for the same choice.
func ChoiceOf(calls []string) string {
	if len(calls) == 0 {
		return "answers"
	}
	var parts []string
	for i := 0; i < len(calls); {
		j := i
		for j < len(calls) && calls[j] == calls[i] {
			j++
		}
		if n := j - i; n > 1 {
			parts = append(parts, fmt.Sprintf("%s ×%d", calls[i], n))
		} else {
			parts = append(parts, calls[i])
		}
		i = j
	}
	return "calls " + strings.Join(parts, ", ")
}

// ParseReply decodes a response body: a chat.completion JSON object, or a
// recorded server-sent event stream of chat.completion.chunk objects.
func ParseReply(body []byte) (*Reply, error) {
	t := bytes.TrimSpace(body)
	if len(t) == 0 {
		return nil, errors.New("empty response")
	}
	if t[0] != '{' {
		return readStream(bytes.NewReader(t), nil)
	}
	var resp struct {
		openai.ChatCompletionResponse
		Error *openai.APIError `json:"error"`
	}
	if err := json.Unmarshal(t, &resp); err != nil {
		return nil, fmt.Errorf("decode response: %w", err)
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("the response is an error: %s", resp.Error.Message)
	}
	if len(resp.Choices) == 0 {
		return nil, errors.New("the response has no choices")
	}
	c := resp.Choices[0]
	r := &Reply{Content: c.Message.Content, ToolCalls: c.Message.ToolCalls, Model: resp.Model, FinishReason: string(c.FinishReason)}
	if c.Message.Content == "" && len(c.Message.MultiContent) > 0 {
		for _, p := range c.Message.MultiContent {
			r.Content += p.Text
		}
	}
	if resp.Usage != (openai.Usage{}) {
		u := resp.Usage
		r.Usage = &u
	}
	return r, nil
}

// streamError is an error event inside a 200 stream.
type streamError struct{ msg string }

func (e *streamError) Error() string { return "the provider sent an error in the stream: " + e.msg }

// readStream assembles a Reply from server-sent events, calling onDelta
// with each piece of content as it arrives (onDelta may be nil).
func readStream(r io.Reader, onDelta func(string)) (*Reply, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	reply := new(Reply)
	calls := map[int]*openai.ToolCall{} // by the chunks' tool call index
	var content strings.Builder
	chunks := 0
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue // event:, id:, comments and blank separators
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			break
		}
		var chunk struct {
			openai.ChatCompletionStreamResponse
			Error *openai.APIError `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return nil, fmt.Errorf("decode stream chunk: %w", err)
		}
		if chunk.Error != nil {
			return nil, &streamError{msg: chunk.Error.Message}
		}
		chunks++
		if chunk.Model != "" {
			reply.Model = chunk.Model
		}
		if chunk.Usage != nil {
			u := *chunk.Usage
			reply.Usage = &u
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			if ch.Delta.Content != "" {
				content.WriteString(ch.Delta.Content)
				if onDelta != nil {
					onDelta(ch.Delta.Content)
				}
			}
			for _, tc := range ch.Delta.ToolCalls {
				idx := len(calls)
				if tc.Index != nil {
					idx = *tc.Index
				}
				c := calls[idx]
				if c == nil {
					c = &openai.ToolCall{Type: openai.ToolTypeFunction}
					calls[idx] = c
				}
				if tc.ID != "" {
					c.ID = tc.ID
				}
				if tc.Type != "" {
					c.Type = tc.Type
				}
				c.Function.Name += tc.Function.Name
				c.Function.Arguments += tc.Function.Arguments
			}
			if ch.FinishReason != "" {
				reply.FinishReason = string(ch.FinishReason)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if chunks == 0 {
		return nil, errors.New("the stream held no chunks")
	}
	reply.Content = content.String()
	idx := make([]int, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		reply.ToolCalls = append(reply.ToolCalls, *calls[i])
	}
	return reply, nil
}
