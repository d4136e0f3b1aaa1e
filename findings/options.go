package findings

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Options are the rules' thresholds. DefaultOptions gives DESIGN §8's values.
type Options struct {
	// FanoutMinCalls is how many consecutive independent research calls,
	// each in its own model response, make a missed fan-out (fanout.*).
	FanoutMinCalls int
	// TokenMinLen is the shortest argument token that can tie a call to an
	// earlier call's result (fanout.*).
	TokenMinLen int
	// OneBranchMaxCalls is the most tool calls a lone branch may make and
	// still be too small to fork (fork.one-branch).
	OneBranchMaxCalls int
	// UnevenRatio and UnevenMinGap: the slowest branch is uneven when it took
	// at least UnevenRatio × the median of its siblings and at least
	// UnevenMinGap longer than that median (fork.uneven).
	UnevenRatio  float64
	UnevenMinGap time.Duration
	// InheritMinBranches and InheritMinTokens: an inherit fork is flagged
	// when at least InheritMinBranches branches run another agent and the
	// inherited history is at least InheritMinTokens (fork.inherit-uncached).
	InheritMinBranches int
	InheritMinTokens   int64
	// ForAnswerMaxCalls is the most tool calls the target may make before its
	// final answer for a hand-off to read as a question (handoff.for-answer).
	ForAnswerMaxCalls int
	// SpecialistMinCalls is how many calls of a specialist's tool an agent
	// must make itself (delegation.missed-specialist).
	SpecialistMinCalls int
}

// DefaultOptions returns the thresholds of DESIGN §8.
func DefaultOptions() *Options {
	return &Options{
		FanoutMinCalls:     3,
		TokenMinLen:        3,
		OneBranchMaxCalls:  2,
		UnevenRatio:        2,
		UnevenMinGap:       5 * time.Second,
		InheritMinBranches: 2,
		InheritMinTokens:   4000,
		ForAnswerMaxCalls:  2,
		SpecialistMinCalls: 2,
	}
}

// OptionSpec documents one threshold and sets it from text; the CLI's
// --set flag and the help text come from OptionSpecs.
type OptionSpec struct {
	// Name is the key of --set NAME=VALUE.
	Name string
	// Rules are the rule ids the option tunes.
	Rules string
	// Doc says what it means.
	Doc string
	// Get returns the current value as text; Set parses and stores one.
	Get func(o *Options) string
	Set func(o *Options, v string) error
}

func intSpec(name, rules, doc string, field func(o *Options) *int) OptionSpec {
	return OptionSpec{Name: name, Rules: rules, Doc: doc,
		Get: func(o *Options) string { return strconv.Itoa(*field(o)) },
		Set: func(o *Options, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s wants a whole number, got %q", name, v)
			}
			*field(o) = n
			return nil
		}}
}

// OptionSpecs lists every threshold in a fixed order.
func OptionSpecs() []OptionSpec {
	return []OptionSpec{
		intSpec("fanout-min-calls", "fanout.*", "consecutive independent research calls that make a missed fan-out",
			func(o *Options) *int { return &o.FanoutMinCalls }),
		intSpec("token-min-len", "fanout.*", "shortest argument token that ties a call to an earlier result",
			func(o *Options) *int { return &o.TokenMinLen }),
		intSpec("one-branch-max-calls", "fork.one-branch", "most tool calls of a lone branch that is still too small to fork",
			func(o *Options) *int { return &o.OneBranchMaxCalls }),
		{Name: "uneven-ratio", Rules: "fork.uneven", Doc: "slowest branch ÷ median of its siblings",
			Get: func(o *Options) string { return strconv.FormatFloat(o.UnevenRatio, 'g', -1, 64) },
			Set: func(o *Options, v string) error {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return fmt.Errorf("uneven-ratio wants a number, got %q", v)
				}
				o.UnevenRatio = f
				return nil
			}},
		{Name: "uneven-min-gap", Rules: "fork.uneven", Doc: "how much longer than that median the slowest branch must take",
			Get: func(o *Options) string { return o.UnevenMinGap.String() },
			Set: func(o *Options, v string) error {
				d, err := time.ParseDuration(v)
				if err != nil {
					return fmt.Errorf("uneven-min-gap wants a duration such as 5s, got %q", v)
				}
				o.UnevenMinGap = d
				return nil
			}},
		intSpec("inherit-min-branches", "fork.inherit-uncached", "branches on another agent that make an inherit fork costly",
			func(o *Options) *int { return &o.InheritMinBranches }),
		{Name: "inherit-min-tokens", Rules: "fork.inherit-uncached", Doc: "inherited history, in tokens, that makes it costly",
			Get: func(o *Options) string { return strconv.FormatInt(o.InheritMinTokens, 10) },
			Set: func(o *Options, v string) error {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return fmt.Errorf("inherit-min-tokens wants a whole number, got %q", v)
				}
				o.InheritMinTokens = n
				return nil
			}},
		intSpec("for-answer-max-calls", "handoff.for-answer", "most calls of the target before its final answer",
			func(o *Options) *int { return &o.ForAnswerMaxCalls }),
		intSpec("specialist-min-calls", "delegation.missed-specialist", "calls of a specialist's tool the agent made itself",
			func(o *Options) *int { return &o.SpecialistMinCalls }),
	}
}

// Set applies "name=value" to o.
func (o *Options) Set(kv string) error {
	name, value, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("%q is not NAME=VALUE", kv)
	}
	var names []string
	for _, s := range OptionSpecs() {
		if s.Name == name {
			return s.Set(o, value)
		}
		names = append(names, s.Name)
	}
	return fmt.Errorf("unknown threshold %q; known: %s", name, strings.Join(names, ", "))
}

// Validate rejects thresholds that cannot work.
func (o *Options) Validate() error {
	switch {
	case o.FanoutMinCalls < 2:
		return fmt.Errorf("fanout-min-calls must be at least 2, got %d", o.FanoutMinCalls)
	case o.TokenMinLen < 1:
		return fmt.Errorf("token-min-len must be at least 1, got %d", o.TokenMinLen)
	case o.OneBranchMaxCalls < 0:
		return fmt.Errorf("one-branch-max-calls must be 0 or more, got %d", o.OneBranchMaxCalls)
	case o.UnevenRatio < 1:
		return fmt.Errorf("uneven-ratio must be at least 1, got %g", o.UnevenRatio)
	case o.UnevenMinGap < 0:
		return fmt.Errorf("uneven-min-gap must not be negative, got %s", o.UnevenMinGap)
	case o.InheritMinBranches < 1:
		return fmt.Errorf("inherit-min-branches must be at least 1, got %d", o.InheritMinBranches)
	case o.InheritMinTokens < 0:
		return fmt.Errorf("inherit-min-tokens must not be negative, got %d", o.InheritMinTokens)
	case o.ForAnswerMaxCalls < 0:
		return fmt.Errorf("for-answer-max-calls must be 0 or more, got %d", o.ForAnswerMaxCalls)
	case o.SpecialistMinCalls < 1:
		return fmt.Errorf("specialist-min-calls must be at least 1, got %d", o.SpecialistMinCalls)
	}
	return nil
}
