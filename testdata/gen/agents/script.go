package main

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// A Scenario is what the scripted model answers, conversation by
// conversation. A conversation is named by the last marker in its user
// text: the main one by "[scenario:NAME]" in the task, a sub-agent's by
// "[task:ID]" in the prompt its parent gave it. Its step is the number of
// model responses after that marker, so the answer depends on the
// conversation and never on the order requests arrive in: sub-agents that
// run concurrently get the same answers in any order.
type Scenario struct {
	Name string
	// Task is the user's prompt (the harness adds the marker).
	Task string
	// Convs maps a conversation ("main" or a task id) to its steps.
	Convs map[string][]Step
	// ByCLI replaces conversations of Convs for one CLI, where the CLI
	// needs a different shape (Codex waits for its children; Gemini CLI's
	// sub-agents finish through complete_task, which the server adds).
	ByCLI map[string]map[string][]Step
	// Files are written into the workspace before the run.
	Files map[string]string
	// Interrupt, when set, sends SIGINT to the CLI's process group (the
	// user's Ctrl-C) once a request of this conversation arrives (the
	// server then holds that request until the client goes away).
	Interrupt string
	// Then lists, per CLI, the prompts of later runs that resume the
	// session the first run left (a later user turn, or a command such as
	// Gemini CLI's /compress).
	Then map[string][]string
	// CLIs lists the CLIs the scenario is for; empty: all. Why a CLI is
	// left out is said where the scenario is defined.
	CLIs []string
}

// A Step is one model response: tool calls (run concurrently where the CLI
// does), or a final text.
type Step struct {
	Calls []Call
	Text  string
	// Status, when set, answers the request with this HTTP error instead.
	Status int
	// Wait, for a CLI whose sub-agents report back only when it waits for
	// them (Codex's wait_agent), calls the wait tool for as long as a child
	// this conversation started has not reported; once none is pending
	// (and for the other CLIs) the step is passed over.
	Wait bool
	// Huge reports a context close to the model's window with this
	// response, so the CLI compacts the conversation before its next
	// request.
	Huge bool
}

// A Call is one tool call in CLI-neutral words; each wire format maps Tool
// to the CLI's own tool name and arguments.
type Call struct {
	Tool string // "read", "agent", "bash", "followup", "load" (Claude Code's ToolSearch for a deferred tool)
	// Path is read's file (relative to the workspace).
	Path string
	// Task, Type, Background are agent's: the sub-agent's conversation id,
	// its type ("" = the CLI's default; "fork" = a child seeded with the
	// parent's turns), and whether it runs in the background (nil: the
	// CLI's default). For followup, Task is the sub-agent given more work
	// and Next the conversation id of that work.
	Task       string
	Type       string
	Background *bool
	Next       string
	// Command is bash's; for load, the tool to load.
	Command string
}

var markerRE = regexp.MustCompile(`\[(scenario|task):([A-Za-z0-9_.-]+)\]`)

// An item is one thing a request's conversation holds, in order, as the
// server reads it in a CLI's wire format.
type item struct {
	// Marker is a user text that starts with a marker.
	Marker string
	// Response is a model response; Wait, one that only waited for
	// sub-agents; Started, how many sub-agents it started or gave more work.
	Response bool
	Wait     bool
	Started  int
	// Reported is a sub-agent's report reaching this conversation.
	Reported bool
	// Task and AgentID name a sub-agent the CLI started for a task: its own
	// id for it (Claude Code's agentId, which SendMessage takes).
	Task, AgentID string
}

// A view is what the server reads of a request's conversation.
type view struct {
	conv string
	// responses are the model responses after the conversation's marker,
	// waits the ones of them that only waited.
	responses, waits int
	// pending are the sub-agents started (or given more work) after the
	// marker that have not reported back.
	pending int
	// agents maps a task id to the CLI's id of its sub-agent.
	agents map[string]string
}

// reduce reduces a conversation's items to its view.
func reduce(items []item) view {
	v := view{agents: map[string]string{}}
	last := -1
	for i, it := range items {
		if it.Task != "" && it.AgentID != "" {
			v.agents[it.Task] = it.AgentID
		}
		if it.Marker != "" {
			if ms := markerRE.FindAllStringSubmatch(it.Marker, -1); len(ms) > 0 {
				m := ms[len(ms)-1]
				v.conv = m[2]
				if m[1] == "scenario" {
					v.conv = "main"
				}
				last = i
			}
		}
	}
	if last < 0 {
		return v
	}
	for _, it := range items[last+1:] {
		if it.Response {
			v.responses++
			if it.Wait {
				v.waits++
			}
		}
		v.pending += it.Started
		if it.Reported {
			v.pending--
		}
	}
	return v
}

