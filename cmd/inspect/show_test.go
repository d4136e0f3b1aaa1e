package main

import (
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// show prints a body from any OpenAI-compatible server (content parts,
// fields of its own, a usage object with extras), and the other formats
// chat reads, with their system text beside the messages.
func TestWriteRequestResponse(t *testing.T) {
	tests := []struct {
		name       string
		req, resp  string
		want, lack []string
	}{
		{
			name: "vllm parts",
			req: `{"model":"Qwen/Qwen3-8B","messages":[{"role":"system","content":[{"type":"text","text":"You are "},{"type":"text","text":"terse."}]},` +
				`{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"chatcmpl-tool-1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.md\"}"}}]},` +
				`{"role":"tool","tool_call_id":"chatcmpl-tool-1","content":"A"}],"tools":[{"type":"function","function":{"name":"read_file","parameters":{}}}],"tool_choice":"auto","chat_template_kwargs":{"enable_thinking":false}}`,
			resp: `{"id":"chatcmpl-9","object":"chat.completion","model":"Qwen/Qwen3-8B","choices":[{"index":0,"message":{"role":"assistant","reasoning_content":null,"content":"Done.","tool_calls":[]},"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":40,"total_tokens":43,"completion_tokens":3,"prompt_tokens_details":null},"prompt_logprobs":null}`,
			want: []string{"## Request (4 messages, ", "- tools offered: read_file\n", "- tool_choice: \"auto\"\n", "### 1. system\n\n```\nYou are terse.\n```",
				"### 3. assistant\n\n### calls read_file (chatcmpl-tool-1)\n\n```\n{\n  \"path\": \"a.md\"\n}\n```", "### 4. tool (result of chatcmpl-tool-1)\n\n```\nA\n```",
				"## Response (finish_reason stop)\n\n### assistant\n\n```\nDone.\n```", "### Usage\n\n```\n{\n  \"prompt_tokens\": 40,"},
			lack: []string{"anthropic"},
		},
		{
			name: "anthropic",
			req:  `{"model":"claude-sonnet-4-5","system":"Be brief.","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":100}`,
			resp: `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hello."}],"stop_reason":"end_turn","usage":{"input_tokens":9,"output_tokens":2}}`,
			want: []string{"## Request (1 messages, ", " bytes, anthropic-messages)", "### system\n\n```\nBe brief.\n```", "### 1. user\n\n```\nhi\n```",
				"## Response (finish_reason end_turn)", "```\nHello.\n```"},
		},
		{
			name: "unreadable",
			req:  `{"prompt":"completion API"}`,
			resp: `not json`,
			want: []string{"### Request (27 bytes)\n\n```\n{\n  \"prompt\": \"completion API\"\n}\n```", "### Response\n\n```\nnot json\n```"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w strings.Builder
			writeRequest(&w, []byte(tt.req))
			writeResponse(&w, []byte(tt.resp), &graph.Node{Node: &record.Node{Kind: record.KindLLM}})
			for _, s := range tt.want {
				if !strings.Contains(w.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, w.String())
				}
			}
			for _, s := range tt.lack {
				if strings.Contains(w.String(), s) {
					t.Errorf("output has %q:\n%s", s, w.String())
				}
			}
		})
	}
}
