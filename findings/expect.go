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

// verdict is Shown when ok, else NotShown, with a formatted detail.
func verdict(ok bool, format string, args ...any) Verdict {
	v := Verdict{Result: NotShown, Detail: fmt.Sprintf(format, args...)}
	if ok {
		v.Result = Shown
	}
	return v
}

// Expect checks, in next, what finding f (of an earlier run) said the next
// run should show, with the Expect of f's rule among rules (nil: All). A
// rule without a check, a finding of an unknown rule and a finding without
// the facts its rule recorded (one read back from JSON) are NotChecked,
// with the reason.
func Expect(rules []*Rule, f Finding, next *graph.Run) Verdict {
	if rules == nil {
		rules = All
	}
	r := Lookup(rules, f.Rule)
	switch {
	case r == nil:
		return Verdict{Result: NotChecked, Detail: fmt.Sprintf("no rule %s in this version of inspect", f.Rule)}
	case r.Expect == nil:
		return Verdict{Result: NotChecked, Detail: r.NoExpect}
	}
	return r.Expect(f, next)
}

// expectWith adapts a check that reads a rule's promise, the facts of type
// P its Run stored in Finding.Promise, to Rule.Expect.
func expectWith[P any](check func(p P, f Finding, next *graph.Run) Verdict) func(Finding, *graph.Run) Verdict {
	return func(f Finding, next *graph.Run) Verdict {
		p, ok := f.Promise.(P)
		if !ok {
			return Verdict{Result: NotChecked, Detail: "the finding carries none of the facts its check reads (was it read back from a file?)"}
		}
		return check(p, f, next)
	}
}

// forksBy returns the forks agent made in g, in sequence order.
func forksBy(g *graph.Run, agent string) []*graph.Fork {
	var out []*graph.Fork
	for _, f := range g.Forks {
		if forkingAgent(f) == agent {
			out = append(out, f)
		}
	}
	return out
}
