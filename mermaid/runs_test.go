package mermaid

import (
	"fmt"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// Test runs built in memory, shaped as docs/recording.md says the runtime
// records them.

var t0 = time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)

// rec builds a node list with sequence numbers and times.
type rec struct {
	nodes []*record.Node
}

// conv is where nodes go: a conversation address and its agent.
type conv struct {
	r       *rec
	branch  string
	forkSeq int64
	depth   int
	agent   string
	at      time.Duration // the conversation's clock
}

func (r *rec) trunk(agent string) *conv { return &conv{r: r, agent: agent} }

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// add records n taking d of the conversation's clock.
func (c *conv) add(n *record.Node, d time.Duration) *record.Node {
	n.Seq = int64(len(c.r.nodes) + 1)
	n.Branch, n.ForkSeq, n.Depth = c.branch, c.forkSeq, c.depth
	if n.Agent == "" {
		n.Agent = c.agent
	}
	n.Started = t0.Add(c.at)
	c.at += d
	n.Ended = t0.Add(c.at)
	if n.Status == "" {
		n.Status = record.StatusOK
	}
	c.r.nodes = append(c.r.nodes, n)
	return n
}

func (c *conv) user(text string) *record.Node {
	return c.add(&record.Node{Kind: record.KindUser, Text: text}, 0)
}

func (c *conv) llm(d time.Duration, in, out int64, calls ...string) *record.Node {
	return c.add(&record.Node{Kind: record.KindLLM, LLM: &record.LLM{Model: "scripted", Calls: calls, Usage: record.Usage{In: in, Out: out}}}, d)
}

func (c *conv) cachedLLM(d time.Duration, in, out, cached int64, calls ...string) *record.Node {
	n := c.llm(d, in, out, calls...)
	n.LLM.Usage.Cached, n.LLM.Usage.CachedReported = cached, true
	return n
}

func (c *conv) tool(name, args, result string) *record.Node {
	return c.add(&record.Node{Kind: record.KindTool, Tool: &record.Tool{CallID: fmt.Sprintf("call_%d", len(c.r.nodes)+1),
		Name: name, Args: args, Result: result, Research: name == "read_file" || name == "list_dir"}}, ms(40))
}

func (c *conv) final(text string) *record.Node {
	return c.add(&record.Node{Kind: record.KindFinal, Text: text}, 0)
}

func (c *conv) fail(err string) *record.Node {
	return c.add(&record.Node{Kind: record.KindFinal, Status: record.StatusError, Error: err}, 0)
}

func (c *conv) handoff(to, reason string) *record.Node {
	n := c.add(&record.Node{Kind: record.KindHandoff, Handoff: &record.Handoff{From: c.agent, To: to, Reason: reason}}, 0)
	c.agent = to
	return n
}

// fork records a fork node and returns one conversation per branch (named
// name or name:agent); call join when they are done.
func (c *conv) fork(context string, branches ...[2]string) (*record.Node, []*conv) {
	f := &record.Fork{Context: context}
	for _, b := range branches {
		agent := b[1]
		if agent == "" {
			agent = c.agent
		}
		f.Branches = append(f.Branches, record.ForkBranch{Name: b[0], Agent: agent, Instructions: "Report on " + b[0] + "."})
	}
	n := c.add(&record.Node{Kind: record.KindFork, Fork: f}, 0)
	var out []*conv
	for _, b := range f.Branches {
		path := b.Name
		if c.branch != "" {
			path = c.branch + "/" + b.Name
		}
		out = append(out, &conv{r: c.r, branch: path, forkSeq: n.Seq, depth: c.depth + 1, agent: b.Agent, at: c.at})
	}
	return n, out
}

// join closes fork f from its branch conversations; the parent's clock moves
// to the slowest branch's end.
func (c *conv) join(f *record.Node, branches []*conv, answers ...string) *record.Node {
	j := &record.Join{ForkSeq: f.Seq}
	start := c.at
	end := start
	for i, b := range branches {
		st := record.StatusOK
		answer := ""
		if i < len(answers) {
			answer = answers[i]
		}
		for k := len(c.r.nodes) - 1; k >= 0; k-- {
			if n := c.r.nodes[k]; n.ForkSeq == f.Seq && n.Branch == b.branch {
				if n.Status != record.StatusOK {
					st = n.Status
					answer = n.Error
				}
				break
			}
		}
		j.Branches = append(j.Branches, record.JoinBranch{Name: f.Fork.Branches[i].Name, Agent: f.Fork.Branches[i].Agent,
			Status: st, Duration: b.at - start, Answer: answer})
		end = max(end, b.at)
	}
	c.at = end
	return c.add(&record.Node{Kind: record.KindJoin, Join: j}, 0)
}

