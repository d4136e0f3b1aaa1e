// Package rules holds the rules of `inspect audit` (DESIGN §8's table):
// each is a findings.Rule value that reads a recorded run graph through a
// findings.Pass and reports the topology mistakes it finds — a missed
// fan-out, a forked sequence, a hand-off loop… — with what they cost,
// where the fix goes, what the next run should show, and for some rules
// the cheap causes checked in the recorded request. Each rule carries its
// Doc, its thresholds (findings.Threshold values next to it) and the
// check of what its findings promise (Rule.Expect).
//
// A new rule is one value with its Run and Expect, listed in All. The
// facts several rules need (the calls' parsed arguments, the serial runs,
// what each branch read and wrote) are computed once per audit through
// findings.Pass.Memo. The package never prints, opens the store or knows
// a terminal.
package rules

import "github.com/inspect-dev/inspect/findings"

// All lists every rule in report order: DESIGN §8's table.
var All = []*findings.Rule{
	FanoutMissed,
	FanoutMissedNoFork,
	ForkSequence,
	ForkOneBranch,
	JoinRepeat,
	BranchFailed,
	ForkUneven,
	ForkOverlap,
	ForkInheritUncached,
	HandoffEarly,
	HandoffLoop,
	HandoffForAnswer,
	HandoffDropped,
	DelegationMissedSpecialist,
	DelegationRejected,
	CacheUnstablePrefix,
	ToolFailureLoop,
}
