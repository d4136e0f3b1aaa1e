package ask

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/snapshot"
)

// Mode is what an ask does with a recorded call.
type Mode string

// The modes.
const (
	// ModeQuestion sends the recorded request, the recorded response and a
	// question (Question).
	ModeQuestion Mode = "question"
	// ModeReplay sends the recorded request unchanged, Samples times.
	ModeReplay Mode = "replay"
	// ModePrompt replays the request with the agent's role-file text replaced.
	ModePrompt Mode = "prompt"
)

// Limits of a replay.
const (
	DefaultSamples = 5   // replays when Options.Samples is 0
	MaxSamples     = 100 // a replay costs money: more is refused
)

// InputError is a problem the user fixes by changing the command: a
// node that is not a model call, options that do not go together, a role
// file that is not in the prompt, a bad base URL, no key.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputf(format string, args ...any) error {
	return &InputError{Err: fmt.Errorf(format, args...)}
}

// UnknownNodeError is returned for a node the run does not have.
type UnknownNodeError struct{ Seq int64 }

func (e *UnknownNodeError) Error() string { return fmt.Sprintf("the run has no node n%d", e.Seq) }

// Recording gives the recorded bodies of a run's llm nodes; *store.DB
// satisfies it.
type Recording interface {
	Request(ctx context.Context, runID string, seq int64) ([]byte, error)
	Response(ctx context.Context, runID string, seq int64) ([]byte, error)
}

// Options are what the user asked of one ask.
type Options struct {
	// Question is asked in question mode; "" asks DefaultQuestion.
	Question string
	// Replay sends the recorded request unchanged.
	Replay bool
	// PromptFile is a file whose text replaces the agent's role file (prompt mode).
	PromptFile string
	// Samples is how many times a replay is sent (0 = DefaultSamples).
	Samples int
	// Model replaces the request's model when set.
	Model string
	// BaseURL is the provider's base URL given explicitly (a flag); else
	// EnvBaseURL (OPENAI_BASE_URL); else the run's recorded one when it is
	// HTTP; else DefaultBaseURL.
	BaseURL, EnvBaseURL string
	// DryRun prints the request instead of sending it.
	DryRun bool
	// Timeout bounds the wait for the provider to start answering (each
	// attempt); 0 = DefaultHeaderTimeout.
	Timeout time.Duration
	// Hint spells the command line that asks this run again with args
	// (["n5", "--replay"]), run and database included, for the advice in
	// errors; nil = "inspect ask ARGS".
	Hint func(args ...string) string
}

// hint is o.Hint, or a plain "inspect ask ARGS".
func (o *Options) hint(args ...string) string {
	if o.Hint != nil {
		return o.Hint(args...)
	}
	return "inspect ask " + strings.Join(args, " ")
}

// Mode is the mode the options pick.
func (o *Options) Mode() Mode {
	switch {
	case o.PromptFile != "":
		return ModePrompt
	case o.Replay:
		return ModeReplay
	default:
		return ModeQuestion
	}
}

// Validate reports options that do not go together, as an *InputError.
func (o *Options) Validate() error {
	if o.Question != "" && (o.Replay || o.PromptFile != "") {
		return inputf("a question goes with the default mode only: drop it, or drop --replay/--prompt")
	}
	if o.Samples != 0 && !o.Replay && o.PromptFile == "" {
		return inputf("--samples goes with --replay or --prompt")
	}
	if o.Samples < 0 || o.Samples > MaxSamples {
		return inputf("--samples must be between 1 and %d, got %d", MaxSamples, o.Samples)
	}
	if o.Timeout < 0 {
		return inputf("--timeout must be positive, got %s", o.Timeout)
	}
	return nil
}

