package graphtest

import (
	"fmt"
	"time"

	"github.com/inspect-dev/inspect/record"
)

// WideFork returns the nodes of a run whose trunk forks into n branches of
// two nodes each (an llm call and the branch's final answer) — every 7th
// branch failing, branch n/2+1 the slowest at one minute — then joins and
// answers: the shape that broke every renderer at 300 and 10,000 branches.
func WideFork(n int) []*record.Node {
	at := func(ms int) time.Time { return Start.Add(time.Duration(ms) * time.Millisecond) }
	nodes := make([]*record.Node, 0, 2*n+5)
	add := func(nd *record.Node) *record.Node {
		nd.Seq = int64(len(nodes) + 1)
		if nd.Status == "" {
			nd.Status = record.StatusOK
		}
		nodes = append(nodes, nd)
		return nd
	}
	add(&record.Node{Kind: record.KindUser, Agent: "lead", Started: at(0), Ended: at(0), Text: "Check every region"})
	add(&record.Node{Kind: record.KindLLM, Agent: "lead", Started: at(0), Ended: at(100), LLM: &record.LLM{Model: "m", Calls: []string{"fork"}, Usage: record.Usage{In: 100, Out: 10}}})
	fork := &record.Fork{Context: "compact"}
	for i := 1; i <= n; i++ {
		fork.Branches = append(fork.Branches, record.ForkBranch{Name: fmt.Sprintf("r%d", i), Agent: "worker", Instructions: "do region"})
	}
	fn := add(&record.Node{Kind: record.KindFork, Agent: "lead", Started: at(100), Ended: at(100), Fork: fork})
	join := &record.Join{ForkSeq: fn.Seq}
	for i := 1; i <= n; i++ {
		d := 1000 + i%97
		if i == n/2+1 {
			d = 60_000
		}
		status := record.StatusOK
		if i%7 == 0 {
			status = record.StatusError
		}
		b := fmt.Sprintf("r%d", i)
		add(&record.Node{Kind: record.KindLLM, Branch: b, ForkSeq: fn.Seq, Depth: 1, Agent: "worker", Started: at(100), Ended: at(100 + d), Status: status,
			LLM: &record.LLM{Model: "m", Usage: record.Usage{In: 50, Out: 5}}})
		add(&record.Node{Kind: record.KindFinal, Branch: b, ForkSeq: fn.Seq, Depth: 1, Agent: "worker", Started: at(100 + d), Ended: at(100 + d), Status: status, Text: "region done"})
		join.Branches = append(join.Branches, record.JoinBranch{Name: b, Agent: "worker", Status: status, Duration: time.Duration(d) * time.Millisecond, Answer: "region done"})
	}
	add(&record.Node{Kind: record.KindJoin, Agent: "lead", Started: at(60_100), Ended: at(60_100), Join: join})
	add(&record.Node{Kind: record.KindFinal, Agent: "lead", Started: at(60_200), Ended: at(60_200), Text: "All regions checked."})
	return nodes
}
