package findings

import (
	"fmt"

	"github.com/inspect-dev/inspect/graph"
)

// Verdict results: whether a later run shows what a finding said the next
// run should show.
const (
	Shown      = "shown"
	NotShown   = "not shown"
	NotChecked = "not checked"
)

// Verdict is the outcome of a rule's expectation check on a later run.
type Verdict struct {
	// Result is Shown, NotShown or NotChecked.
	Result string
	// Detail says what was looked at in the later run.
	Detail string
}

// Expect checks, in next, what finding f (of an earlier run) said the next
// run should show, with the Expect of f's rule among rules (the rules of
// the audit that found it, Report.Rules). A rule without a check, a
// finding of an unknown rule and a finding without the facts its rule
// recorded (one read back from JSON) are NotChecked, with the reason.
func Expect(rules []*Rule, f Finding, next *graph.Run) Verdict {
	r := Lookup(rules, f.Rule)
	switch {
	case r == nil:
		return Verdict{Result: NotChecked, Detail: fmt.Sprintf("no rule %s in this version of inspect", f.Rule)}
	case r.Expect == nil:
		return Verdict{Result: NotChecked, Detail: r.NoExpect}
	}
	return r.Expect(f, next)
}