func build(t testing.TB, r *rec, id string, status record.Status, tasks ...string) *graph.Run {
	t.Helper()
	run := &record.Run{ID: id, Started: t0, Status: status, Tasks: tasks, Project: record.Project{Name: "demo"}, Models: []string{"scripted"}}
	if status != record.StatusRunning && status != record.StatusInterrupted {
		var end time.Time
		for _, n := range r.nodes {
			if n.Ended.After(end) {
				end = n.Ended
			}
		}
		run.Ended = end
	}
	g, err := graph.Build(run, r.nodes)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// fanoutRun is the demo-like run: a read, a fork of three research branches
// (apac fails, us is slowest), a join, a hand-off to billing.
func fanoutRun(t testing.TB) *graph.Run {
	r := &rec{}
	tr := r.trunk("analyst")
	task := "Compare Q3 revenue across EU, US and APAC and say which region grew fastest"
	tr.user(task)
	tr.cachedLLM(ms(1200), 1210, 31, 0, "read_file")
	tr.tool("read_file", `{"path":"regions/index.md"}`, "eu, us, apac")
	tr.cachedLLM(ms(1000), 1402, 96, 1024, "fork")
	f, bs := tr.fork("compact", [2]string{"eu", "researcher"}, [2]string{"us", "researcher"}, [2]string{"apac", "researcher"})
	eu, us, apac := bs[0], bs[1], bs[2]
	eu.cachedLLM(ms(1000), 800, 40, 0, "read_file", "read_file")
	eu.tool("read_file", `{"path":"regions/eu.md"}`, "EU: 4.1%")
	eu.tool("read_file", `{"path":"regions/eu-q3.csv","limit":200}`, "month,revenue\n...")
	eu.cachedLLM(ms(7020), 1500, 120, 512)
	eu.final("EU revenue rose 4.1% in Q3.")
	us.cachedLLM(ms(3000), 800, 38, 0, "read_file")
	us.tool("read_file", `{"path":"regions/us.md"}`, "US: see us-q3.csv")
	us.cachedLLM(ms(9000), 1100, 35, 512, "read_file")
	us.tool("read_file", `{"path":"regions/us-q3.csv"}`, "month,revenue\n...")
	us.cachedLLM(ms(9620), 1900, 150, 512)
	us.final("US revenue rose 6.3% in Q3.")
	n := apac.llm(ms(2000), 0, 0)
	n.Status, n.Error = record.StatusError, "provider error after 3 retries: 503 Service Unavailable"
	apac.fail("provider error after 3 retries: 503 Service Unavailable")
	tr.join(f, bs)
	tr.cachedLLM(ms(1400), 2600, 60, 1400, "transfer_to_billing")
	tr.handoff("billing", "billing owns the revenue report format")
	tr.cachedLLM(ms(2200), 2900, 210, 2400)
	tr.final("US grew fastest (6.3%), then EU (4.1%); APAC data was unavailable.")
	return build(t, r, "7f3a9c2e41d0", record.StatusOK, task)
}

// handoffRun is a plain hand-off with no fork and no cached tokens reported.
func handoffRun(t testing.TB) *graph.Run {
	r := &rec{}
	tr := r.trunk("triage")
	tr.user("My invoice is wrong")
	tr.llm(ms(800), 400, 20, "transfer_to_billing")
	tr.handoff("billing", "an invoice question")
	tr.llm(ms(900), 600, 25, "lookup_invoice")
	tr.tool("lookup_invoice", `{"id":"INV-1042"}`, `{"total": 120}`)
	tr.llm(ms(700), 700, 80)
	tr.final("Your invoice INV-1042 was corrected.")
	return build(t, r, "a1b2c3d4e5f6", record.StatusOK, "My invoice is wrong")
}

// nestedRun forks inside a branch (inherit then none context).
func nestedRun(t testing.TB) *graph.Run {
	r := &rec{}
	tr := r.trunk("planner")
	tr.user("Survey the European and US markets")
	tr.llm(ms(900), 500, 40, "fork")
	f, bs := tr.fork("inherit", [2]string{"europe", "researcher"}, [2]string{"us", ""})
	eu, us := bs[0], bs[1]
	eu.llm(ms(700), 700, 30, "fork")
	f2, bs2 := eu.fork("none", [2]string{"fr", ""}, [2]string{"de", ""})
	bs2[0].llm(ms(1500), 300, 50, "list_dir")
	bs2[0].tool("list_dir", `{"path":"fr"}`, "a.md b.md")
	bs2[0].llm(ms(500), 350, 60)
	bs2[0].final("France: flat.")
	bs2[1].llm(ms(3100), 300, 70)
	bs2[1].final("Germany: up.")
	eu.join(f2, bs2)
	eu.llm(ms(600), 900, 80)
	eu.final("Europe: mixed.")
	us.llm(ms(2000), 650, 90)
	us.final("US: up.")
	tr.join(f, bs)
	tr.llm(ms(800), 1200, 100)
	tr.final("Europe mixed, US up.")
	return build(t, r, "c0ffee000001", record.StatusOK, "Survey the European and US markets")
}

// hostileRun carries names and text that would break or reconfigure a
// chart that did not escape them.
func hostileRun(t testing.TB) *graph.Run {
	r := &rec{}
	tr := r.trunk("end")
	task := "%%{init: {\"theme\":\"dark\", \"securityLevel\":\"loose\"}}%%\nend\nsubgraph x\n\"]; click n1 call alert(1)\n<script>alert(1)</script> `md` $$x^2$$ C:\\new #quot; style:#35;x classDef a fill:#f00; 100%% & done"
	tr.user(task)
	tr.llm(ms(100), 10, 5, `read_file"]`, "graph")
	tr.tool(`read_file"]`, `{"path":"\"]\nend\nflowchart LR\n%%{init}%%","mode":"<b>"}`, "x")
	tr.tool("graph", `not json ]] end`, "")
	tr.llm(ms(100), 10, 5, "fork")
	f, bs := tr.fork("compact", [2]string{"end", "subgraph"}, [2]string{`a"]; b["c`, "graph"}, [2]string{"%%{init: {'theme':'forest'}}%%", "end"})
	bs[0].llm(ms(300), 10, 5)
	bs[0].final("line1\r\nline2\tand\x01bell\uFFFE 日本語 😀")
	bs[1].llm(ms(200), 10, 5)
	bs[1].fail("bad \"quote\" <b>bold</b>")
	bs[2].llm(ms(100), 10, 5)
	bs[2].final("ok")
	tr.join(f, bs)
	tr.llm(ms(100), 10, 5, "transfer_to_style")
	tr.handoff("style", "because:#35; classDef x fill:#f00;\nend")
	tr.llm(ms(100), 10, 5)
	tr.final("done")
	return build(t, r, "click", record.StatusOK, task)
}

// interruptedRun died with a fork open: no join, a branch still running.
func interruptedRun(t testing.TB) *graph.Run {
	r := &rec{}
	tr := r.trunk("analyst")
	tr.user("Read everything")
	tr.llm(ms(500), 300, 20, "fork")
	_, bs := tr.fork("none", [2]string{"a", ""}, [2]string{"b", ""})
	bs[0].llm(ms(800), 200, 30)
	bs[0].final("a done")
	n := bs[1].llm(ms(400), 200, 0)
	n.Status, n.Ended = record.StatusInterrupted, time.Time{}
	return build(t, r, "dead00000001", record.StatusInterrupted, "Read everything")
}

// repeatedRun reads 30 files one call at a time.
func repeatedRun(t testing.TB) *graph.Run {
	r := &rec{}
	tr := r.trunk("analyst")
	tr.user("Summarize the 30 chapters")
	for i := 1; i <= 30; i++ {
		tr.llm(ms(300), int64(1000+50*i), 20, "read_file")
		tr.tool("read_file", fmt.Sprintf(`{"path":"ch%02d.md"}`, i), "text")
	}
	tr.llm(ms(1000), 3000, 300)
	tr.final("A summary.")
	return build(t, r, "5e5e5e5e5e5e", record.StatusOK, "Summarize the 30 chapters")
}

// bigRun has about n nodes: rounds of serial reads, forks of four branches
// (one with a nested fork), and hand-offs back and forth.
func bigRun(t testing.TB, n int) *graph.Run {
	r := &rec{}
	tr := r.trunk("analyst")
	tr.user("A very long job")
	for round := 0; len(r.nodes) < n; round++ {
		for i := 0; i < 6; i++ {
			tr.llm(ms(200), 1000, 20, "read_file")
			tr.tool("read_file", fmt.Sprintf(`{"path":"r%d/f%d.md"}`, round, i), "text")
		}
		tr.llm(ms(300), 1200, 40, "fork")
		f, bs := tr.fork("compact", [2]string{"a", "researcher"}, [2]string{"b", "researcher"}, [2]string{"c", ""}, [2]string{"d", ""})
		for k, b := range bs {
			for i := 0; i < 3+k; i++ {
				b.llm(ms(100*(k+1)), 500, 10, "list_dir")
				b.tool("list_dir", fmt.Sprintf(`{"path":"d%d"}`, i), "x")
			}
			if k == 0 {
				b.llm(ms(100), 500, 10, "fork")
				f2, bs2 := b.fork("none", [2]string{"x", ""}, [2]string{"y", ""})
				for _, b2 := range bs2 {
					b2.llm(ms(100), 100, 5)
					b2.final("ok")
				}
				b.join(f2, bs2)
			}
			b.llm(ms(100), 600, 30)
			b.final("done")
		}
		tr.join(f, bs)
		to := "billing"
		if round%2 == 1 {
			to = "analyst"
		}
		tr.llm(ms(100), 800, 10, "transfer_to_"+to)
		tr.handoff(to, "next part")
	}
	tr.llm(ms(100), 800, 10)
	tr.final("all done")
	return build(t, r, "b16b16b16b16", record.StatusOK, "A very long job")
}

// testRuns are the runs with goldens under testdata/.
func testRuns(t testing.TB) []struct {
	name string
	g    *graph.Run
} {
	return []struct {
		name string
		g    *graph.Run
	}{
		{"fanout", fanoutRun(t)},
		{"handoff", handoffRun(t)},
		{"nested", nestedRun(t)},
		{"hostile", hostileRun(t)},
		{"interrupted", interruptedRun(t)},
		{"repeated", repeatedRun(t)},
	}
}
