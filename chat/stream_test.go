package chat

import (
	"reflect"
	"strings"
	"testing"
)

// An Anthropic Messages stream as the API documents it: message_start,
// a thinking block, a text block in pieces, a tool_use block whose input
// arrives as partial JSON, message_delta with the stop reason and the
// output usage, message_stop; ping events between.
const anthropicStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":5,"output_tokens":1}}}

event: ping
data: {"type":"ping"}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me see."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"I read "}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"both."}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"Read","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\":"}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"/a.md\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}

event: message_stop
data: {"type":"message_stop"}

`

func TestReadAnthropicStream(t *testing.T) {
	var deltas []string
	r, err := ReadResponse([]byte(anthropicStream), "")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := ReadAnthropicStream(strings.NewReader(anthropicStream), func(s string) { deltas = append(deltas, s) })
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Response{r, r2} {
		if r.Format != Anthropic || r.ID != "msg_1" || r.Model != "claude-sonnet-4-5" || r.FinishReason != "tool_use" {
			t.Errorf("format, id, model, finish = %s %q %q %q", r.Format, r.ID, r.Model, r.FinishReason)
		}
		if r.Message.Text != "I read both." {
			t.Errorf("text = %q", r.Message.Text)
		}
		if want := []Call{{ID: "toolu_1", Name: "Read", Arguments: `{"file_path":"/a.md"}`}}; !reflect.DeepEqual(r.Message.Calls, want) {
			t.Errorf("calls = %+v, want %+v", r.Message.Calls, want)
		}
		if got := partTypes(r.Message.Parts); !reflect.DeepEqual(got, []string{"thinking", "text"}) {
			t.Errorf("parts = %v", got)
		}
		// input_tokens excludes the cache: In adds it back; output from message_delta.
		if u := r.Usage; u == nil || u.In != 115 || u.Cached != 100 || u.CacheWrite != 5 || u.Out != 42 {
			t.Errorf("usage = %+v, want in 115, cached 100, cache write 5, out 42", u)
		}
	}
	if want := []string{"I read ", "both."}; !reflect.DeepEqual(deltas, want) {
		t.Errorf("deltas = %q, want %q", deltas, want)
	}

	// Cut before message_delta: no finish reason, what arrived kept.
	cut := anthropicStream[:strings.Index(anthropicStream, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2")]
	r, err = ReadAnthropicStream(strings.NewReader(cut), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.FinishReason != "" || r.Message.Text != "I read both." {
		t.Errorf("cut stream: finish %q text %q; want no finish reason and the text so far", r.FinishReason, r.Message.Text)
	}
	if _, err := ReadAnthropicStream(strings.NewReader("event: ping\n\n"), nil); err == nil {
		t.Error("a stream of no data events read without error")
	}
}

// An OpenAI Responses stream as the API documents it: created, a message
// item whose text arrives as output_text deltas, a function call item,
// completed with the whole response.
const responsesStream = `event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-5-codex","output":[]}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Spawned "}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"two."}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":4,"output_index":0,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Spawned two.","annotations":[]}]}}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":5,"output_index":1,"item":{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"shell","arguments":"{\"command\":[\"ls\"]}"}}

event: response.completed
data: {"type":"response.completed","sequence_number":6,"response":{"id":"resp_1","object":"response","status":"completed","model":"gpt-5-codex-2025","output":[],"usage":{"input_tokens":50,"input_tokens_details":{"cached_tokens":20},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":3},"total_tokens":57}}}

`

func TestReadResponsesStream(t *testing.T) {
	var deltas []string
	r, err := ReadResponsesStream(strings.NewReader(responsesStream), func(s string) { deltas = append(deltas, s) })
	if err != nil {
		t.Fatal(err)
	}
	if r2, err := ReadResponse([]byte(responsesStream), ""); err != nil || !reflect.DeepEqual(r2, r) {
		t.Errorf("ReadResponse of the stream = %+v, %v; want ReadResponsesStream's %+v", r2, err, r)
	}
	if r.Format != OpenAIResponses || r.ID != "resp_1" || r.Model != "gpt-5-codex-2025" || r.FinishReason != "completed" {
		t.Errorf("format, id, model, finish = %s %q %q %q", r.Format, r.ID, r.Model, r.FinishReason)
	}
	if r.Message.Text != "Spawned two." {
		t.Errorf("text = %q", r.Message.Text)
	}
	if want := []Call{{ID: "call_1", Name: "shell", Arguments: `{"command":["ls"]}`}}; !reflect.DeepEqual(r.Message.Calls, want) {
		t.Errorf("calls = %+v", r.Message.Calls)
	}
	if u := r.Usage; u == nil || u.In != 50 || u.Cached != 20 || u.Out != 7 || u.Reasoning != 3 {
		t.Errorf("usage = %+v", u)
	}
	if want := []string{"Spawned ", "two."}; !reflect.DeepEqual(deltas, want) {
		t.Errorf("deltas = %q", deltas)
	}
	cut := responsesStream[:strings.Index(responsesStream, "event: response.output_item.done")]
	r, err = ReadResponsesStream(strings.NewReader(cut), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.FinishReason != "" || r.Message.Text != "Spawned two." {
		t.Errorf("cut stream: finish %q text %q; want no finish reason and the text so far", r.FinishReason, r.Message.Text)
	}
}
