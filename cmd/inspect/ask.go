package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/glamour"
	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/ask"
	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// Defaults of `inspect ask`.
const (
	askDefaultSamples = 5   // --samples when --replay or --prompt is given without it
	askMaxSamples     = 100 // a replay costs money: refuse more than this
)

// AskOptions are the inputs of `inspect ask`.
type AskOptions struct {
	F *Factory

	RunRef   string // [FILE.db:]RUN; "latest" by default
	NodeRef  string // n<seq>
	Question string // "" = the default question

	Replay  bool   // send the recorded request unchanged
	Samples int    // how many times to replay (0 = askDefaultSamples)
	Prompt  string // a role file to put in place of the recorded one
	DryRun  bool   // print the request, send nothing
	Model   string // replaces the request's model
	BaseURL string // the provider's base URL
	Timeout time.Duration

	// Tune adjusts the provider client before use (tests shorten its
	// backoff); nil leaves the defaults.
	Tune func(*ask.Client)
}

// askNodeArg is what a node argument looks like: n<digits>.
var askNodeArg = regexp.MustCompile(`^[nN][0-9]+$`)

// NewCmdAsk builds `inspect ask`. runF replaces the action in tests.
func NewCmdAsk(f *Factory, runF func(*AskOptions) error) *cobra.Command {
	opts := &AskOptions{F: f}
	cmd := &cobra.Command{
		Use:   "ask [RUN] NODE [QUESTION]",
		Short: "Question, replay or re-prompt a recorded model call",
		Long: `Ask the model of a recorded llm node why it chose what it did, replay the
call, or replay it with a changed role file.

Question (the default): the exact recorded request, byte for byte, then the
recorded assistant response, a tool result for each of its tool calls saying
it was not run, then your question as a user message; the same tools, with
tool_choice "none", so the model answers in words and the provider can serve
the recorded prefix from its prompt cache. Without a QUESTION it is asked why
it chose the calls it made (or why it answered directly). The answer streams;
on a terminal it is rendered as Markdown.

--replay sends the recorded request unchanged --samples times (default 5,
4 at a time) and prints the distribution of choices against the recording,
e.g. "calls fork 4/5 · calls read_file 1/5 (recorded: calls fork)".

--prompt FILE replaces the agent's role-file text (agents/<name>.md, or its
prompt: in agents.yaml, as stored with the run) inside the recorded system
prompt with FILE, says what changed, and replays that request (--samples
times): does the fix change the choice before you pay for a whole new run?

--dry-run prints the request body that would be sent (stdout) and where
(stderr), and needs neither a key nor the network.

The key is read from OPENAI_API_KEY and is never stored or printed. The
provider is --base-url, else OPENAI_BASE_URL, else the run's recorded base
URL, else https://api.openai.com/v1. Asks are stored with the run (question,
answer, model, time).

NODE is the first argument of the form n<number>; an argument before it is
the run (default latest), the words after it are the question.`,
		Example: `  inspect ask n7                                   # why did it call what it called?
  inspect ask n7 "Why did you read the regions one by one?"
  inspect ask 7f3a n12 "Why hand off to billing here?"
  inspect ask n7 --replay --samples 10
  inspect ask n7 --prompt fixed/analyst.md --samples 5
  inspect ask n7 --dry-run | jq '.messages[-1]'
  inspect ask n7 --model gpt-4.1 --base-url http://localhost:11434/v1`,
		ValidArgsFunction: runNodeCompletion(f, true),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &flagError{err: errors.New("inspect ask needs a node: inspect ask [RUN] NODE [QUESTION]")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("samples") && opts.Samples == 0 {
				return Usagef("--samples must be between 1 and %d, got 0", askMaxSamples)
			}
			var err error
			if opts.RunRef, opts.NodeRef, opts.Question, err = parseAskArgs(args); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return askRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Replay, "replay", false, "send the recorded request unchanged and show the distribution of choices")
	cmd.Flags().IntVar(&opts.Samples, "samples", 0, fmt.Sprintf("replay `N` times (default %d; with --replay or --prompt)", askDefaultSamples))
	cmd.Flags().StringVar(&opts.Prompt, "prompt", "", "replay with the agent's role-file text replaced by the text of `FILE`")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print the request that would be sent; no key, no network")
	cmd.Flags().StringVar(&opts.Model, "model", "", "send to `MODEL` instead of the recorded one")
	cmd.Flags().StringVar(&opts.BaseURL, "base-url", "", "provider base `URL` (default $OPENAI_BASE_URL, else the run's, else https://api.openai.com/v1)")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", ask.DefaultHeaderTimeout, "how long to wait for the provider to start answering, a `DURATION` such as 30s or 2m (each attempt)")
	return cmd
}

// parseAskArgs splits [RUN] NODE [QUESTION...]: NODE is the first argument
// that looks like n<digits>.
func parseAskArgs(args []string) (run, node, question string, err error) {
	for i, a := range args {
		if !askNodeArg.MatchString(a) {
			continue
		}
		switch i {
		case 0:
			run = "latest"
		case 1:
			run = args[0]
		default:
			return "", "", "", Usagef("%q: give at most one run before the node (inspect ask [RUN] NODE [QUESTION]); quote a question that comes after it", strings.Join(args[:i], " "))
		}
		return run, a, strings.Join(args[i+1:], " "), nil
	}
	return "", "", "", Usagef("no node in %q: write the llm node as n<number>, as `inspect graph` shows it (e.g. inspect ask n7)", strings.Join(args, " "))
}

// askMode is what an ask does.
type askMode string

const (
	askQuestion askMode = "question"
	askReplay   askMode = "replay"
	askPrompt   askMode = "prompt"
)

func (o *AskOptions) mode() askMode {
	switch {
	case o.Prompt != "":
		return askPrompt
	case o.Replay:
		return askReplay
	default:
		return askQuestion
	}
}

func (o *AskOptions) validate() error {
	if o.Question != "" && (o.Replay || o.Prompt != "") {
		return Usagef("a question goes with the default mode only: drop it, or drop --replay/--prompt")
	}
	if o.Samples != 0 && !o.Replay && o.Prompt == "" {
		return Usagef("--samples goes with --replay or --prompt")
	}
	if o.Samples < 0 || o.Samples > askMaxSamples {
		return Usagef("--samples must be between 1 and %d, got %d", askMaxSamples, o.Samples)
	}
	if o.Timeout < 0 {
		return Usagef("--timeout must be positive, got %s", o.Timeout)
	}
	return nil
}

// askPlan is the request an ask sends, and what to say about it.
type askPlan struct {
	mode     askMode
	node     *graph.Node
	body     []byte
	question string            // question mode
	change   *ask.PromptChange // prompt mode
	rolePath string            // prompt mode: the role file replaced
	samples  int               // replay and prompt modes
	recorded string            // the recorded choice
	notes    []string          // cheap causes worth ruling out first
}

func askRun(ctx context.Context, opts *AskOptions) error {
	if err := opts.validate(); err != nil {
		return err
	}
	db, g, err := loadGraph(ctx, opts.F, opts.RunRef)
	if err != nil {
		return err
	}
	seq, err := ParseNodeRef(opts.NodeRef)
	if err != nil {
		return err
	}
	n := g.Node(seq)
	if n == nil {
		return unknownNode(g, seq)
	}
	if n.Kind != record.KindLLM {
		return notLLMNode(g, n)
	}
	plan, err := buildAskPlan(ctx, db, g, n, opts)
	if err != nil {
		return err
	}
	base := askBaseURL(opts, g.Run)
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Usagef("provider base URL %q (--base-url or OPENAI_BASE_URL) is not an http(s) URL; give the server's API root, e.g. http://localhost:11434/v1", ask.Redact(base))
	}
	s := opts.F.IO
	if opts.DryRun {
		fmt.Fprintf(s.ErrOut, "dry run: %s would POST this body (model %s) to %s\n", describeAsk(plan), askModelOf(plan.body), ask.Redact(strings.TrimRight(base, "/")+"/chat/completions"))
		for _, note := range plan.notes {
			fmt.Fprintf(s.ErrOut, "note: %s\n", note)
		}
		if plan.change != nil {
			printPromptChange(s.ErrOut, plan)
		}
		// The bytes exactly, so they hash to the recorded body; a newline
		// only for a terminal's prompt.
		if _, err := s.Out.Write(plan.body); err != nil {
			return err
		}
		if s.OutTTY {
			_, err := fmt.Fprintln(s.Out)
			return err
		}
		return nil
	}
	key := opts.F.Getenv("OPENAI_API_KEY")
	if key == "" {
		return Usagef("OPENAI_API_KEY is not set: export your provider's key to send n%d's request (any non-empty value for a local server), or use --dry-run to see the request without sending it", n.Seq)
	}
	client := ask.NewClient(key, base)
	if opts.Timeout > 0 {
		client.HeaderTimeout = opts.Timeout
	}
	if opts.Tune != nil {
		opts.Tune(client)
	}
	var a *store.Ask
	if plan.mode == askQuestion {
		a, err = askQuestionRun(ctx, opts, client, plan)
	} else {
		a, err = askReplayRun(ctx, opts, client, plan)
	}
	if err != nil {
		return explainAskError(err, plan)
	}
	a.RunID, a.NodeSeq, a.BaseURL = g.ID, n.Seq, base
	a.Answer = client.Scrub(a.Answer)
	a.Question = client.Scrub(a.Question)
	wdb, err := opts.F.StoreAt(ctx, refPath(opts.F, opts.RunRef))
	if err != nil {
		return fmt.Errorf("store the ask with run %s: %w", g.ID, err)
	}
	if err := wdb.AddAsk(ctx, a); err != nil {
		return err
	}
	return nil
}

