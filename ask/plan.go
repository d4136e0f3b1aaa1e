package ask

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/internal/regfile"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/snapshot"
	"github.com/inspect-dev/inspect/stack"
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
	// Provider names the API to send to (--provider: see ProviderNamed);
	// "" = the run's own (see NewPlan).
	Provider string
	// BaseURL is the provider's base URL given explicitly (a flag); else
	// the provider's environment variable (Provider.BaseURLEnv, read
	// through Getenv; EnvBaseURL is OPENAI_BASE_URL's value when Getenv
	// is nil); else the run's recorded one when it is HTTP and the
	// provider is the run's own; else the provider's DefaultBaseURL.
	BaseURL, EnvBaseURL string
	// Getenv reads the environment (os.Getenv, a test's map); nil reads
	// nothing but EnvBaseURL.
	Getenv func(string) string
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

// hint is o.Hint, or a plain "inspect ask ARGS", with the flags the user
// gave that say what is sent and whether (--provider, --model, --dry-run)
// kept: a hint never turns a dry run into a paid call.
func (o *Options) hint(args ...string) string {
	args = append([]string(nil), args...)
	if o.Provider != "" {
		args = append(args, "--provider", o.Provider)
	}
	if o.Model != "" {
		args = append(args, "--model", o.Model)
	}
	if o.DryRun {
		args = append(args, "--dry-run")
	}
	if o.Hint != nil {
		return o.Hint(args...)
	}
	return "inspect ask " + strings.Join(args, " ")
}