// Plan is one ask, built and checked, ready to Send: the node, the body
// to send, and what to say about it.
type Plan struct {
	// Mode is what the plan does.
	Mode Mode
	// RunID and Node are the recorded call.
	RunID string
	Node  *graph.Node
	// Body is the request body to send.
	Body []byte
	// Model is Body's model.
	Model string
	// Question is the question asked (question mode); DefaultAsked is set
	// when it is DefaultQuestion.
	Question     string
	DefaultAsked bool
	// Change, RolePath and PromptFile say what prompt mode replaced.
	Change     *PromptChange
	RolePath   string
	PromptFile string
	// Samples is how many times replay and prompt modes send Body.
	Samples int
	// Recorded is the recorded call's choice (see ChoiceOf).
	Recorded string
	// Notes are cheap causes the request itself shows, worth ruling out
	// before any model is asked.
	Notes []string
	// BaseURL is the provider's API root.
	BaseURL string
	// DryRun prints Body instead of sending it.
	DryRun  bool
	Timeout time.Duration
}

// NewPlan builds the ask of llm node seq of run g: it checks the options
// and the node, rebuilds the recorded request from rec, and makes the body
// the mode sends. Errors the user can fix are *InputError (or
// *UnknownNodeError); an error of rec is returned wrapped.
func NewPlan(ctx context.Context, rec Recording, g *graph.Run, seq int64, opts Options) (*Plan, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	n := g.Node(seq)
	if n == nil {
		return nil, &UnknownNodeError{Seq: seq}
	}
	if n.Kind != record.KindLLM {
		return nil, notLLMNode(g, n, &opts)
	}
	body, err := rec.Request(ctx, g.ID, n.Seq)
	if err != nil {
		return nil, fmt.Errorf("n%d: load the recorded request: %w", n.Seq, err)
	}
	req, err := ParseRequest(body)
	if err != nil {
		return nil, fmt.Errorf("n%d: %w", n.Seq, err)
	}
	p := &Plan{Mode: opts.Mode(), RunID: g.ID, Node: n, Recorded: NodeChoice(n), Samples: opts.Samples,
		Notes: cheapCauses(g, n, req), DryRun: opts.DryRun, Timeout: opts.Timeout}
	if p.Samples == 0 {
		p.Samples = DefaultSamples
	}
	switch p.Mode {
	case ModeQuestion:
		if err := p.question(ctx, rec, req, &opts); err != nil {
			return nil, err
		}
	case ModeReplay:
		p.Body = body
	case ModePrompt:
		if err := p.prompt(g, req, opts.PromptFile); err != nil {
			return nil, err
		}
	}
	if opts.Model != "" {
		if p.Body, err = SetModel(p.Body, opts.Model); err != nil {
			return nil, err
		}
	}
	p.Model = modelOf(p.Body)
	p.BaseURL = baseURL(opts, g.Run)
	if u, err := url.Parse(p.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, inputf("provider base URL %q (--base-url or OPENAI_BASE_URL) is not an http(s) URL; give the server's API root, e.g. http://localhost:11434/v1", Redact(p.BaseURL))
	}
	return p, nil
}

// question builds the question body from the recorded response.
func (p *Plan) question(ctx context.Context, rec Recording, req *Request, opts *Options) error {
	question := opts.Question
	n := p.Node
	resp, err := rec.Response(ctx, p.RunID, n.Seq)
	if err != nil {
		return fmt.Errorf("n%d: load the recorded response: %w", n.Seq, err)
	}
	if len(resp) == 0 {
		why := "it has no recorded response"
		if n.Status != record.StatusOK {
			why = fmt.Sprintf("it ended %s (%s) without a response", n.Status, n.Error)
		}
		return inputf("n%d cannot be questioned: %s; try `%s` to send its request again", n.Seq, why, opts.hint(fmt.Sprintf("n%d", n.Seq), "--replay"))
	}
	recorded, err := chat.ReadResponse(resp, chat.OpenAIChat)
	if err != nil {
		return fmt.Errorf("n%d: recorded response: %w", n.Seq, err)
	}
	p.Question = question
	if p.Question == "" {
		p.Question, p.DefaultAsked = DefaultQuestion(req, recorded), true
	}
	if p.Body, err = Question(req, recorded, p.Question); err != nil {
		return fmt.Errorf("n%d: %w", n.Seq, err)
	}
	return nil
}

