package chart

import (
	"strings"
	"testing"
	"unicode/utf8"
)

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

// TestArgSummary_PathEnds: a path too long for a label keeps its end,
// which tells one file from another, from a separator on; the values
// around it keep their order and what runs past the label is cut at the
// end. A path that fits, and text without a path, are as they were; a
// path among the words of a command keeps its end too.
func TestArgSummary_PathEnds(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{`{"file_path":"/home/USER/projects/spotter/internal/auth/session.go"}`, "…/spotter/internal/auth/session.go"},
		{`{"file_path":"/home/USER/projects/spotter/internal/auth/session.go","limit":40}`, "…/spotter/internal/auth/session.go 40"},
		{`{"replace_all":false,"file_path":"/Users/someone/Work/entire/devenv/cli/cmd/install.go","old_string":"a","new_string":"b"}`,
			"false …/devenv/cli/cmd/install.go a b"},
		{`{"url":"https://hex.pm/packages/opentelemetry_exporter","prompt":"What is the latest version?"}`,
			"…/opentelemetry_exporter What is the la…"},
		{`{"path":"regions/index.md"}`, "regions/index.md"},
		{`{"file_path":"/x/` + strings.Repeat("a", 60) + `.go"}`, "…" + strings.Repeat("a", 36) + ".go"},
		// a path in a command keeps its end as a path value does
		{`{"command":"tail -5 /tmp/claude-1000/-home-marco-projects-spotter/tasks/b1.output"}`, "tail -5 …/tasks/b1.output"},
		{`{"cmd":"cat services/billing/internal/ledger/reconcile_test.go","workdir":"app"}`, "cat …/ledger/reconcile_test.go app"},
		// text without a path is cut at its end
		{`{"prompt":"What is the latest version of the exporter, and which of its deps changed?"}`, "What is the latest version of the expor…"},
	} {
		got := argSummary(tt.args)
		if got != tt.want {
			t.Errorf("argSummary(%s) = %q, want %q", tt.args, got, tt.want)
		}
		if n := utf8.RuneCountInString(got); n > argRunes {
			t.Errorf("argSummary(%s) is %d runes, more than %d", tt.args, n, argRunes)
		}
	}
}
