// Package graphtest builds synthetic recorded runs for tests and benchmarks:
// large, realistic node sequences shaped as docs/recording.md describes.
package graphtest

import (
	"context"
	"fmt"
	"time"

	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// Start is the start time of every synthetic run.
var Start = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// Synthetic returns about n nodes of one run: a trunk that repeatedly reads
// a file, then forks four branches of researchers (each reading and
// answering) and joins them; one branch in seven fails. Times advance one
// second per model call.
func Synthetic(n int) []*record.Node {
	var nodes []*record.Node
	var seq int64
	clock := map[string]time.Time{}
	add := func(nd *record.Node, d time.Duration) *record.Node {
		seq++
		nd.Seq = seq
		key := fmt.Sprintf("%d/%s", nd.ForkSeq, nd.Branch)
		if _, ok := clock[key]; !ok {
			clock[key] = Start
			if nd.ForkSeq > 0 {
				clock[key] = nodes[nd.ForkSeq-1].Ended
			}
		}
		nd.Started = clock[key]
		nd.Ended = nd.Started.Add(d)
		clock[key] = nd.Ended
		if nd.Status == "" {
			nd.Status = record.StatusOK
		}
		nodes = append(nodes, nd)
		return nd
	}
	llm := func(branch string, fork int64, depth int, agent string, calls ...string) {
		add(&record.Node{Kind: record.KindLLM, Branch: branch, ForkSeq: fork, Depth: depth, Agent: agent,
			LLM: &record.LLM{Model: "gpt-4.1-mini", Calls: calls, Usage: record.Usage{In: 1200, Out: 40}}}, time.Second)
	}
	tool := func(branch string, fork int64, depth int, agent, path string) {
		add(&record.Node{Kind: record.KindTool, Branch: branch, ForkSeq: fork, Depth: depth, Agent: agent,
			Tool: &record.Tool{CallID: fmt.Sprintf("call_%d", seq+1), Name: "read_file", Args: fmt.Sprintf(`{"path":%q}`, path),
				Result: "Revenue for the quarter was 4.2M, up 3% on the previous one.", Research: true}}, 0)
	}
	add(&record.Node{Kind: record.KindUser, Agent: "analyst", Text: "Compare Q3 revenue across every region"}, 0)
	for round := 0; len(nodes) < n-4; round++ {
		llm("", 0, 0, "analyst", "read_file")
		tool("", 0, 0, "analyst", fmt.Sprintf("regions/index-%d.md", round))
		llm("", 0, 0, "analyst", "fork")
		names := []string{"eu", "us", "apac", "latam"}
		fb := make([]record.ForkBranch, len(names))
		for i, name := range names {
			fb[i] = record.ForkBranch{Name: name, Agent: "researcher", Instructions: "Total " + name + " revenue; return the total."}
		}
		fork := add(&record.Node{Kind: record.KindFork, Agent: "analyst", Fork: &record.Fork{Context: "compact", Branches: fb}}, 0)
		join := &record.Join{ForkSeq: fork.Seq}
		var end time.Time
		for i, name := range names {
			llm(name, fork.Seq, 1, "researcher", "read_file")
			tool(name, fork.Seq, 1, "researcher", "regions/"+name+".md")
			status, answer := record.StatusOK, name+" total 4.2M"
			if (round*len(names)+i)%7 == 6 {
				status, answer = record.StatusError, "provider returned 500 after 3 retries"
				add(&record.Node{Kind: record.KindLLM, Branch: name, ForkSeq: fork.Seq, Depth: 1, Agent: "researcher", Status: status, Error: answer,
					LLM: &record.LLM{Model: "gpt-4.1-mini"}}, 2*time.Second)
				add(&record.Node{Kind: record.KindFinal, Branch: name, ForkSeq: fork.Seq, Depth: 1, Agent: "researcher", Status: status, Error: answer}, 0)
			} else {
				llm(name, fork.Seq, 1, "researcher")
				add(&record.Node{Kind: record.KindFinal, Branch: name, ForkSeq: fork.Seq, Depth: 1, Agent: "researcher", Text: answer}, 0)
			}
			last := nodes[len(nodes)-1]
			if last.Ended.After(end) {
				end = last.Ended
			}
			join.Branches = append(join.Branches, record.JoinBranch{Name: name, Agent: "researcher", Status: status,
				Duration: last.Ended.Sub(fork.Ended), Answer: answer})
		}
		clock["0/"] = end
		add(&record.Node{Kind: record.KindJoin, Agent: "analyst", Join: join}, 0)
	}
	llm("", 0, 0, "analyst")
	add(&record.Node{Kind: record.KindFinal, Agent: "analyst", Text: "All regions compared."}, 0)
	return nodes
}

// Record writes nodes as one finished run into db and returns its id.
func Record(ctx context.Context, db *store.DB, nodes []*record.Node) (string, error) {
	rec, err := db.CreateRun(ctx, &record.Run{Started: Start, Tasks: []string{"Compare Q3 revenue across every region"},
		Project: record.Project{Name: "synthetic", Files: []record.File{{Path: "agents.yaml", Content: "model: gpt-4.1-mini\nagents:\n  - name: analyst\n  - name: researcher\n"}}}})
	if err != nil {
		return "", err
	}
	for _, n := range nodes {
		if err := rec.AddNode(ctx, n); err != nil {
			return "", err
		}
	}
	end := Start
	if len(nodes) > 0 {
		end = nodes[len(nodes)-1].Ended
	}
	return rec.RunID(), rec.Finish(ctx, record.StatusOK, "", end)
}
