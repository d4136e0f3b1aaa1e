package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime/project"
	openai "github.com/sashabaranov/go-openai"
	"golang.org/x/sync/errgroup"
)

var branchNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// branchNameProblem says what is wrong with a branch name, or "" when it
// is fine. "trunk" names the run's root conversation (in progress lines and
// in a script's conversations), so no branch may take it.
func branchNameProblem(name string) string {
	if name == "trunk" {
		return "is reserved: trunk is the run's root conversation"
	}
	if branchNameRE.MatchString(name) {
		return ""
	}
	for i, r := range name {
		switch {
		case r == '/':
			return "holds /, which separates the levels of a branch path"
		case r == ' ' || r == '\t' || r == '\n':
			return "holds a space"
		case i == 0 && (r == '.' || r == '-' || r == '_'):
			return fmt.Sprintf("starts with %q", r)
		case !(r < 128 && (r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')):
			return fmt.Sprintf("holds %q", r)
		}
	}
	return "is not a valid name"
}

// forkCall is a validated fork call.
type forkCall struct {
	context  string
	branches []record.ForkBranch
}

// parseFork validates a fork call's arguments for the forking agent. The
// error text goes back to the model as the tool result.
func (r *runner) parseFork(a *project.Agent, args string) (*forkCall, string) {
	usage := `send {"branches": [{"name": "eu", "instructions": "...", "agent": "..."}], "context": "compact"}`
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &top); err != nil {
		return nil, fmt.Sprintf("error: the fork arguments are not a JSON object (%v); %s", err, usage)
	}
	var stray []string
	for _, k := range []string{"name", "instructions", "agent"} {
		if _, ok := top[k]; ok {
			stray = append(stray, k)
		}
	}
	if len(stray) > 0 {
		return nil, fmt.Sprintf("error: %s belong inside each entry of `branches`, not at the top level of the fork call; %s", strings.Join(stray, ", "), usage)
	}
	fc := &forkCall{context: ContextInherit}
	if raw, ok := top["context"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if err := json.Unmarshal(raw, &fc.context); err != nil || (fc.context != ContextInherit && fc.context != ContextCompact && fc.context != ContextNone) {
			return nil, fmt.Sprintf("error: context must be one of inherit, compact, none (got %s)", raw)
		}
	}
	raw, ok := top["branches"]
	if !ok {
		return nil, "error: the fork call has no `branches`; " + usage
	}
	var bs []struct {
		Name         string  `json:"name"`
		Instructions string  `json:"instructions"`
		Agent        *string `json:"agent"`
	}
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, fmt.Sprintf("error: `branches` must be an array of {name, instructions, agent} objects (%v)", err)
	}
	if len(bs) == 0 {
		return nil, "error: `branches` is empty; give at least one branch, or do the work here"
	}
	if max := a.Fork.MaxBranches; max > 0 && len(bs) > max {
		return nil, fmt.Sprintf("error: %d branches is too many: %s may open at most %d per fork call; merge some, or fork the rest after the join", len(bs), a.Name, max)
	}
	enum := forkAgents(r.p, a)
	seen := map[string]bool{}
	for i, b := range bs {
		switch {
		case b.Name == "":
			return nil, fmt.Sprintf("error: branch %d has no name; give each branch a short unique name", i+1)
		case branchNameProblem(b.Name) != "":
			return nil, fmt.Sprintf("error: branch name %q %s; give each branch a short name of letters, digits, -, _ and . that starts with a letter or digit (e.g. eu)", b.Name, branchNameProblem(b.Name))
		case seen[b.Name]:
			return nil, fmt.Sprintf("error: two branches are named %q; names must be unique within one fork", b.Name)
		case strings.TrimSpace(b.Instructions) == "":
			return nil, fmt.Sprintf("error: branch %q has no instructions; write its whole assignment", b.Name)
		}
		seen[b.Name] = true
		agent := a.Name
		if b.Agent != nil && *b.Agent != "" {
			agent = *b.Agent
			if !a.Fork.Allows(agent) || r.p.Agent(agent) == nil {
				return nil, fmt.Sprintf("error: branch %q asks for agent %q, which is not one %s may fork to; choose one of: %s", b.Name, agent, a.Name, strings.Join(enum, ", "))
			}
		} else if !a.Fork.Allows(a.Name) {
			return nil, fmt.Sprintf("error: branch %q names no agent and %s may not run its own branches; set `agent` to one of: %s", b.Name, a.Name, strings.Join(enum, ", "))
		}
		fc.branches = append(fc.branches, record.ForkBranch{Name: b.Name, Agent: agent, Instructions: b.Instructions})
	}
	return fc, ""
}

// branchResult is one branch's end, for the join.
type branchResult struct {
	out   outcome
	ended time.Time
	dur   time.Duration
}