// prompt replaces the node agent's role-file text, as the run's project
// snapshot holds it, with the text of file.
func (p *Plan) prompt(g *graph.Run, req *Request, file string) error {
	n := p.Node
	newText, err := os.ReadFile(file)
	if err != nil {
		return inputf("--prompt: %v", err)
	}
	snap := snapshot.Read(g.Project)
	switch {
	case errors.Is(snap.Err, snapshot.ErrNoAgentsFile):
		return inputf("run %s has no %s in its project snapshot, so the role file of %s is unknown", g.ID, snapshot.AgentsFile, n.Agent)
	case snap.Err != nil:
		return inputf("run %s: %v", g.ID, snap.Err)
	}
	a := snap.Agent(n.Agent)
	if a == nil {
		return inputf("run %s: %s declares no agent %q (it has %s)", g.ID, snapshot.AgentsFile, n.Agent, strings.Join(snap.AgentNames(), ", "))
	}
	role := g.Project.File(a.Prompt)
	if role == nil {
		return inputf("run %s's project snapshot has no %s (the role file of %s)", g.ID, a.Prompt, n.Agent)
	}
	body, change, err := ReplacePrompt(req, role.Content, string(newText))
	if err != nil {
		return inputf("n%d: %v: %s as stored with run %s is not in its system prompt", n.Seq, err, a.Prompt, g.ID)
	}
	p.Body, p.RolePath, p.Change, p.PromptFile = body, a.Prompt, change, file
	return nil
}

// baseURL is opts.BaseURL, else opts.EnvBaseURL, else the run's recorded
// provider when it is an HTTP one, else the OpenAI API.
func baseURL(opts Options, r *record.Run) string {
	if opts.BaseURL != "" {
		return strings.TrimRight(opts.BaseURL, "/")
	}
	if opts.EnvBaseURL != "" {
		return strings.TrimRight(opts.EnvBaseURL, "/")
	}
	// A scripted run records "scripted:<name>": not a place to send to.
	if strings.HasPrefix(r.BaseURL, "http://") || strings.HasPrefix(r.BaseURL, "https://") {
		return strings.TrimRight(r.BaseURL, "/")
	}
	return DefaultBaseURL
}

// cheapCauses lists what the request itself explains before any model is
// asked (seed §7: rule out the cheap causes first): fork missing from the
// call's tools, or the fork instructions missing from its system prompt.
// A reconstructed request (an imported run) says what it lacks first; its
// tools are not a cause when the source did not record them.
func cheapCauses(g *graph.Run, n *graph.Node, req *Request) []string {
	if n.LLM != nil && !n.LLM.Exact() {
		notes := []string{fmt.Sprintf("%s's request is %s", n.ID(), Reconstruction(g.Run))}
		if len(req.Read.Tools) == 0 {
			notes = append(notes, "the tools this call was offered were not recorded, so whether it could delegate is unknown")
		}
		return notes
	}
	if req.Read.Tool("fork") == nil {
		return []string{"fork is not among this call's tools (no fork: for the agent in agents.yaml, or the fork depth cap), so it could not fork"}
	}
	if fi := g.Project.File(snapshot.ForkInstructionsFile); fi != nil && strings.TrimSpace(fi.Content) != "" &&
		!strings.Contains(req.System(), strings.TrimSpace(fi.Content)) {
		return []string{snapshot.ForkInstructionsFile + " is not in this call's system prompt although fork is among its tools"}
	}
	return nil
}

// Describe says in a few words what the plan sends.
func (p *Plan) Describe() string {
	who := fmt.Sprintf("n%d (%s, %s)", p.Node.Seq, p.Node.Agent, p.Recorded)
	switch p.Mode {
	case ModeReplay:
		return fmt.Sprintf("replaying %s unchanged %d×", who, p.Samples)
	case ModePrompt:
		return fmt.Sprintf("replaying %s with %s replaced %d×", who, p.RolePath, p.Samples)
	default:
		return "asking " + who
	}
}

