package chat

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRead feeds any bytes to every reader in every format: nothing
// panics, and a body read without error gives a result.
func FuzzRead(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `{"messages":null}`, `{"messages":[null,1,"x",{}]}`,
		`{"choices":[{"index":1e400}]}`, `{"choices":[{"index":-1,"delta":{"tool_calls":[{"index":9223372036854775807}]}}]}`,
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{}]}}]}\n", "data: [DONE]\n", "data:\n",
		`{"type":"message","content":[{"type":"tool_result","content":[{"type":"tool_result"}]}]}`,
		`{"input":[{"type":"function_call"},{"type":"function_call_output","output":{"type":"input_text"}}]}`,
		`{"messages":[{"content":[[[[[[[]]]]]]]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 1<<20 {
			return
		}
		_, _ = Detect(body)
		for _, format := range append([]Format{""}, Formats...) {
			if r, err := ReadRequest(body, format); err == nil {
				if r == nil {
					t.Fatalf("ReadRequest(%s) = nil, nil", format)
				}
				_ = r.ToolNames()
				for i := range r.Messages {
					_ = r.Messages[i].CallNames()
				}
			}
			if r, err := ReadResponse(body, format); err == nil && r == nil {
				t.Fatalf("ReadResponse(%s) = nil, nil", format)
			}
		}
		var got []byte
		r, err := ReadStream(bytes.NewReader(body), func(s string) { got = append(got, s...) })
		if err == nil && r.Message.Text != string(got) {
			t.Fatalf("ReadStream text %q, deltas %q: want the same", r.Message.Text, got)
		}
	})
}
