package graphtest

import (
	"fmt"
	"time"

	"github.com/inspect-dev/inspect/record"
)

// DeepFork returns the nodes of a run whose forks nest depth levels deep:
// each conversation calls the model, forks a "leaf" branch (one model call
// and its answer) and a "deep" branch that does the same one level down,
// joins them and answers. Branch paths are record.BranchPath's, as the
// runtime and the importers write them. The shape of a trace crafted to
// nest sub-agents by the thousand (issue 23): its storage and every
// reader must stay linear in its nodes.
func DeepFork(depth int) []*record.Node {
	nodes := make([]*record.Node, 0, 6*depth+4)
	at := func(ms int) time.Time { return Start.Add(time.Duration(ms) * time.Millisecond) }
	add := func(nd *record.Node) *record.Node {
		nd.Seq = int64(len(nodes) + 1)
		if nd.Status == "" {
			nd.Status = record.StatusOK
		}
		if nd.Ended.IsZero() {
			nd.Ended = nd.Started
		}
		nodes = append(nodes, nd)
		return nd
	}
	llm := func(path string, fork int64, level int, agent string, ms int, calls ...string) {
		body := fmt.Sprintf(`{"model":"m","messages":[{"role":"system","content":"You are %s."},{"role":"user","content":"Work at level %d of %q."}]}`, agent, level, path)
		add(&record.Node{Kind: record.KindLLM, Branch: path, ForkSeq: fork, Depth: level, Agent: agent, Started: at(ms), Ended: at(ms + 10),
			LLM: &record.LLM{Model: "m", Calls: calls, Request: []byte(body), Usage: record.Usage{In: 100, Out: 10}}})
	}
	add(&record.Node{Kind: record.KindUser, Agent: "lead", Started: at(0), Text: "Go all the way down"})
	// conv records the conversation at level (0: the trunk) and returns
	// when it ended; the deepest has no fork.
	var conv func(path string, fork int64, level int, start int) int
	conv = func(path string, fork int64, level int, start int) int {
		agent := "lead"
		if level > 0 {
			agent = "worker"
		}
		if level == depth {
			llm(path, fork, level, agent, start)
			add(&record.Node{Kind: record.KindFinal, Branch: path, ForkSeq: fork, Depth: level, Agent: agent, Started: at(start + 10), Text: "bottom"})
			return start + 10
		}
		llm(path, fork, level, agent, start, "fork", "fork")
		fn := add(&record.Node{Kind: record.KindFork, Branch: path, ForkSeq: fork, Depth: level, Agent: agent, Started: at(start + 10),
			Fork: &record.Fork{Context: "none", Branches: []record.ForkBranch{
				{Name: "leaf", Agent: "worker", Instructions: "answer"}, {Name: "deep", Agent: "worker", Instructions: "go down"}}}})
		leaf := record.BranchPath(path, fn.Seq, "leaf")
		llm(leaf, fn.Seq, level+1, "worker", start+10)
		add(&record.Node{Kind: record.KindFinal, Branch: leaf, ForkSeq: fn.Seq, Depth: level + 1, Agent: "worker", Started: at(start + 20), Text: "leaf done"})
		end := conv(record.BranchPath(path, fn.Seq, "deep"), fn.Seq, level+1, start+10)
		add(&record.Node{Kind: record.KindJoin, Branch: path, ForkSeq: fork, Depth: level, Agent: agent, Started: at(end),
			Join: &record.Join{ForkSeq: fn.Seq, Branches: []record.JoinBranch{
				{Name: "leaf", Agent: "worker", Status: record.StatusOK, Duration: 10 * time.Millisecond, Answer: "leaf done"},
				{Name: "deep", Agent: "worker", Status: record.StatusOK, Duration: time.Duration(end-start-10) * time.Millisecond, Answer: "done"}}}})
		llm(path, fork, level, agent, end)
		add(&record.Node{Kind: record.KindFinal, Branch: path, ForkSeq: fork, Depth: level, Agent: agent, Started: at(end + 10), Text: "done"})
		return end + 10
	}
	conv("", 0, 0, 0)
	return nodes
}
