package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/charmbracelet/glamour"
	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/ask"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/internal/mdterm"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// AskOptions are the inputs of `inspect ask`.
type AskOptions struct {
	F *Factory

	RunRef   string // [FILE.db:]RUN; "latest" by default
	NodeRef  string // n<seq>
	Question string // "" = the default question

	Replay   bool   // send the recorded request unchanged
	Samples  int    // how many times to replay (0 = ask.DefaultSamples)
	Prompt   string // a role file to put in place of the recorded one
	DryRun   bool   // print the request, send nothing
	Model    string // replaces the request's model
	Provider string // the API to send to; "" = the run's own
	BaseURL  string // the provider's base URL
	Timeout  time.Duration

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

--dry-run prints the request body that would be sent (stdout) and where:
the provider, the URL and the model (stderr); it needs neither a key nor
the network.

Each run's call goes back in its own API's format: a request recorded byte
for byte in the one it was sent in; an imported run's call in its stack's
API — Anthropic Messages for Claude Code, OpenAI Responses for Codex — and
OpenAI Chat Completions otherwise (our runtime, Kimi, the Agents SDK,
OpenTelemetry traces). --provider anthropic|openai-responses|openai-chat
sends it to another. A request an importer reconstructed is written anew
as one the provider accepts (a user message first, every tool call
answered, tool_choice only with tools, max_tokens for Anthropic); ask says
what it lacks and what was changed before sending it.

The key is read from ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, sent as a
bearer token) for Anthropic, from OPENAI_API_KEY for the OpenAI APIs, and
is never stored or printed. The base URL is --base-url, else
ANTHROPIC_BASE_URL / OPENAI_BASE_URL, else the run's recorded base URL
(when the provider is the run's own), else https://api.anthropic.com or
https://api.openai.com/v1. Asks are stored with the run (question, answer,
model, time).

