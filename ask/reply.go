package ask

import (
	"fmt"
	"strings"

	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// NodeChoice labels what a recorded llm node chose: ChoiceOf its calls
// when it succeeded; a call that failed (or never finished) chose nothing,
// and says so rather than "answers".
func NodeChoice(n *graph.Node) string {
	switch {
	case n.Status == record.StatusRunning:
		return "no choice yet (the call is still running)"
	case n.Status.Failed() || n.Status.Stopped():
		return fmt.Sprintf("no choice (the call ended %s)", n.Status)
	}
	return ChoiceOf(n.LLM.Calls)
}

// Choice is the choice label of a model response (see ChoiceOf).
func Choice(r *chat.Response) string { return ChoiceOf(r.Message.CallNames()) }

// ChoiceOf labels what a model response chose, given the tool names it
// called in order: "answers" when it called nothing, "calls fork",
// "calls read_file ×3", "calls read_file, fork". Recorded nodes and
// replayed replies get the same label for the same choice.
func ChoiceOf(calls []string) string {
	if len(calls) == 0 {
		return "answers"
	}
	var parts []string
	for i := 0; i < len(calls); {
		j := i
		for j < len(calls) && calls[j] == calls[i] {
			j++
		}
		if n := j - i; n > 1 {
			parts = append(parts, fmt.Sprintf("%s ×%d", calls[i], n))
		} else {
			parts = append(parts, calls[i])
		}
		i = j
	}
	return "calls " + strings.Join(parts, ", ")
}