// buildAskPlan loads the node's recorded request and builds the body to send.
func buildAskPlan(ctx context.Context, db *store.DB, g *graph.Run, n *graph.Node, opts *AskOptions) (*askPlan, error) {
	body, err := db.Request(ctx, g.ID, n.Seq)
	if errors.Is(err, store.ErrNoRequest) {
		return nil, Usagef("n%d has no recorded request (recorded by an older inspect?); nothing to ask", n.Seq)
	}
	if err != nil {
		return nil, err
	}
	req, err := ask.ParseRequest(body)
	if err != nil {
		return nil, fmt.Errorf("n%d: %w", n.Seq, err)
	}
	plan := &askPlan{mode: opts.mode(), node: n, recorded: ask.ChoiceOf(n.LLM.Calls), samples: opts.Samples, notes: askCheapCauses(g, req)}
	if plan.samples == 0 {
		plan.samples = askDefaultSamples
	}
	switch plan.mode {
	case askQuestion:
		resp, err := db.Response(ctx, g.ID, n.Seq)
		if err != nil {
			return nil, err
		}
		if len(resp) == 0 {
			why := "it has no recorded response"
			if n.Status != record.StatusOK {
				why = fmt.Sprintf("it ended %s (%s) without a response", n.Status, n.Error)
			}
			return nil, Usagef("n%d cannot be questioned: %s; try `inspect ask n%d --replay` to send its request again", n.Seq, why, n.Seq)
		}
		rec, err := chat.ReadResponse(resp, chat.OpenAIChat)
		if err != nil {
			return nil, fmt.Errorf("n%d: recorded response: %w", n.Seq, err)
		}
		plan.question = opts.Question
		if plan.question == "" {
			plan.question = ask.DefaultQuestion(req, rec)
		}
		if plan.body, err = ask.Question(req, rec, plan.question); err != nil {
			return nil, fmt.Errorf("n%d: %w", n.Seq, err)
		}
	case askReplay:
		plan.body = body
	case askPrompt:
		if plan.body, plan.rolePath, plan.change, err = promptBody(g, n, req, opts.Prompt); err != nil {
			return nil, err
		}
	}
	if opts.Model != "" {
		if plan.body, err = ask.SetModel(plan.body, opts.Model); err != nil {
			return nil, err
		}
	}
	return plan, nil
}

