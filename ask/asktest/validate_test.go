package asktest

import (
	"strings"
	"testing"
)

type validateCase struct{ name, body, wantErr string }

func runValidate(t *testing.T, validate func([]byte) error, tests []validateCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validate([]byte(tt.body))
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("= %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("= %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// The Messages API's documented rules, each with the body that breaks it.
func TestValidateAnthropic(t *testing.T) {
	const tools = `"tools":[{"name":"Read","input_schema":{"type":"object"}}]`
	use := `{"role":"assistant","content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"a"}}]}`
	result := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"x"},{"type":"text","text":"why?"}]}`
	runValidate(t, ValidateAnthropic, []validateCase{
		{"OK", `{"model":"claude","max_tokens":10,"system":"s","messages":[{"role":"user","content":"q"},` + use + `,` + result + `],"tool_choice":{"type":"none"},"stream":true,` + tools + `}`, ""},
		{"OK string content, system blocks", `{"model":"claude","max_tokens":1,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"q"}]}`, ""},
		{"OK prefill", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":""}]}`, ""},
		{"OK thinking kept", `{"model":"claude","max_tokens":2048,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"sig"},{"type":"tool_use","id":"toolu_1","name":"Read","input":{}}]},` + result + `],` + tools + `}`, ""},
		{"ErrNoModel", `{"max_tokens":1,"messages":[{"role":"user","content":"q"}]}`, "model: Field required"},
		{"ErrNoMaxTokens", `{"model":"claude","messages":[{"role":"user","content":"q"}]}`, "max_tokens: Field required"},
		{"ErrMaxTokensZero", `{"model":"claude","max_tokens":0,"messages":[{"role":"user","content":"q"}]}`, "greater than or equal to 1"},
		{"ErrNoMessages", `{"model":"claude","max_tokens":1,"messages":[]}`, "at least one message"},
		{"ErrFirstAssistant", `{"model":"claude","max_tokens":1,"messages":[{"role":"assistant","content":"a"},{"role":"user","content":"q"}]}`, "first message must use the user role"},
		{"ErrNotAlternating", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":"q"},{"role":"user","content":"q2"}]}`, "roles must alternate"},
		{"OK system between turns", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":"q"},{"role":"system","content":[{"type":"text","text":"env"}]},{"role":"assistant","content":"a"},{"role":"user","content":"q2"}]}`, ""},
		{"ErrSystemFirst", `{"model":"claude","max_tokens":1,"messages":[{"role":"system","content":"s"},{"role":"user","content":"q"}]}`, "first message must use the user role"},
		{"ErrSystemInToolLoop", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":"q"},` + use + `,{"role":"system","content":"s"},` + result + `],` + tools + `}`, "without `tool_result` blocks immediately after"},
		{"ErrSystemNotText", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":"q"},{"role":"system","content":[{"type":"image"}]}]}`, "non-empty text blocks only"},
		{"ErrToolRole", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":"q"},{"role":"tool","content":"x"}]}`, "Input should be 'user', 'assistant' or 'system'"},
		{"ErrEmptyText", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`, "text content blocks must be non-empty"},
		{"ErrEmptyContent", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":""}]}`, "non-empty content"},
		{"ErrUnanswered", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":"q"},` + use + `,{"role":"user","content":"why?"}],` + tools + `}`, "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"},
		{"ErrUnansweredAtEnd", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":"q"},` + use + `],` + tools + `}`, "without `tool_result`"},
		{"ErrStrayResult", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"x"}]}],` + tools + `}`, "unexpected `tool_use_id` found in `tool_result` blocks: toolu_9"},
		{"ErrResultAfterText", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":"q"},` + use + `,{"role":"user","content":[{"type":"text","text":"why?"},{"type":"tool_result","tool_use_id":"toolu_1","content":"x"}]}],` + tools + `}`, "must come first"},
		{"ErrBadID", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":"Read:0","name":"Read","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"Read:0"}]}],` + tools + `}`, "should match pattern"},
		{"ErrInputNotObject", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Read","input":"a"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t"}]}],` + tools + `}`, "valid dictionary"},
		{"ErrToolBlocksWithoutTools", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":"q"},` + use + `,` + result + `]}`, "must define tools"},
		{"ErrToolChoiceWithoutTools", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":"q"}],"tool_choice":{"type":"none"}}`, "tool_choice may only be specified while providing tools"},
		{"ErrToolChoiceString", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":"q"}],"tool_choice":"none",` + tools + `}`, "Input should be an object"},
		{"ErrToolNoSchema", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":"q"}],"tools":[{"name":"Read"}]}`, "input_schema: Field required"},
		{"ErrToolName", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":"q"}],"tools":[{"name":"a.b","input_schema":{"type":"object"}}]}`, "tools.0.name"},
		{"ErrChatToolCalls", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[]}]}`, "messages.1.tool_calls: Extra inputs"},
		{"ErrNullContent", `{"model":"claude","max_tokens":1,"messages":[{"role":"user","content":null}]}`, "messages.0.content: Field required"},
		{"ErrThinkingWithoutBlock", `{"model":"claude","max_tokens":2048,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"q"},` + use + `,` + result + `],` + tools + `}`, "must start with a thinking block"},
		{"ErrThinkingBudget", `{"model":"claude","max_tokens":1000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"q"}]}`, "greater than `thinking.budget_tokens`"},
		{"ErrClearThinkingWithoutThinking", `{"model":"claude","max_tokens":1,"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},"messages":[{"role":"user","content":"q"}]}`, "requires thinking to be enabled"},
		{"ErrResponsesField", `{"model":"claude","max_tokens":1,"input":"q","messages":[{"role":"user","content":"q"}]}`, "input: Extra inputs"},
		{"ErrNotJSON", `{"model":`, "not valid JSON"},
	})
}