// env reads the environment variable name.
func (o *Options) env(name string) string {
	if o.Getenv != nil {
		return o.Getenv(name)
	}
	if name == "OPENAI_BASE_URL" {
		return o.EnvBaseURL
	}
	return ""
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
	if o.Provider != "" {
		if _, err := ProviderNamed(o.Provider); err != nil {
			return err
		}
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
	// before any model is asked; for a reconstructed request, first what
	// it is and lacks.
	Notes []string
	// Exact says the recorded request is the body the run sent; Fidelity
	// says so in words when it is ("n4's request is exact: …"; a
	// reconstructed one is the first of Notes).
	Exact    bool
	Fidelity string
	// Fixes say what was changed in a request written anew so that the
	// provider accepts it (a user message put first, a result for a call
	// the recording did not answer, …), in the order made.
	Fixes []string
	// Provider is the API Body is sent to and in; ProviderWhy says why
	// it was chosen ("--provider", "Claude Code's API", …).
	Provider    *Provider
	ProviderWhy string
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
	if len(body) == 0 {
		return nil, inputf("n%d has no recorded request: there is nothing to send", n.Seq)
	}
	c := &call{body: body, exact: n.LLM == nil || n.LLM.Exact()}
	c.format, err = chat.Detect(body)
	if err != nil {
		c.format = chat.OpenAIChat // what ParseRequest's error will say
	}
	if c.read, err = chat.ReadRequest(body, c.format); err != nil {
		return nil, fmt.Errorf("n%d: recorded request: %w", n.Seq, err)
	}
	p := &Plan{Mode: opts.Mode(), RunID: g.ID, Node: n, Recorded: NodeChoice(n), Samples: opts.Samples,
		Notes: cheapCauses(g, n, c.read), Exact: c.exact, DryRun: opts.DryRun, Timeout: opts.Timeout}
	if p.Samples == 0 {
		p.Samples = DefaultSamples
	}
	own, why := pickProvider(c.exact, c.format, g.Run.Source)
	p.Provider, p.ProviderWhy = own, why
	if opts.Provider != "" {
		if p.Provider, err = ProviderNamed(opts.Provider); err != nil {
			return nil, err
		}
		p.ProviderWhy = "--provider"
		if p.Provider == own {
			p.ProviderWhy += ", which is the run's own too (" + why + ")"
		}
	}
	// Kept byte for byte when the request is the one sent, or one its
	// source gave in its own API's format (not the Chat Completions an
	// importer rebuilds), and goes back to that API; else written anew in
	// the provider's format from what chat reads of it.
	c.native = (c.exact || c.format != chat.OpenAIChat) && c.format == p.Provider.Format
	if c.exact {
		p.Fidelity = fmt.Sprintf("n%d's request is exact: the %s body the run sent", n.Seq, c.format)
		if !c.native {
			p.Fidelity += fmt.Sprintf(", written anew for %s (its system text, tools and messages; its other fields are not sent)", p.Provider.Title)
		}
	}
	if err = p.build(ctx, rec, g, c, &opts); err != nil {
		return nil, err
	}
	if c.native && c.format == chat.Anthropic && unsignedToolTurn(p.Body) {
		// Recorded against a server that answered without thinking
		// blocks: the API refuses the tool-using turn without one.
		if p.Body, err = thinkingOff(p.Body); err != nil {
			return nil, err
		}
		p.Fixes = append(p.Fixes, fmt.Sprintf("n%d's request turns extended thinking on but its last tool-using assistant turn has no thinking block (the API refuses it): thinking is turned off, and with it context_management's thinking edits", n.Seq))
	}
	if c.native && !c.exact {
		// A body the source gave, kept as it is: sent only if it is a
		// conversation the API takes as it stands, else written anew.
		if fixes := bodyFixes(p.Body, c.format); len(fixes) > 0 {
			c.native = false
			p.Fixes, p.Change = nil, nil
			if err = p.build(ctx, rec, g, c, &opts); err != nil {
				return nil, err
			}
		}
	}
	model := opts.Model
	if model == "" && modelOf(p.Body) == "" {
		// The source recorded no model with this call: the node's, else
		// the run's, said so; none at all is refused, dry run or not (the
		// body printed is the one that would be sent).
		if model = runModel(g, n); model == "" {
			return nil, inputf("n%d's request names no model and run %s records none: pass --model with the model to ask, e.g. `%s`",
				n.Seq, g.ID, opts.hint(fmt.Sprintf("n%d", n.Seq), "--model", "MODEL"))
		}
		p.Notes = append(p.Notes, fmt.Sprintf("n%d's request names no model: the run's %s is sent (--model to choose another)", n.Seq, model))
	}
	if model != "" {
		if p.Body, err = SetModel(p.Body, model); err != nil {
			return nil, err
		}
	}
	p.Model = modelOf(p.Body)
	p.Notes = append(p.Notes, modelNotes(p.Provider, p.Model)...)
	p.BaseURL = baseURL(opts, g.Run, p.Provider, p.Provider == own)
	if u, err := url.Parse(p.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, inputf("provider base URL %q (--base-url or %s) is not an http(s) URL; give the server's API root, e.g. %s", Redact(p.BaseURL), p.Provider.BaseURLEnv, exampleBase(p.Provider))
	}
	return p, nil
}

// build makes the body of the plan's mode.
func (p *Plan) build(ctx context.Context, rec Recording, g *graph.Run, c *call, opts *Options) error {
	switch p.Mode {
	case ModeQuestion:
		return p.question(ctx, rec, c, opts)
	case ModeReplay:
		return p.replay(c)
	}
	return p.prompt(g, c, opts)
}

// bodyFixes are the changes valid would make to the conversation of body
// (format f): none for a body the API takes as it stands.
func bodyFixes(body []byte, f chat.Format) []string {
	r, err := chat.ReadRequest(body, f)
	if err != nil {
		return []string{err.Error()}
	}
	return fromRequest(r).valid()
}

// call is the recorded request of the node asked, read.
type call struct {
	body   []byte
	format chat.Format
	read   *chat.Request
	exact  bool
	// native: exact, and sent to the API it was recorded for, so kept byte
	// for byte.
	native bool
}

// rebuilt writes conversation cv anew in the plan's provider's format,
// made valid first (Fixes say how).
func (p *Plan) rebuilt(c *call, cv *conversation, e encoding) error {
	p.Fixes = append(p.Fixes, cv.valid()...)
	if e.MaxTokens == 0 {
		e.MaxTokens = maxTokens(c.body)
	}
	var err error
	p.Body, err = cv.encode(p.Provider.Format, e)
	return err
}

// maxTokens is a recorded body's max_tokens (or max_completion_tokens,
// max_output_tokens), 0 when it has none.
func maxTokens(body []byte) int {
	var b struct {
		MaxTokens           int `json:"max_tokens"`
		MaxCompletionTokens int `json:"max_completion_tokens"`
		MaxOutputTokens     int `json:"max_output_tokens"`
	}
	_ = json.Unmarshal(body, &b)
	return max(b.MaxTokens, b.MaxCompletionTokens, b.MaxOutputTokens)
}

// runModel is the model of llm node n as the run records it: the node's,
// else the run's only model, else the first of its models; "" when it
// records none.
func runModel(g *graph.Run, n *graph.Node) string {
	if n.LLM != nil && n.LLM.Model != "" {
		return n.LLM.Model
	}
	if len(g.Run.Models) > 0 {
		return g.Run.Models[0]
	}
	return ""
}

// modelNotes say what is odd about the model a body names for the
// provider it goes to.
func modelNotes(p *Provider, model string) []string {
	m := strings.ToLower(model)
	switch {
	case p == Anthropic && !strings.HasPrefix(m, "claude"):
		return []string{fmt.Sprintf("model %s is not an Anthropic model name: pass --model with one, or --provider for the API that serves it", model)}
	case p != Anthropic && strings.HasPrefix(m, "claude"):
		return []string{fmt.Sprintf("model %s is one of Anthropic's: --provider anthropic sends the request to Anthropic's API", model)}
	}
	return nil
}

func exampleBase(p *Provider) string {
	if p == Anthropic {
		return "http://localhost:8080"
	}
	return "http://localhost:11434/v1"
}

// replay is the recorded body unchanged, or written anew for another API.
func (p *Plan) replay(c *call) error {
	if c.native {
		p.Body = c.body
		return nil
	}
	return p.rebuilt(c, fromRequest(c.read), encoding{})
}

// question builds the question body from the recorded response.
func (p *Plan) question(ctx context.Context, rec Recording, c *call, opts *Options) error {
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
	recorded, err := chat.ReadResponse(resp, c.format)
	if err != nil {
		if r, derr := chat.ReadResponse(resp, ""); derr == nil {
			recorded, err = r, nil
		}
	}
	if err != nil {
		return fmt.Errorf("n%d: recorded response: %w", n.Seq, err)
	}
	p.Question = question
	if p.Question == "" {
		p.Question, p.DefaultAsked = defaultQuestion(c.read.ToolNames(), recorded), true
	}
	if strings.TrimSpace(p.Question) == "" {
		return fmt.Errorf("n%d: empty question", n.Seq)
	}
	if c.native {
		switch c.format {
		case chat.OpenAIChat:
			req, err := ParseRequest(c.body)
			if err != nil {
				return fmt.Errorf("n%d: %w", n.Seq, err)
			}
			if p.Body, err = Question(req, recorded, p.Question); err != nil {
				return fmt.Errorf("n%d: %w", n.Seq, err)
			}
			return nil
		case chat.Anthropic, chat.OpenAIResponses:
			nb, err := parseNative(c.body, c.format, c.read)
			if err == nil {
				var notes []string
				if c.format == chat.Anthropic {
					p.Body, notes, err = questionAnthropic(nb, resp, recorded, p.Question)
				} else {
					p.Body, err = questionResponses(nb, recorded, p.Question)
				}
				p.Fixes = append(p.Fixes, notes...)
			}
			if err == nil {
				return nil
			}
			if !errors.Is(err, errNotSpliceable) {
				return fmt.Errorf("n%d: %w", n.Seq, err)
			}
			p.Fidelity += "; written anew, as its messages cannot be extended in place"
		}
	}
	cv := fromRequest(c.read)
	cv.withTurn(&recorded.Message, p.Question)
	return p.rebuilt(c, cv, encoding{ToolChoiceNone: true, Stream: true})
}

// prompt replaces the node agent's instructions — the role file our
// runtime's project snapshot holds, or the file an imported run names for
// the agent (.claude/agents/<type>.md, CLAUDE.md, AGENTS.md) — with the
// text of the --prompt file, inside the recorded request.
func (p *Plan) prompt(g *graph.Run, c *call, opts *Options) error {
	n := p.Node
	newText, err := regfile.ReadFile(opts.PromptFile) // a FIFO is refused, not waited on
	if err != nil {
		return inputf("--prompt: %v", err)
	}
	role, err := roleText(g, n, c)
	if err != nil {
		return err
	}
	var change *PromptChange
	var body []byte
	for _, old := range role.candidates() {
		body, change, err = p.replacePrompt(c, old, role.adapt(old, string(newText)))
		if err == nil {
			break
		}
	}
	if change == nil && c.native && c.format == chat.OpenAIChat && g.Run.Source.IsInspect() {
		return inputf("n%d: %v: %s as stored with run %s is not in its system prompt", n.Seq, err, role.path, g.ID)
	}
	if change == nil {
		return p.promptMissing(g, c, role, opts)
	}
	p.Body, p.RolePath, p.Change, p.PromptFile = body, role.path, change, opts.PromptFile
	return nil
}

// replacePrompt replaces old by new in the recorded request: in its own
// bytes when it is kept (c.native), else in the conversation written anew.
func (p *Plan) replacePrompt(c *call, old, new string) ([]byte, *PromptChange, error) {
	if c.native {
		if c.format == chat.OpenAIChat {
			req, err := ParseRequest(c.body)
			if err != nil {
				return nil, nil, err
			}
			return ReplacePrompt(req, old, new)
		}
		return replaceAt(c.body, promptSites(c.body, c.format), old, new)
	}
	cv := fromRequest(c.read)
	change, replaced, ok := replaceText(cv.System, old, new)
	if ok {
		cv.System, change.Where, change.Role = replaced, "the system prompt", "system"
	} else {
		for i := range cv.Messages {
			m := &cv.Messages[i]
			if m.Role != "user" {
				continue
			}
			if change, replaced, ok = replaceText(m.Text, old, new); ok {
				m.Text, m.Parts, change.Where, change.Role = replaced, nil, fmt.Sprintf("user message %d", i+1), "user"
				break
			}
		}
	}
	if !ok {
		return nil, nil, errors.New("not in the request")
	}
	change.Rebuilt = true
	saved := p.Fixes
	if err := p.rebuilt(c, cv, encoding{}); err != nil {
		return nil, nil, err
	}
	body := p.Body
	p.Fixes, p.Body = append(saved, p.Fixes[len(saved):]...), nil
	return body, change, nil
}

// role is an agent's instructions as a run keeps them.
type role struct {
	// path is the snapshot file ("agents/analyst.md",
	// ".claude/agents/Explore.md"), or "" for instructions in code (the
	// whole system prompt is theirs).
	path string
	text string
}

// candidates are the forms the text may take inside a prompt: as it is,
// and, for a file with YAML front matter (a Claude Code sub-agent file),
// its body alone (the front matter is configuration, not prompt).
func (r *role) candidates() []string {
	out := []string{r.text}
	if body, ok := afterFrontMatter(r.text); ok && strings.TrimSpace(body) != "" {
		out = append(out, body)
	}
	return out
}

// adapt is the new text for the form old of the role text: without its
// front matter when old is the body alone.
func (r *role) adapt(old, new string) string {
	if old != r.text {
		if body, ok := afterFrontMatter(new); ok {
			return body
		}
	}
	return new
}

// afterFrontMatter is s after a leading "---" YAML block.
func afterFrontMatter(s string) (string, bool) {
	t := strings.TrimLeft(s, "\ufeff \t\r\n")
	if !strings.HasPrefix(t, "---") {
		return "", false
	}
	rest := t[3:]
	i := strings.Index(rest, "\n---")
	if i < 0 {
		return "", false
	}
	body := rest[i+4:]
	if j := strings.IndexByte(body, '\n'); j >= 0 {
		body = body[j+1:]
	} else {
		body = ""
	}
	return body, true
}

// roleText finds the instructions of node n's agent as the run keeps
// them: our runtime's role file (agents.yaml's prompt:), an imported
// run's instruction file for the agent (record.Options.Instructions), or,
// for a stack whose instructions live in code, the request's whole system
// prompt.
func roleText(g *graph.Run, n *graph.Node, c *call) (*role, error) {
	if g.Run.Source.IsInspect() {
		snap := snapshot.Read(g.Project)
		switch {
		case errors.Is(snap.Err, snapshot.ErrNoAgentsFile):
			return nil, inputf("run %s has no %s in its project snapshot, so the role file of %s is unknown", g.ID, snapshot.AgentsFile, n.Agent)
		case snap.Err != nil:
			return nil, inputf("run %s: %v", g.ID, snap.Err)
		}
		a := snap.Agent(n.Agent)
		if a == nil {
			return nil, inputf("run %s: %s declares no agent %q (it has %s)", g.ID, snapshot.AgentsFile, n.Agent, strings.Join(snap.AgentNames(), ", "))
		}
		f := g.Project.File(a.Prompt)
		if f == nil {
			return nil, inputf("run %s's project snapshot has no %s (the role file of %s)", g.ID, a.Prompt, n.Agent)
		}
		return &role{path: a.Prompt, text: f.Content}, nil
	}
	prof := stack.For(g.Run.Source)
	if path := g.Run.Options.Instructions[n.Agent]; path != "" {
		f := g.Project.File(path)
		if f == nil {
			return nil, inputf("run %s names %s as the instructions of %s, but its snapshot does not hold that file (it was not in the project folder when the session was imported: import it again with --project DIR)", g.ID, path, n.Agent)
		}
		return &role{path: path, text: f.Content}, nil
	}
	if prof.InstructionsInCode && strings.TrimSpace(c.read.System) != "" {
		return &role{text: c.read.System}, nil
	}
	where := strings.Join(prof.Instructions, " or ")
	return nil, inputf("run %s (%s) keeps no instructions of agent %s with it (%s keeps them in %s), so --prompt has nothing to replace; import the session from its project folder (or with --project DIR) so its instruction files are kept", g.ID, prof.Name, n.Agent, prof.Name, where)
}

// promptMissing is the refusal for role text the request does not hold:
// what is missing, and what works instead.
func (p *Plan) promptMissing(g *graph.Run, c *call, r *role, opts *Options) error {
	n := p.Node
	what := r.path + " as stored with run " + g.ID
	if r.path == "" {
		what = "the agent's instructions"
	}
	why := "it is not in the request's system prompt"
	if !c.native || c.format != chat.OpenAIChat {
		why = "it is not in the request's system prompt or messages"
	}
	if !c.exact {
		why += "; the request is " + Reconstruction(g.Run)
	}
	return inputf("n%d: --prompt replaces %s inside the recorded request, but %s; ask it a question instead: `%s`", n.Seq, what, why, opts.hint(fmt.Sprintf("n%d", n.Seq)))
}

// baseURL is opts.BaseURL, else the provider's environment variable, else
// the run's recorded provider when it is an HTTP one and the provider is
// the run's own, else the provider's public API.
func baseURL(opts Options, r *record.Run, p *Provider, own bool) string {
	if opts.BaseURL != "" {
		return strings.TrimRight(opts.BaseURL, "/")
	}
	if env := opts.env(p.BaseURLEnv); env != "" {
		return strings.TrimRight(env, "/")
	}
	// A scripted run records "scripted:<name>": not a place to send to.
	if own && (strings.HasPrefix(r.BaseURL, "http://") || strings.HasPrefix(r.BaseURL, "https://")) {
		return strings.TrimRight(r.BaseURL, "/")
	}
	return p.DefaultBaseURL
}

// cheapCauses lists what the request itself explains before any model is
// asked (seed §7: rule out the cheap causes first): fork missing from the
// call's tools, or the fork instructions missing from its system prompt.
// A reconstructed request (an imported run) says what it lacks first; its
// tools are not a cause when the source did not record them.
func cheapCauses(g *graph.Run, n *graph.Node, req *chat.Request) []string {
	if n.LLM != nil && !n.LLM.Exact() {
		notes := []string{fmt.Sprintf("%s's request is %s", n.ID(), Reconstruction(g.Run))}
		if len(req.Tools) == 0 {
			notes = append(notes, "the tools this call was offered were not recorded, so whether it could delegate is unknown")
		}
		return notes
	}
	if !g.Run.Source.IsInspect() {
		return nil // fork and its instructions are our runtime's
	}
	if req.Tool("fork") == nil {
		return []string{"fork is not among this call's tools (no fork: for the agent in agents.yaml, or the fork depth cap), so it could not fork"}
	}
	if fi := g.Project.File(snapshot.ForkInstructionsFile); fi != nil && strings.TrimSpace(fi.Content) != "" &&
		!strings.Contains(req.System, strings.TrimSpace(fi.Content)) {
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
	if m := made(n); m != nil {
		verb := "made it"
		switch n.Kind {
		case record.KindUser:
			verb = "answered it first"
		case record.KindJoin:
			verb = "called the fork it joins"
		case record.KindFinal:
			verb = "wrote it"
		}
		fmt.Fprintf(&b, "; the model call that %s is n%d: try `%s`", verb, m.Seq, opts.hint(fmt.Sprintf("n%d", m.Seq)))
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

// made is the model call that made node n: the last llm node before it in
// its conversation (a user turn looks forward to the first one after);
// nil when there is none.
func made(n *graph.Node) *graph.Node {
	var made *graph.Node
	if n.Conv != nil {
		for _, c := range n.Conv.Nodes {
			if c.Kind != record.KindLLM {
				continue
			}
			if n.Kind == record.KindUser && c.Seq > n.Seq {
				return c
			}
			if n.Kind != record.KindUser && c.Seq < n.Seq {
				made = c
			}
		}
	}
	return made
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