// promptBody replaces the node agent's role-file text, as the run's
// project snapshot holds it, with the text of file.
func promptBody(g *graph.Run, n *graph.Node, req *ask.Request, file string) ([]byte, string, *ask.PromptChange, error) {
	newText, err := os.ReadFile(file)
	if err != nil {
		return nil, "", nil, Usagef("--prompt: %v", err)
	}
	yml := g.Project.File("agents.yaml")
	if yml == nil {
		return nil, "", nil, Usagef("run %s has no agents.yaml in its project snapshot, so the role file of %s is unknown", g.ID, n.Agent)
	}
	path, err := ask.RolePath([]byte(yml.Content), n.Agent)
	if err != nil {
		return nil, "", nil, Usagef("run %s: %v", g.ID, err)
	}
	role := g.Project.File(path)
	if role == nil {
		return nil, "", nil, Usagef("run %s's project snapshot has no %s (the role file of %s)", g.ID, path, n.Agent)
	}
	body, change, err := ask.ReplacePrompt(req, role.Content, string(newText))
	if err != nil {
		return nil, "", nil, Usagef("n%d: %v: %s as stored with run %s is not in its system prompt", n.Seq, err, path, g.ID)
	}
	return body, path, change, nil
}

// askBaseURL is --base-url, else OPENAI_BASE_URL, else the run's recorded
// provider when it is an HTTP one, else the OpenAI API.
func askBaseURL(opts *AskOptions, r *record.Run) string {
	if opts.BaseURL != "" {
		return strings.TrimRight(opts.BaseURL, "/")
	}
	if u := opts.F.Getenv("OPENAI_BASE_URL"); u != "" {
		return strings.TrimRight(u, "/")
	}
	// A scripted run records "scripted:<name>": not a place to send to.
	if strings.HasPrefix(r.BaseURL, "http://") || strings.HasPrefix(r.BaseURL, "https://") {
		return strings.TrimRight(r.BaseURL, "/")
	}
	return ask.DefaultBaseURL
}