// script is conversation conv's steps for cli.
func (sc *Scenario) script(cli, conv string) []Step {
	if steps, ok := sc.ByCLI[cli][conv]; ok {
		return steps
	}
	return sc.Convs[conv]
}

// answer is the step a conversation takes next: its responses that did
// more than wait are matched with the script's steps other than Wait in
// order; a Wait step right before the next one is taken again for as long
// as a sub-agent is pending (for a CLI that waits). Past its script a
// conversation ends with a short text.
func (sc *Scenario) answer(cli string, v view) Step {
	steps := sc.script(cli, v.conv)
	done := v.responses - v.waits
	i, n := 0, 0
	for ; i < len(steps); i++ {
		if steps[i].Wait {
			continue
		}
		if n == done {
			break
		}
		n++
	}
	if i > 0 && steps[i-1].Wait && cli == "codex" && v.pending > 0 {
		return Step{Calls: []Call{{Tool: "wait"}}}
	}
	if i < len(steps) {
		return steps[i]
	}
	return Step{Text: fmt.Sprintf("done (%s)", v.conv)}
}

// agentPrompt is the prompt a parent gives sub-agent task.
func agentPrompt(task string) string {
	return fmt.Sprintf("[task:%s] Do the part named %s and answer in one line.", task, task)
}

// summary is the summary the server writes when a CLI compacts
// conversation conv: the conversation goes on as conv+".compacted".
func summary(conv string) string {
	return fmt.Sprintf("The files read so far hold lines of their own names.\n[task:%s.compacted] Go on from this summary.", conv)
}

func no() *bool  { b := false; return &b }
func yes() *bool { b := true; return &b }

func readFile(p string) Call { return Call{Tool: "read", Path: p} }

func agent(task string) Call { return Call{Tool: "agent", Task: task, Background: no()} }

func bgAgent(task string) Call { return Call{Tool: "agent", Task: task, Background: yes()} }

func calls(cs ...Call) Step { return Step{Calls: cs} }

func text(t string) Step { return Step{Text: t} }

var wait = Step{Wait: true}

// files returns n small files named a.txt, b.txt, ….
func files(n int) map[string]string {
	m := map[string]string{}
	for i := 0; i < n; i++ {
		name := string(rune('a'+i)) + ".txt"
		m[name] = strings.Repeat(fmt.Sprintf("line of %s\n", name), 5)
	}
	return m
}

