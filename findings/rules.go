package findings

// All lists every rule in report order: DESIGN §8's table.
var All = []*Rule{
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
	DelegationMissedSpecialist,
	CacheUnstablePrefix,
}
