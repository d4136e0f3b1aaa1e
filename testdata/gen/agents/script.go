package main

import (
	"fmt"
	"regexp"
	"strings"
)

// A Scenario is what the scripted model answers, conversation by
// conversation. A conversation is named by the last marker in its user
// text: the main one by "[scenario:NAME]" in the task, a sub-agent's by
// "[task:ID]" in the prompt its parent gave it. Its step is the number of
// assistant messages after that marker, so the answer depends on the
// conversation and never on the order requests arrive in: sub-agents that
// run concurrently get the same answers in any order.
type Scenario struct {
	Name string
	// Task is the user's prompt (the harness adds the marker).
	Task string
	// Convs maps a conversation ("main" or a task id) to its steps.
	Convs map[string][]Step
	// Files are written into the workspace before the run.
	Files map[string]string
	// Interrupt, when set, sends SIGINT to the CLI once a request of this
	// conversation arrives (the server then holds that request until the
	// client goes away).
	Interrupt string
	// CLIs lists the CLIs the scenario is for; empty: all.
	CLIs []string
}

// A Step is one model response: tool calls (run concurrently where the CLI
// does), or a final text.
type Step struct {
	Calls []Call
	Text  string
	// Status, when set, answers the request with this HTTP error instead.
	Status int
}

// A Call is one tool call in CLI-neutral words; each wire format maps Tool
// to the CLI's own tool name and arguments.
type Call struct {
	Tool string // "read", "agent", "bash"
	// Path is read's file (relative to the workspace).
	Path string
	// Task, Type, Background are agent's: the sub-agent's conversation id,
	// its type ("" = the CLI's default), and whether it runs in the
	// background (nil: the CLI's default).
	Task       string
	Type       string
	Background *bool
	// Command is bash's.
	Command string
}

var markerRE = regexp.MustCompile(`\[(scenario|task):([A-Za-z0-9_.-]+)\]`)

// conversation names the conversation whose user texts are texts (oldest
// first) and says how many assistant messages followed the text holding
// its marker: assistantsAfter[i] is the number after texts[i].
func conversation(texts []string, assistantsAfter []int) (conv string, step int) {
	conv, step = "", 0
	for i, t := range texts {
		ms := markerRE.FindAllStringSubmatch(t, -1)
		if len(ms) == 0 {
			continue
		}
		m := ms[len(ms)-1]
		if m[1] == "scenario" {
			conv = "main"
		} else {
			conv = m[2]
		}
		step = assistantsAfter[i]
	}
	return conv, step
}

// scenarioOf returns the scenario named in texts.
func scenarioOf(texts []string) string {
	for _, t := range texts {
		for _, m := range markerRE.FindAllStringSubmatch(t, -1) {
			if m[1] == "scenario" {
				return m[2]
			}
		}
	}
	return ""
}

// answer is the step conversation conv of scenario sc takes at step n; past
// its script a conversation ends with a short text.
func (sc *Scenario) answer(conv string, n int) Step {
	steps := sc.Convs[conv]
	if n < len(steps) {
		return steps[n]
	}
	return Step{Text: fmt.Sprintf("done (%s)", conv)}
}

// agentPrompt is the prompt a parent gives sub-agent task.
func agentPrompt(task string) string {
	return fmt.Sprintf("[task:%s] Do the part named %s and answer in one line.", task, task)
}

func no() *bool  { b := false; return &b }
func yes() *bool { b := true; return &b }

func read(p string) Call { return Call{Tool: "read", Path: p} }

func agent(task string) Call { return Call{Tool: "agent", Task: task, Background: no()} }