// notLLMNode is the error for asking a node that is not a model call: it
// says what the node is and names the llm nodes near it.
func notLLMNode(g *graph.Run, n *graph.Node, opts *Options) error {
	var b strings.Builder
	fmt.Fprintf(&b, "n%d is a %s node (%s), not a model call; ask works on llm nodes", n.Seq, n.Kind, nodeSummary(n))
	// The model call that made this node: the last llm node before it in
	// its conversation (a user turn looks forward to the first one after).
	var made *graph.Node
	if n.Conv != nil {
		for _, c := range n.Conv.Nodes {
			if c.Kind != record.KindLLM {
				continue
			}
			if n.Kind == record.KindUser && c.Seq > n.Seq {
				made = c
				break
			}
			if n.Kind != record.KindUser && c.Seq < n.Seq {
				made = c
			}
		}
	}
	if made != nil {
		verb := "made it"
		switch n.Kind {
		case record.KindUser:
			verb = "answered it first"
		case record.KindJoin:
			verb = "called the fork it joins"
		case record.KindFinal:
			verb = "wrote it"
		}
		fmt.Fprintf(&b, "; the model call that %s is n%d: try `%s`", verb, made.Seq, opts.hint(fmt.Sprintf("n%d", made.Seq)))
	}
	var llms []*graph.Node
	for _, c := range g.Nodes {
		if c.Kind == record.KindLLM {
			llms = append(llms, c)
		}
	}
	if len(llms) == 0 {
		fmt.Fprintf(&b, "; run %s has no llm nodes", g.ID)
		return &InputError{Err: errors.New(b.String())}
	}
	dist := func(c *graph.Node) int64 {
		if d := c.Seq - n.Seq; d > 0 {
			return d
		} else {
			return -d
		}
	}
	sort.SliceStable(llms, func(i, j int) bool { return dist(llms[i]) < dist(llms[j]) })
	llms = llms[:min(len(llms), 3)]
	sort.Slice(llms, func(i, j int) bool { return llms[i].Seq < llms[j].Seq })
	var near []string
	for _, c := range llms {
		near = append(near, fmt.Sprintf("n%d (%s, %s)", c.Seq, c.Agent, NodeChoice(c)))
	}
	fmt.Fprintf(&b, "; nearest llm nodes: %s", strings.Join(near, ", "))
	return &InputError{Err: errors.New(b.String())}
}

// nodeSummary names what a node holds, for error messages.
func nodeSummary(n *graph.Node) string {
	switch n.Kind {
	case record.KindTool:
		return n.Tool.Name
	case record.KindHandoff:
		return n.Handoff.From + " to " + n.Handoff.To
	case record.KindFork:
		var names []string
		for _, b := range n.Fork.Branches {
			names = append(names, b.Name)
		}
		return fmt.Sprintf("%d branches: %s", len(names), strings.Join(names, ", "))
	case record.KindJoin:
		return fmt.Sprintf("joins the fork n%d", n.Join.ForkSeq)
	case record.KindUser:
		return "a user turn"
	case record.KindFinal:
		return "a conversation's final message"
	case record.KindLLM:
		return NodeChoice(n)
	default:
		panic(fmt.Sprintf("internal error: unhandled node kind %v", n.Kind))
	}
}

// Reconstruction says what a reconstructed request of run r is and lacks:
// "reconstructed from the claude-code session: the messages visible to
// the model; it lacks the system prompt, the tool definitions", and how
// many values taken for secrets it holds as [redacted].
func Reconstruction(r *record.Run) string {
	s := "reconstructed"
	if r != nil && !r.Source.IsInspect() {
		s += " from the " + r.Source.Format + " source"
	}
	s += ": the messages visible to the model, not the bytes sent"
	if r != nil {
		if lack := r.Options.RequestsLack; len(lack) > 0 {
			s += "; it lacks " + strings.Join(lack, ", ")
		}
		switch n := r.Options.Redacted; {
		case n == 1:
			s += "; 1 value taken for a secret reads [redacted]"
		case n > 1:
			s += fmt.Sprintf("; %d values taken for secrets read [redacted]", n)
		}
	}
	return s
}