// askCheapCauses lists what the request itself explains before any model
// is asked (seed §7: rule out the cheap causes first): fork missing from
// the call's tools, or the fork instructions missing from its system prompt.
func askCheapCauses(g *graph.Run, req *ask.Request) []string {
	var notes []string
	hasFork := false
	for _, t := range req.Tools() {
		hasFork = hasFork || t == "fork"
	}
	if !hasFork {
		notes = append(notes, "fork is not among this call's tools (no fork: for the agent in agents.yaml, or the fork depth cap), so it could not fork")
		return notes
	}
	if fi := g.Project.File("agents/fork-instructions.md"); fi != nil && strings.TrimSpace(fi.Content) != "" &&
		!strings.Contains(req.System(), strings.TrimSpace(fi.Content)) {
		notes = append(notes, "agents/fork-instructions.md is not in this call's system prompt although fork is among its tools")
	}
	return notes
}

// describeAsk says in a few words what a plan sends.
func describeAsk(p *askPlan) string {
	who := fmt.Sprintf("n%d (%s, %s)", p.node.Seq, p.node.Agent, p.recorded)
	switch p.mode {
	case askReplay:
		return fmt.Sprintf("replaying %s unchanged %d×", who, p.samples)
	case askPrompt:
		return fmt.Sprintf("replaying %s with %s replaced %d×", who, p.rolePath, p.samples)
	default:
		return "asking " + who
	}
}