NODE is the first argument of the form n<number>; an argument before it is
the run (default latest), the words after it are the question.`,
		Example: `  inspect ask n7                                   # why did it call what it called?
  inspect ask n7 "Why did you read the regions one by one?"
  inspect ask 7f3a n12 "Why hand off to billing here?"
  inspect ask n7 --replay --samples 10
  inspect ask n7 --prompt fixed/analyst.md --samples 5
  inspect ask n7 --dry-run | jq '.messages[-1]'
  inspect ask n7 --model gpt-4.1 --base-url http://localhost:11434/v1
  inspect ask n9 --provider anthropic --dry-run    # where and how it would go`,
		ValidArgsFunction: runNodeCompletion(f, true),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &flagError{err: errors.New("inspect ask needs a node: inspect ask [RUN] NODE [QUESTION]")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("samples") && opts.Samples == 0 {
				return Usagef("--samples must be between 1 and %d, got 0", ask.MaxSamples)
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
	cmd.Flags().IntVar(&opts.Samples, "samples", 0, fmt.Sprintf("replay `N` times (default %d; with --replay or --prompt)", ask.DefaultSamples))
	cmd.Flags().StringVar(&opts.Prompt, "prompt", "", "replay with the agent's role-file text replaced by the text of `FILE`")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print the request that would be sent; no key, no network")
	cmd.Flags().StringVar(&opts.Model, "model", "", "send to `MODEL` instead of the recorded one")
	cmd.Flags().StringVar(&opts.Provider, "provider", "", "send to `API` anthropic, openai-responses or openai-chat (default: the run's own)")
	cmd.Flags().StringVar(&opts.BaseURL, "base-url", "", "provider base `URL` (default $ANTHROPIC_BASE_URL or $OPENAI_BASE_URL, else the run's, else the provider's public API)")
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

func askRun(ctx context.Context, opts *AskOptions) error {
	o := ask.Options{Question: opts.Question, Replay: opts.Replay, PromptFile: opts.Prompt, Samples: opts.Samples,
		Model: opts.Model, Provider: opts.Provider, BaseURL: opts.BaseURL, Getenv: opts.F.Getenv, DryRun: opts.DryRun, Timeout: opts.Timeout}
	if err := o.Validate(); err != nil {
		return err
	}
	db, id, err := openRun(ctx, opts.F, opts.RunRef)
	if err != nil {
		return err
	}
	seq, err := ParseNodeRef(opts.NodeRef)
	if err != nil {
		return err
	}
	// A model call is read alone (DESIGN §12: one-node commands read one
	// node); any other node, which the error message names the model call
	// that made it and the nearest ones for, the nodes around it (the
	// whole run only when those do not hold them: ask.Enough).
	an := analyzer(opts.F, nil)
	v, err := an.Node(ctx, pinned(opts.RunRef, id), seq, analysis.NodeOptions{})
	if err != nil {
		return refError(err)
	}
	run, n := v.Run, v.Node
	var g *graph.Run
	if n.Kind == record.KindLLM {
		g, err = graph.Build(run, []*record.Node{n.Node})
	} else {
		for _, span := range []int64{256, 4096} {
			lo, hi := max(seq-span, 0), seq+span
			if g, err = an.Part(ctx, pinned(opts.RunRef, id), lo, hi); err == nil && ask.Enough(g, seq, lo, hi) {
				break
			}
			g, err = nil, nil // the whole run says what its part cannot
		}
		if g == nil {
			var r *analysis.Run
			if r, err = an.Open(ctx, pinned(opts.RunRef, id), analysis.LoadGraph); err == nil {
				g = r.Graph
			}
		}
	}
	if err != nil {
		return err
	}
	o.Hint = func(args ...string) string { // the run by its id, in the file it came from
		return hint(refPath(opts.F, opts.RunRef), "ask", append([]string{g.ID}, args...)...)
	}
	plan, err := ask.NewPlan(ctx, db, g, seq, o)
	var unknown *ask.UnknownNodeError
	switch {
	case errors.As(err, &unknown):
		return refError(an.MissingNode(ctx, pinned(opts.RunRef, id), seq))
	case errors.Is(err, store.ErrNoRequest):
		return Usagef("n%d has no recorded request (recorded by an older inspect?); nothing to ask", seq)
	case err != nil:
		return err
	}
	s := opts.F.IO
	send := ask.SendOptions{Getenv: opts.F.Getenv, Out: s.Out, OutTTY: s.OutTTY, Log: s.ErrOut, Tune: opts.Tune}
	if opts.DryRun {
		send.Out = s.Data() // piped: the body's bytes exactly, so they hash to the recorded one
	}
	if style, ok := s.markdownStyle(opts.F.Getenv); ok {
		send.Answer = newMarkdownStream(s.Raw, s.Width, style) // glamour's styles; its input is sanitized
	}
	asked, err := plan.Send(ctx, send)
	if asked != nil { // an answer, or the part of one that arrived (Incomplete says so)
		wdb, serr := opts.F.StoreAt(ctx, refPath(opts.F, opts.RunRef))
		if serr == nil {
			serr = wdb.AddAsk(ctx, &store.Ask{RunID: g.ID, NodeSeq: seq, Mode: string(asked.Mode), Question: asked.Question,
				Answer: asked.Answer, Model: asked.Model, BaseURL: asked.BaseURL, Incomplete: asked.Incomplete})
		}
		if serr != nil {
			return fmt.Errorf("store the ask with run %s: %w", g.ID, serr)
		}
	}
	if err != nil {
		return explainAskError(err, plan)
	}
	return nil
}

// explainAskError turns provider errors into what to do next.
func explainAskError(err error, p *ask.Plan) error {
	var apiErr *ask.APIError
	var te *ask.TimeoutError
	var ue *ask.UnreachableError
	var cut *ask.CutOffError
	switch {
	case errors.As(err, &cut):
		// the provider failed mid-answer: inspect's side of it, exit 3
		return fmt.Errorf("%v; what arrived is stored with the run, marked incomplete: ask again", cut)
	case errors.As(err, &apiErr) && apiErr.Unauthorized():
		return Usagef("%v: the provider refused the key in %s; check it belongs to this provider (or set --base-url / %s to the provider it belongs to)", apiErr, p.Provider.KeyEnv, p.Provider.BaseURLEnv)
	case errors.As(err, &apiErr) && apiErr.ModelNotFound():
		// no example model name: it might be the very one refused
		return Usagef("%v: the provider does not serve model %q; pass --model with a model it does serve (it lists them at %s), or --provider for the API that does", apiErr, apiErr.Model, p.Provider.ModelsURL(p.BaseURL))
	case errors.As(err, &te):
		return fmt.Errorf("%v: the provider did not answer n%d in time; try again later, raise --timeout, or check --base-url", te, p.Node.Seq)
	case errors.As(err, &ue):
		return fmt.Errorf("%v: check --base-url / %s and your network", ue, p.Provider.BaseURLEnv)
	}
	return err
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
	width  int
}

func newMarkdownStream(w io.Writer, width int, style string) *markdownStream {
	m := &markdownStream{w: w, width: width}
	m.r, m.err = mdterm.New(style, width)
	return m
}

// Write takes the next piece of the answer.
func (m *markdownStream) Write(b []byte) (int, error) {
	s := string(b)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			m.line.WriteString(s)
			break
		}
		m.line.WriteString(s[:i])
		l := m.line.String()
		m.line.Reset()
		s = s[i+1:]
		m.addLine(l)
	}
	return len(b), m.err
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
	out, err := m.r.Render(mdterm.Input(strings.Join(m.block, "\n"), m.width))
	m.block = nil
	if err != nil {
		m.err = err
		return
	}
	out = strings.Trim(mdterm.Output(out), "\n")
	if m.output {
		out = "\n" + out
	}
	m.output = true
	_, m.err = io.WriteString(m.w, out+"\n")
}

// Close renders what is left of the answer.
func (m *markdownStream) Close() error {
	if m.line.Len() > 0 {
		l := m.line.String()
		m.line.Reset()
		m.addLine(l)
	}
	m.emit()
	return m.err
}