// scenarios are the harness's scenarios, by name.
var scenarios = []*Scenario{
	{
		Name:  "parallel-reads",
		Task:  "Read a.txt, b.txt and c.txt and say what they hold.",
		Files: files(3),
		Convs: map[string][]Step{
			"main": {calls(readFile("a.txt"), readFile("b.txt"), readFile("c.txt")), text("They hold lines of a, b and c.")},
		},
	},
	{
		Name:  "subagents-parallel",
		Task:  "Have three sub-agents read a.txt, b.txt and c.txt at once, then sum up.",
		Files: files(3),
		Convs: map[string][]Step{
			"main": {calls(agent("t1"), agent("t2"), agent("t3")), wait, text("All three parts are done.")},
			"t1":   {calls(readFile("a.txt")), text("a.txt holds lines of a.")},
			"t2":   {calls(readFile("b.txt")), text("b.txt holds lines of b.")},
			"t3":   {calls(readFile("c.txt")), text("c.txt holds lines of c.")},
		},
	},
	{
		// Gemini CLI 0.61's invoke_agent always runs in the foreground.
		Name:  "subagents-background",
		Task:  "Start four background sub-agents on a.txt to d.txt, read e.txt yourself meanwhile, then sum up.",
		Files: files(5),
		CLIs:  []string{"claude", "codex"},
		Convs: map[string][]Step{
			// Claude Code ends the turn, then each notification (one or
			// several finished sub-agents) is a turn of its own.
			"main": {
				calls(bgAgent("t1"), bgAgent("t2"), bgAgent("t3"), bgAgent("t4")),
				calls(readFile("e.txt")),
				text("Started four; e.txt read; waiting for them."),
				text("Some parts are in."),
				text("More parts are in."),
				text("More parts are in."),
				text("All four parts are in."),
			},
			"t1": {calls(readFile("a.txt")), text("a.txt holds lines of a.")},
			"t2": {calls(readFile("b.txt")), text("b.txt holds lines of b.")},
			"t3": {calls(readFile("c.txt")), text("c.txt holds lines of c.")},
			"t4": {calls(readFile("d.txt")), text("d.txt holds lines of d.")},
		},
		ByCLI: map[string]map[string][]Step{
			"codex": {"main": {
				calls(bgAgent("t1"), bgAgent("t2"), bgAgent("t3"), bgAgent("t4")),
				calls(readFile("e.txt")),
				wait,
				text("All four parts are in."),
			}},
		},
	},
	{
		Name:  "subagents-serial",
		Task:  "Have one sub-agent read a.txt, then another read b.txt.",
		Files: files(2),
		Convs: map[string][]Step{
			"main": {calls(agent("t1")), wait, calls(agent("t2")), wait, text("Both done, one after the other.")},
			"t1":   {calls(readFile("a.txt")), text("a.txt holds lines of a.")},
			"t2":   {calls(readFile("b.txt")), text("b.txt holds lines of b.")},
		},
	},
	{
		Name:  "subagent-refused",
		Task:  "Have a sub-agent of type no-such-agent read a.txt.",
		Files: files(1),
		Convs: map[string][]Step{
			"main": {calls(Call{Tool: "agent", Task: "t1", Type: "no-such-agent", Background: no()}), calls(readFile("a.txt")), text("Read it myself.")},
			"t1":   {calls(readFile("a.txt")), text("unreachable: the call was refused")},
		},
	},
	{
		Name:  "subagent-fails",
		Task:  "Have a sub-agent read a.txt.",
		Files: files(1),
		Convs: map[string][]Step{
			"main": {calls(agent("t1")), wait, text("The sub-agent failed.")},
			"t1":   {{Status: 400}},
		},
	},
	{
		// Gemini CLI 0.61 has no sub-agent that inherits the parent's turns.
		Name:  "subagent-fork",
		Task:  "Fork yourself to read a.txt while you read b.txt.",
		Files: files(2),
		CLIs:  []string{"claude", "codex"},
		Convs: map[string][]Step{
			"main": {calls(Call{Tool: "agent", Task: "t1", Type: "fork", Background: no()}, readFile("b.txt")), wait, text("Both read.")},
			"t1":   {calls(readFile("a.txt")), text("a.txt holds lines of a.")},
		},
	},
	{
		// Gemini CLI 0.61 does not offer invoke_agent to a sub-agent.
		Name:  "subagents-nested",
		Task:  "Have a sub-agent that has its own sub-agent read a.txt.",
		Files: files(1),
		CLIs:  []string{"claude", "codex"},
		Convs: map[string][]Step{
			"main": {calls(agent("t1")), wait, text("Nested work done.")},
			"t1":   {calls(agent("t1.1")), wait, text("My sub-agent read it.")},
			"t1.1": {calls(readFile("a.txt")), text("a.txt holds lines of a.")},
		},
	},
	{
		Name:      "subagent-interrupted",
		Task:      "Have a sub-agent read a.txt.",
		Files:     files(1),
		Interrupt: "t1",
		Convs: map[string][]Step{
			"main": {calls(agent("t1")), wait, text("unreachable")},
			"t1":   {calls(readFile("a.txt")), text("unreachable")},
		},
	},
	{
		// A background sub-agent that finished is given more work: one
		// branch that works in two spans and reports twice. Gemini CLI 0.61
		// cannot resume a sub-agent.
		Name:  "subagent-resumed",
		Task:  "Have a background sub-agent read a.txt; once it reports, have the same sub-agent read b.txt.",
		Files: files(2),
		CLIs:  []string{"claude", "codex"},
		Convs: map[string][]Step{
			"main": {
				calls(bgAgent("t1")),
				text("Started t1; waiting for it."),
				// SendMessage is a deferred tool: loaded by ToolSearch first
				calls(Call{Tool: "load", Command: "SendMessage"}),
				calls(Call{Tool: "followup", Task: "t1", Next: "t1b"}),
				text("Asked t1 for more; waiting for it."),
				text("t1 answered twice."),
			},
			"t1":  {calls(readFile("a.txt")), text("a.txt holds lines of a.")},
			"t1b": {calls(readFile("b.txt")), text("b.txt holds lines of b.")},
		},
		ByCLI: map[string]map[string][]Step{
			"codex": {"main": {
				calls(bgAgent("t1")), wait,
				calls(Call{Tool: "followup", Task: "t1", Next: "t1b"}), wait,
				text("t1 answered twice."),
			}},
		},
	},
	{
		// The second response reports a context close to the window: the
		// CLI compacts, and the conversation goes on from the summary
		// (main.compacted).
		Name:  "compaction",
		Task:  "Read a.txt, b.txt and c.txt one at a time.",
		Files: files(3),
		Convs: map[string][]Step{
			"main":           {calls(readFile("a.txt")), {Calls: []Call{readFile("b.txt")}, Huge: true}, text("unreachable: no compaction")},
			"main.compacted": {calls(readFile("c.txt")), text("All three read, one after the compaction.")},
			"turn2":          {calls(readFile("c.txt")), text("c.txt read after the compaction.")},
		},
		ByCLI: map[string]map[string][]Step{
			// Claude Code keeps the last response (the read of b.txt) after
			// the summary
			"claude": {"main.compacted": {calls(readFile("b.txt")), calls(readFile("c.txt")), text("All three read, one after the compaction.")}},
			// Gemini CLI compresses only before a user turn, so the session
			// is resumed with /compress and then a turn of its own
			"gemini": {"main": {calls(readFile("a.txt")), {Calls: []Call{readFile("b.txt")}, Huge: true}, text("a.txt and b.txt read.")}},
		},
		Then: map[string][]string{"gemini": {"/compress", "[task:turn2] Now read c.txt."}},
	},
	{
		Name:  "long-session",
		Task:  "Run one hundred and twenty commands, one call at a time.",
		Files: files(1),
		Convs: map[string][]Step{"main": longSteps(120)},
	},
}