func printPromptChange(w io.Writer, p *askPlan) {
	fmt.Fprintf(w, "%s: %s\n", p.rolePath, p.change)
	for _, l := range p.change.Diff(12) {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// askQuestionRun sends the question and streams the answer to stdout.
func askQuestionRun(ctx context.Context, opts *AskOptions, client *ask.Client, plan *askPlan) (*store.Ask, error) {
	s := opts.F.IO
	model := askModelOf(plan.body)
	fmt.Fprintf(s.ErrOut, "%s with %s at %s…\n", describeAsk(plan), model, client.Endpoint())
	for _, note := range plan.notes {
		fmt.Fprintf(s.ErrOut, "note: %s\n", note)
	}
	if opts.Question == "" {
		fmt.Fprintf(s.ErrOut, "question: %s\n\n", plan.question)
	}
	var out interface {
		write(string)
		close() error
	}
	if style, ok := s.markdownStyle(opts.F.Getenv("GLAMOUR_STYLE")); ok {
		out = newMarkdownStream(s.Out, s.Width, style)
	} else {
		out = &plainStream{w: s.Out}
	}
	reply, err := client.Send(ctx, plan.body, func(d string) { out.write(client.Scrub(d)) })
	if cerr := out.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if reply.Model != "" {
		model = reply.Model
	}
	if u := reply.Usage; u != nil {
		cached := ""
		if u.CachedReported {
			cached = fmt.Sprintf(" (%s cached)", askThousands(u.Cached))
		}
		fmt.Fprintf(s.ErrOut, "%s · %s tokens in%s · %s out\n", model, askThousands(u.In), cached, askThousands(u.Out))
	}
	return &store.Ask{Mode: string(askQuestion), Question: plan.question, Answer: reply.Message.Text, Model: model}, nil
}

// askReplayRun replays the plan's body and prints the distribution.
func askReplayRun(ctx context.Context, opts *AskOptions, client *ask.Client, plan *askPlan) (*store.Ask, error) {
	s := opts.F.IO
	model := askModelOf(plan.body)
	fmt.Fprintf(s.ErrOut, "%s with %s at %s, %d at a time…\n", describeAsk(plan), model, client.Endpoint(), min(plan.samples, ask.DefaultParallel))
	if plan.change != nil {
		printPromptChange(s.Out, plan)
	}
	samples, err := ask.Replay(ctx, client, plan.body, plan.samples, ask.DefaultParallel)
	if err != nil {
		return nil, err
	}
	d := ask.TallySamples(plan.recorded, samples)
	if err := d.Err(); err != nil {
		return nil, err
	}
	for _, e := range d.Errors {
		fmt.Fprintf(s.ErrOut, "a sample failed: %s\n", client.Scrub(e.Error()))
	}
	for _, sm := range samples {
		if sm.Reply != nil && sm.Reply.Model != "" {
			model = sm.Reply.Model
			break
		}
	}
	fmt.Fprintln(s.Out, d.String())
	verdict := fmt.Sprintf("%d of %d samples made the recorded choice (%s)", d.Matches(), d.Samples, d.Recorded)
	fmt.Fprintln(s.ErrOut, verdict)
	a := &store.Ask{Mode: string(plan.mode), Answer: d.String(), Model: model}
	if plan.mode == askPrompt {
		a.Question = fmt.Sprintf("replay %d× with %s replaced by %s: %s", plan.samples, plan.rolePath, opts.Prompt, plan.change)
	} else {
		a.Question = fmt.Sprintf("replay %d× unchanged", plan.samples)
	}
	return a, nil
}

// explainAskError turns provider errors into what to do next.
func explainAskError(err error, p *askPlan) error {
	var apiErr *ask.APIError
	var te *ask.TimeoutError
	var ue *ask.UnreachableError
	switch {
	case errors.As(err, &apiErr) && apiErr.Unauthorized():
		return Usagef("%v: the provider refused the key in OPENAI_API_KEY; check it belongs to this provider (or set --base-url / OPENAI_BASE_URL to the provider it belongs to)", apiErr)
	case errors.As(err, &apiErr) && apiErr.ModelNotFound():
		return Usagef("%v: the provider does not serve model %q; pass --model with one it does (e.g. --model gpt-4.1-mini)", apiErr, apiErr.Model)
	case errors.As(err, &te):
		return fmt.Errorf("%v: the provider did not answer n%d in time; try again later, raise --timeout, or check --base-url", te, p.node.Seq)
	case errors.As(err, &ue):
		return fmt.Errorf("%v: check --base-url / OPENAI_BASE_URL and your network", ue)
	}
	return err
}

// notLLMNode is the error for asking a node that is not a model call: it
// says what the node is and names the llm nodes near it.
func notLLMNode(g *graph.Run, n *graph.Node) error {
	var b strings.Builder
	fmt.Fprintf(&b, "n%d is a %s node (%s), not a model call; ask works on llm nodes", n.Seq, n.Kind, askNodeSummary(n))
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
		fmt.Fprintf(&b, "; the model call that %s is n%d: try `inspect ask n%d`", verb, made.Seq, made.Seq)
	}
	var llms []*graph.Node
	for _, c := range g.Nodes {
		if c.Kind == record.KindLLM {
			llms = append(llms, c)
		}
	}
	if len(llms) == 0 {
		fmt.Fprintf(&b, "; run %s has no llm nodes", g.ID)
		return Usagef("%s", b.String())
	}
	sort.SliceStable(llms, func(i, j int) bool { return abs(llms[i].Seq-n.Seq) < abs(llms[j].Seq-n.Seq) })
	llms = llms[:min(len(llms), 3)]
	sort.Slice(llms, func(i, j int) bool { return llms[i].Seq < llms[j].Seq })
	var near []string
	for _, c := range llms {
		near = append(near, fmt.Sprintf("n%d (%s, %s)", c.Seq, c.Agent, ask.ChoiceOf(c.LLM.Calls)))
	}
	fmt.Fprintf(&b, "; nearest llm nodes: %s", strings.Join(near, ", "))
	return Usagef("%s", b.String())
}

// askNodeSummary names what a node holds, for error messages.
func askNodeSummary(n *graph.Node) string {
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
		return ask.ChoiceOf(n.LLM.Calls)
	default:
		panic(fmt.Sprintf("internal error: unhandled node kind %v", n.Kind))
	}
}