// fork runs a fork call: the fork node, the branches (one after another in
// virtual time, concurrently in a bounded pool otherwise), and the join,
// whose text is the call's tool result.
func (r *runner) fork(ctx context.Context, c *conversation, tc openai.ToolCall, assistant int) string {
	fc, problem := r.parseFork(c.agent, tc.Function.Arguments)
	if problem != "" {
		return r.invalid(c, tc, problem)
	}
	forkNode := &record.Node{Kind: record.KindFork, Fork: &record.Fork{Context: fc.context, Branches: fc.branches}}
	r.add(c, forkNode)
	var names []string
	for _, b := range fc.branches {
		names = append(names, b.Name)
	}
	r.report(c, fmt.Sprintf("forks %s (%s context)", strings.Join(names, ", "), fc.context))

	forkTime := c.clock.Now()
	branches := make([]*conversation, len(fc.branches))
	for i, b := range fc.branches {
		path := record.BranchPath(c.path, forkNode.Seq, b.Name)
		bc := &conversation{
			path:    path,
			forkSeq: forkNode.Seq,
			depth:   c.depth + 1,
			session: fmt.Sprintf("%s/n%d/%s", r.runID, forkNode.Seq, path),
			clock:   c.clock.Fork(),
		}
		r.setAgent(bc, r.p.Agent(b.Agent))
		bc.msgs = branchMessages(c.msgs[:assistant], c.msgs[assistant], tc, fc, i)
		branches[i] = bc
	}

	results := make([]branchResult, len(branches))
	runBranch := func(i int) {
		bc := branches[i]
		var out outcome
		if ctx.Err() != nil {
			out = outcome{status: record.StatusCancelled, err: "cancelled before the branch started"}
			r.add(bc, &record.Node{Kind: record.KindFinal, Status: out.status, Error: out.err})
		} else {
			out = r.converse(ctx, bc)
		}
		end := bc.clock.Now()
		results[i] = branchResult{out: out, ended: end, dur: end.Sub(forkTime)}
	}
	if r.virtual {
		for i := range branches {
			runBranch(i)
		}
	} else {
		var g errgroup.Group
		g.SetLimit(r.maxParallel)
		for i := range branches {
			g.Go(func() error { runBranch(i); return nil }) // a failed branch is a row, never an error
		}
		g.Wait()
	}

	joinTime := forkTime
	if r.virtual {
		for _, br := range results {
			if br.ended.After(joinTime) {
				joinTime = br.ended
			}
		}
		c.clock = &virtualClock{t: joinTime}
	} else {
		joinTime = c.clock.Now()
	}
	join := &record.Join{ForkSeq: forkNode.Seq}
	var text strings.Builder
	for i, b := range fc.branches {
		br := results[i]
		answer := br.out.answer
		if br.out.status != record.StatusOK {
			answer = br.out.err
		}
		join.Branches = append(join.Branches, record.JoinBranch{Name: b.Name, Agent: b.Agent, Status: br.out.status, Duration: br.dur, Answer: answer})
		if i > 0 {
			text.WriteString("\n\n")
		}
		fmt.Fprintf(&text, "### %s (%s)\n%s", b.Name, br.out.status, strings.TrimSpace(answer))
	}
	r.add(c, &record.Node{Kind: record.KindJoin, Started: joinTime, Ended: joinTime, Join: join})
	var st []string
	for _, jb := range join.Branches {
		st = append(st, jb.Name+"="+string(jb.Status))
	}
	r.report(c, "joins "+strings.Join(st, ", "))
	return text.String()
}

// branchMessages builds the messages branch i starts from (after its system
// prompt), per the fork's context:
//
//   - inherit: the parent's messages before the assistant message that
//     called fork, that message (with only this fork call), then the
//     assignment as the call's tool result;
//   - compact: the same minus every other tool call and its result (fork
//     calls and their joins stay); an assistant message left empty is dropped;
//   - none: the instructions as one user message.
func branchMessages(prefix []openai.ChatCompletionMessage, caller openai.ChatCompletionMessage, tc openai.ToolCall, fc *forkCall, i int) []openai.ChatCompletionMessage {
	b := fc.branches[i]
	if fc.context == ContextNone {
		return []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: b.Instructions}}
	}
	var out []openai.ChatCompletionMessage
	if fc.context == ContextInherit {
		out = append(out, prefix...)
	} else {
		kept := map[string]bool{}
		for _, m := range prefix {
			switch m.Role {
			case openai.ChatMessageRoleAssistant:
				var calls []openai.ToolCall
				for _, t := range m.ToolCalls {
					if t.Function.Name == ForkTool {
						calls = append(calls, t)
						kept[t.ID] = true
					}
				}
				if m.Content == "" && len(calls) == 0 {
					continue
				}
				m.ToolCalls = calls
				out = append(out, m)
			case openai.ChatMessageRoleTool:
				if kept[m.ToolCallID] {
					out = append(out, m)
				}
			default:
				out = append(out, m)
			}
		}
	}
	caller.ToolCalls = []openai.ToolCall{tc}
	out = append(out, caller)
	out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: tc.ID, Content: assignment(fc, i)})
	return out
}

// assignment is what an inheriting branch reads as the result of the fork
// call it was forked from.
func assignment(fc *forkCall, i int) string {
	b := fc.branches[i]
	var sib []string
	for j, s := range fc.branches {
		if j != i {
			sib = append(sib, fmt.Sprintf("%q", s.Name))
		}
	}
	var w strings.Builder
	fmt.Fprintf(&w, "You are branch %q of the fork above", b.Name)
	switch len(sib) {
	case 0:
		w.WriteString(", the only one. ")
	case 1:
		fmt.Fprintf(&w, "; %s runs beside you on its own assignment. ", sib[0])
	default:
		fmt.Fprintf(&w, "; %s run beside you, each on its own assignment. ", strings.Join(sib, ", "))
	}
	w.WriteString("This is not a result: nothing of it has been done yet, and it is yours to do.\n\nYour assignment: ")
	w.WriteString(strings.TrimSpace(b.Instructions))
	w.WriteString("\n\nWhen you are done, end with a final message holding your result; only that message goes back to the agent that forked.")
	return w.String()
}
