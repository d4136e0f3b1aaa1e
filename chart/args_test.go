package chart

import "testing"

// TestArgSummary: a tool call's label shows its arguments' values in the
// order written; arrays of values are listed (cut after eight), nested
// structures named by their size, and text that is not a JSON object kept.
func TestArgSummary(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{`{"path":"a.md","limit":3}`, "a.md 3"},
		{`{}`, ""},
		{``, ""},
		{`{"numbers":[67317,164000,1551000]}`, "[67317, 164000, 1551000]"},
		{`{"query":"FAANG","sites":["a.com","b.com"]}`, "FAANG [a.com, b.com]"},
		{`{"ids":[1,2,3,4,5,6,7,8,9,10]}`, "[1, 2, 3, 4, 5, 6, 7, 8, …]"},
		{`{"ops":[{"op":"add"},{"op":"rm"}],"dry":true}`, "[2 items] true"},
		{`{"ops":[[1]]}`, "[1 item]"},
		{`{"filter":{"status":"open"},"n":2}`, "{…} 2"},
		{`{"empty":[],"none":null,"obj":{}}`, "[] {…}"},
		{`{"mixed":[null,"x"]}`, "[null, x]"},
		{`not json`, "not json"},
		{`{"broken":[1,2`, `{"broken":[1,2`},
	} {
		if got := argSummary(tt.args); got != tt.want {
			t.Errorf("argSummary(%s) = %q, want %q", tt.args, got, tt.want)
		}
	}
}