func askModelOf(body []byte) string {
	req, err := ask.ParseRequest(body)
	if err != nil {
		return "?"
	}
	return req.Model()
}

// askThousands prints n with thousands separators: 12,345.
func askThousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + askThousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// plainStream writes the answer as it arrives, ending it with a newline.
type plainStream struct {
	w    io.Writer
	last byte
	err  error
}

func (p *plainStream) write(s string) {
	if p.err != nil || s == "" {
		return
	}
	_, p.err = io.WriteString(p.w, s)
	p.last = s[len(s)-1]
}

func (p *plainStream) close() error {
	if p.err == nil && p.last != '\n' && p.last != 0 {
		_, p.err = io.WriteString(p.w, "\n")
	}
	return p.err
}

// markdownStream renders the answer with glamour block by block: each
// paragraph (up to a blank line outside a code fence) is rendered and
// written as soon as it is complete, so a long answer still streams.
type markdownStream struct {
	w      io.Writer
	r      *glamour.TermRenderer
	line   strings.Builder
	block  []string
	fence  bool
	err    error
	output bool
}

func newMarkdownStream(w io.Writer, width int, style string) *markdownStream {
	m := &markdownStream{w: w}
	m.r, m.err = glamour.NewTermRenderer(glamour.WithStylePath(style), glamour.WithWordWrap(width))
	return m
}

func (m *markdownStream) write(s string) {
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			m.line.WriteString(s)
			return
		}
		m.line.WriteString(s[:i])
		l := m.line.String()
		m.line.Reset()
		s = s[i+1:]
		m.addLine(l)
	}
}

func (m *markdownStream) addLine(l string) {
	t := strings.TrimSpace(l)
	if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
		m.fence = !m.fence
	}
	if t == "" && !m.fence {
		m.emit()
		return
	}
	m.block = append(m.block, l)
}

func (m *markdownStream) emit() {
	if len(m.block) == 0 || m.err != nil {
		m.block = nil
		return
	}
	out, err := m.r.Render(strings.Join(m.block, "\n"))
	m.block = nil
	if err != nil {
		m.err = err
		return
	}
	out = strings.Trim(out, "\n")
	if m.output {
		out = "\n" + out
	}
	m.output = true
	_, m.err = io.WriteString(m.w, out+"\n")
}

func (m *markdownStream) close() error {
	if m.line.Len() > 0 {
		l := m.line.String()
		m.line.Reset()
		m.addLine(l)
	}
	m.emit()
	return m.err
}