// A Plan is a scenario's structure for one CLI as its script lays it out,
// kept in scenario.json beside the log: which conversations are the
// trunk's and which sub-agent each of the others is, and who started it.
// Tests read the log's requests through it.
type Plan struct {
	// Trunk lists the conversations of the main agent: "main" and those
	// it goes on as (after a compaction, a later turn).
	Trunk []string `json:"trunk"`
	// Branches are the sub-agents the script starts, in the order their
	// calls come in the script.
	Branches []PlanBranch `json:"branches,omitempty"`
}

// A PlanBranch is one sub-agent the script starts.
type PlanBranch struct {
	Task string `json:"task"`
	// Parent is the task of the sub-agent that starts it, "" for the main
	// agent.
	Parent string `json:"parent,omitempty"`
	// Convs are its conversations: Task, then those of the work it is
	// given later (a follow-up).
	Convs      []string `json:"convs"`
	Type       string   `json:"type,omitempty"`
	Background bool     `json:"background,omitempty"`
}

// plan lays out sc's structure for cli.
func (sc *Scenario) plan(cli string) Plan {
	var p Plan
	convs := map[string]bool{}
	for c := range sc.Convs {
		convs[c] = true
	}
	for c := range sc.ByCLI[cli] {
		convs[c] = true
	}
	owner := map[string]string{"main": ""} // conversation -> the branch task it belongs to ("" = trunk)
	idx := map[string]int{}
	// walk from main, breadth first, so parents come before children
	queue := []string{"main"}
	seen := map[string]bool{"main": true}
	for len(queue) > 0 {
		conv := queue[0]
		queue = queue[1:]
		for _, st := range sc.script(cli, conv) {
			for _, c := range st.Calls {
				switch c.Tool {
				case "agent":
					b := PlanBranch{Task: c.Task, Parent: owner[conv], Convs: []string{c.Task}, Type: c.Type,
						Background: c.Background != nil && *c.Background}
					idx[c.Task] = len(p.Branches)
					p.Branches = append(p.Branches, b)
					owner[c.Task] = c.Task
					if !seen[c.Task] {
						seen[c.Task] = true
						queue = append(queue, c.Task)
					}
				case "followup":
					if i, ok := idx[c.Task]; ok {
						p.Branches[i].Convs = append(p.Branches[i].Convs, c.Next)
						owner[c.Next] = c.Task
						if !seen[c.Next] {
							seen[c.Next] = true
							queue = append(queue, c.Next)
						}
					}
				}
			}
		}
	}
	p.Trunk = []string{"main"}
	var rest []string
	for c := range convs {
		if _, ok := owner[c]; !ok {
			rest = append(rest, c)
		}
	}
	sort.Strings(rest)
	p.Trunk = append(p.Trunk, rest...)
	return p
}

func longSteps(n int) []Step {
	var s []Step
	for i := 0; i < n; i++ {
		s = append(s, Step{Calls: []Call{{Tool: "bash", Command: fmt.Sprintf("echo step %d", i)}}})
	}
	return append(s, Step{Text: "All steps done."})
}

func scenarioNamed(name string) *Scenario {
	for _, sc := range scenarios {
		if sc.Name == name {
			return sc
		}
	}
	return nil
}

func (sc *Scenario) forCLI(cli string) bool {
	if len(sc.CLIs) == 0 {
		return true
	}
	for _, c := range sc.CLIs {
		if c == cli {
			return true
		}
	}
	return false
}
