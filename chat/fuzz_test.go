package chat

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
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

// FuzzReadMessage: ReadMessage reads any element of a messages array as
// ReadRequest reads a body holding only that element, whether it takes
// its shortcut (no content blocks) or not; seeded with every message and
// input item of the test bodies and with messages of each format's
// shapes.
func FuzzReadMessage(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*_request.json"))
	if err != nil || len(files) < 3 {
		f.Fatal(files, err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		o, err := top(b)
		if err != nil {
			f.Fatal(p, err)
		}
		for _, key := range []string{"messages", "input"} {
			for _, m := range array(o[key]) {
				f.Add([]byte(m))
			}
		}
	}
	for _, s := range []string{
		`{"role":"user","content":"hi"}`, `{"role":"user","content":null}`, `{"role":"assistant"}`,
		`{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{}"}}]}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"custom","custom":{"name":"x","input":"y"}}],"refusal":"no"}`,
		`{"role":"assistant","function_call":{"name":"f","arguments":"{}"}}`,
		`{"role":"tool","tool_call_id":"c1","content":"12°C"}`,
		`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"},{"type":"text","text":"and"}]}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"tool_use","id":"t1","name":"f","input":{}}]}`,
		`{"role":"user","content":{"type":"text","text":"an object"}}`, `{"role":"user","content":["a","b"]}`,
		`{"role":"user","content":"a","content":[{"type":"tool_use"}]}`, ` {"role":"user","content":"spaced"} `,
		`{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}`, `{"type":"function_call_output","call_id":"c","output":"x"}`,
		`"a string message"`, `null`, `1`, `[]`, `{}`, `{"role":`, `{"role":"user"}, {"role":"user"}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		got, ok := ReadMessage(data)
		body := append(append([]byte(`{"messages":[`), data...), "]}"...)
		req, err := ReadRequest(body, "")
		want := err == nil && len(req.Messages) == 1
		if ok != want || ok && !reflect.DeepEqual(got, req.Messages[0]) {
			t.Fatalf("ReadMessage(%q) = %+v, %v; ReadRequest of the body: %+v, %v", data, got, ok, req, err)
		}
	})
}
