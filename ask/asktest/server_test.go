package asktest

import (
	"strings"
	"testing"
)

func TestValidateChat(t *testing.T) {
	const tools = `,"tools":[{"type":"function","function":{"name":"f"}}]`
	tests := []struct {
		name, body, wantErr string
	}{
		{"OK", `{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f"}},{"id":"b","type":"function","function":{"name":"f"}}]},{"role":"tool","tool_call_id":"b","content":"x"},{"role":"tool","tool_call_id":"a","content":"y"},{"role":"user","content":"why?"}],"tool_choice":"none"` + tools + `}`, ""},
		{"ErrUnanswered", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f"}},{"id":"b","type":"function","function":{"name":"f"}}]},{"role":"tool","tool_call_id":"a","content":"y"},{"role":"user","content":"why?"}]}`, "missing b"},
		{"ErrStrayTool", `{"model":"m","messages":[{"role":"user","content":"q"},{"role":"tool","tool_call_id":"a","content":"y"}]}`, "must be a response"},
		{"ErrWrongID", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f"}}]},{"role":"tool","tool_call_id":"z","content":"y"}]}`, "answers no pending"},
		{"ErrToolChoiceWithoutTools", `{"model":"m","messages":[{"role":"user","content":"q"}],"tool_choice":"none"}`, "only allowed when tools"},
		{"ErrNoModel", `{"messages":[{"role":"user","content":"q"}]}`, "model"},
		{"ErrNotJSON", `{"model":`, "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateChat([]byte(tt.body))
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("ValidateChat() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ValidateChat() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