// The Responses API's documented rules, each with the body that breaks it.
func TestValidateResponses(t *testing.T) {
	const tools = `"tools":[{"type":"function","name":"shell","parameters":{"type":"object"},"strict":false}]`
	call := `{"type":"function_call","call_id":"c1","name":"shell","arguments":"{}"}`
	out := `{"type":"function_call_output","call_id":"c1","output":"x"}`
	runValidate(t, ValidateResponses, []validateCase{
		{"OK", `{"model":"gpt-5","instructions":"s","input":[{"role":"user","content":"q"},{"type":"message","role":"assistant","content":"a"},` + call + `,` + out + `,{"type":"message","role":"user","content":[{"type":"input_text","text":"why?"}]}],"tool_choice":"none","stream":true,` + tools + `}`, ""},
		{"OK string input", `{"model":"gpt-5","input":"q"}`, ""},
		{"OK developer first", `{"model":"gpt-5","input":[{"role":"developer","content":"d"},{"role":"user","content":"q"}]}`, ""},
		{"ErrNoModel", `{"input":"q"}`, "'model'"},
		{"ErrNoInput", `{"model":"gpt-5"}`, "'input'"},
		{"ErrMessages", `{"model":"gpt-5","messages":[{"role":"user","content":"q"}]}`, "Unsupported parameter: 'messages'"},
		{"ErrMaxTokens", `{"model":"gpt-5","input":"q","max_tokens":5}`, "Unsupported parameter: 'max_tokens'"},
		{"ErrFirstAssistant", `{"model":"gpt-5","input":[{"role":"assistant","content":"a"},{"role":"user","content":"q"}]}`, "starts with an assistant message"},
		{"ErrFirstCall", `{"model":"gpt-5","input":[` + call + `,` + out + `],` + tools + `}`, "starts with a tool call"},
		{"ErrNoOutput", `{"model":"gpt-5","input":[{"role":"user","content":"q"},` + call + `,{"role":"user","content":"why?"}],` + tools + `}`, "No tool output found for function call c1"},
		{"ErrStrayOutput", `{"model":"gpt-5","input":[{"role":"user","content":"q"},` + out + `]}`, "No tool call found for function call output with call_id c1"},
		{"ErrArgsNotString", `{"model":"gpt-5","input":[{"role":"user","content":"q"},{"type":"function_call","call_id":"c1","name":"shell","arguments":{}},` + out + `]}`, "arguments"},
		{"ErrWrongPart", `{"model":"gpt-5","input":[{"role":"user","content":[{"type":"output_text","text":"q"}]}]}`, "input_text"},
		{"ErrToolChoiceWithoutTools", `{"model":"gpt-5","input":"q","tool_choice":"none"}`, "only allowed when 'tools' are specified"},
		{"ErrToolNoParameters", `{"model":"gpt-5","input":"q","tools":[{"type":"function","name":"shell"}]}`, "tools[0].parameters"},
		{"ErrChatTool", `{"model":"gpt-5","input":"q","tools":[{"type":"function","function":{"name":"shell"}}]}`, "tools[0].name"},
	})
}

// The Chat Completions rules ask's own tests did not cover before.
func TestValidateChat_Order(t *testing.T) {
	runValidate(t, ValidateChat, []validateCase{
		{"OK system first", `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"q"}]}`, ""},
		{"ErrFirstAssistant", `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"assistant","content":"a"},{"role":"user","content":"q"}]}`, "starts with a \"assistant\" message"},
		{"ErrStreamOptions", `{"model":"m","messages":[{"role":"user","content":"q"}],"stream_options":{"include_usage":true}}`, "only allowed when 'stream' is enabled"},
		{"ErrAnthropicSystem", `{"model":"m","system":"s","messages":[{"role":"user","content":"q"}]}`, "Unrecognized request argument supplied: system"},
		{"ErrToolName", `{"model":"m","messages":[{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"a b"}}]}`, "function.name"},
	})
}