func bgAgent(task string) Call { return Call{Tool: "agent", Task: task, Background: yes()} }

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
			"main": {{Calls: []Call{read("a.txt"), read("b.txt"), read("c.txt")}}, {Text: "They hold lines of a, b and c."}},
		},
	},
	{
		Name:  "subagents-parallel",
		Task:  "Have three sub-agents read a.txt, b.txt and c.txt at once, then sum up.",
		Files: files(3),
		Convs: map[string][]Step{
			"main": {{Calls: []Call{agent("t1"), agent("t2"), agent("t3")}}, {Text: "All three parts are done."}},
			"t1":   {{Calls: []Call{read("a.txt")}}, {Text: "a.txt holds lines of a."}},
			"t2":   {{Calls: []Call{read("b.txt")}}, {Text: "b.txt holds lines of b."}},
			"t3":   {{Calls: []Call{read("c.txt")}}, {Text: "c.txt holds lines of c."}},
		},
	},
	{
		Name:  "subagents-background",
		Task:  "Start four background sub-agents on a.txt to d.txt, read e.txt yourself meanwhile, then sum up.",
		Files: files(5),
		Convs: map[string][]Step{
			"main": {
				{Calls: []Call{bgAgent("t1"), bgAgent("t2"), bgAgent("t3"), bgAgent("t4")}},
				{Calls: []Call{read("e.txt")}},
				{Text: "Started four; e.txt read; waiting for them."},
				{Text: "One part is in."},
				{Text: "Two parts are in."},
				{Text: "Three parts are in."},
				{Text: "All four parts are in."},
			},
			"t1": {{Calls: []Call{read("a.txt")}}, {Text: "a.txt holds lines of a."}},
			"t2": {{Calls: []Call{read("b.txt")}}, {Text: "b.txt holds lines of b."}},
			"t3": {{Calls: []Call{read("c.txt")}}, {Text: "c.txt holds lines of c."}},
			"t4": {{Calls: []Call{read("d.txt")}}, {Text: "d.txt holds lines of d."}},
		},
	},
	{
		Name:  "subagents-serial",
		Task:  "Have one sub-agent read a.txt, then another read b.txt.",
		Files: files(2),
		Convs: map[string][]Step{
			"main": {{Calls: []Call{agent("t1")}}, {Calls: []Call{agent("t2")}}, {Text: "Both done, one after the other."}},
			"t1":   {{Calls: []Call{read("a.txt")}}, {Text: "a.txt holds lines of a."}},
			"t2":   {{Calls: []Call{read("b.txt")}}, {Text: "b.txt holds lines of b."}},
		},
	},
	{
		Name:  "subagent-refused",
		Task:  "Have a sub-agent of type no-such-agent read a.txt.",
		Files: files(1),
		Convs: map[string][]Step{
			"main": {{Calls: []Call{{Tool: "agent", Task: "t1", Type: "no-such-agent", Background: no()}}}, {Calls: []Call{read("a.txt")}}, {Text: "Read it myself."}},
		},
	},
	{
		Name:  "subagent-fails",
		Task:  "Have a sub-agent read a.txt.",
		Files: files(1),
		Convs: map[string][]Step{
			"main": {{Calls: []Call{agent("t1")}}, {Text: "The sub-agent failed."}},
			"t1":   {{Status: 400}},
		},
	},
	{
		Name:  "subagent-fork",
		Task:  "Fork yourself to read a.txt while you read b.txt.",
		Files: files(2),
		CLIs:  []string{"claude"},
		Convs: map[string][]Step{
			"main": {{Calls: []Call{{Tool: "agent", Task: "t1", Type: "fork", Background: no()}, read("b.txt")}}, {Text: "Both read."}},
			"t1":   {{Calls: []Call{read("a.txt")}}, {Text: "a.txt holds lines of a."}},
		},
	},
	{
		Name:  "subagents-nested",
		Task:  "Have a sub-agent that has its own sub-agent read a.txt.",
		Files: files(1),
		Convs: map[string][]Step{
			"main": {{Calls: []Call{agent("t1")}}, {Text: "Nested work done."}},
			"t1":   {{Calls: []Call{agent("t1.1")}}, {Text: "My sub-agent read it."}},
			"t1.1": {{Calls: []Call{read("a.txt")}}, {Text: "a.txt holds lines of a."}},
		},
	},
	{
		Name:      "subagent-interrupted",
		Task:      "Have a sub-agent read a.txt.",
		Files:     files(1),
		Interrupt: "t1",
		Convs: map[string][]Step{
			"main": {{Calls: []Call{agent("t1")}}, {Text: "unreachable"}},
			"t1":   {{Calls: []Call{read("a.txt")}}, {Text: "unreachable"}},
		},
	},
	{
		Name:  "long-session",
		Task:  "Read a.txt one hundred and twenty times, one call at a time.",
		Files: files(1),
		Convs: map[string][]Step{"main": longSteps(120)},
	},
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
