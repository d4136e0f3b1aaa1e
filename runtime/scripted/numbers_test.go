package scripted

import (
	"context"
	"strings"
	"testing"
)

// TestScript_ImpossibleNumbers: usage `in: 9223372036854775807` (twice it
// overflowed every sum), negative usage, and a latency of 2562047h (it
// wrapped the virtual clock) were accepted; the reply is now refused with
// its line (issue 11, defect 10).
func TestScript_ImpossibleNumbers(t *testing.T) {
	tests := []struct{ name, reply, want string }{
		{"huge in", "{say: x, usage: {in: 9223372036854775807, out: 1}}", "usage in: 9223372036854775807 is impossible"},
		{"negative out", "{say: x, usage: {in: 5, out: -1}}", "usage out: -1 is impossible"},
		{"negative cached", "{say: x, usage: {in: 5, out: 1, cached: -3}}", "usage cached: -3 is impossible"},
		{"latency wraps the clock", "{say: x, latency: 2562047h}", "latency 2562047h is longer than 24h0m0s"},
		{"bare seconds", "{say: x, latency: 100000000000000000000}", "longer than 24h0m0s"},
		{"tool latency", "{calls: [{list_dir: }], tool_latency: 25h}", "tool_latency 25h is longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newModel(t, "script.yaml", "task: t\nconversations:\n  trunk:\n    - "+tt.reply+"\n")
			_, err := m.Complete(context.Background(), req("", "go"))
			if err == nil || !strings.Contains(err.Error(), "script.yaml:4") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Complete = %v, want a refusal on script.yaml:4 saying %q", err, tt.want)
			}
		})
	}
	m := newModel(t, "script.yaml", "task: t\nconversations:\n  trunk:\n    - {say: x, usage: {in: 1099511627776, out: 0}, latency: 24h}\n")
	if _, err := m.Complete(context.Background(), req("", "go")); err != nil {
		t.Errorf("the largest counts and latency allowed were refused: %v", err)
	}
}
