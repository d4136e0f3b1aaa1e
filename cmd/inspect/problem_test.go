package main

import (
	"testing"

	"github.com/inspect-dev/inspect/importers"
)

// TestProblemLine: a problem of a whole file (a Kimi sub-agent's missing
// wire.jsonl) is cited as FILE: WHY (before: wire.jsonl:0:); one of a line
// keeps FILE:LINE: WHY.
func TestProblemLine(t *testing.T) {
	for _, tt := range []struct {
		p    importers.Problem
		want string
	}{
		{importers.Problem{File: "subagents/a1/wire.jsonl", Err: "missing; the branch is rebuilt"}, "subagents/a1/wire.jsonl: missing; the branch is rebuilt"},
		{importers.Problem{File: "wire.jsonl", Line: 12, Err: "not JSON"}, "wire.jsonl:12: not JSON"},
	} {
		if got := problemLine(tt.p); got != tt.want {
			t.Errorf("problemLine(%+v) = %q, want %q", tt.p, got, tt.want)
		}
	}
}
