package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/ask"
	"github.com/inspect-dev/inspect/cache/report"
	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/internal/mdterm"
	"github.com/inspect-dev/inspect/record"
)

// ShowOptions are the inputs of `inspect show`.
type ShowOptions struct {
	F       *Factory
	RunRef  string // [FILE.db:]RUN; "latest" by default
	NodeRef string // n<seq>
}

// NewCmdShow builds `inspect show`. runF replaces the action in tests.
func NewCmdShow(f *Factory, runF func(*ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{F: f}
	cmd := &cobra.Command{
		Use:   "show [RUN] NODE",
		Short: "Print one node of a run in full",
		Long: `Print one node of a recorded run (default: the latest) in full, as
` + "`inspect graph`" + ` names it (n<seq>):

  llm      the request's messages rebuilt byte for byte from the store, the
           tools it offered, the response, and usage
  tool     its arguments and the result the model got back
  fork     the context mode and each branch's agent and instructions
  join     each branch's status, duration and answer
  handoff  from, to and the reason given
  user     the message; final: the answer, or why the conversation failed

Questions put to the node with ` + "`inspect ask`" + ` are listed after it.`,
		Example: `  inspect show n7
  inspect show 7f3a n12
  inspect show base.db:latest n3 | less`,
		Args:              rangeArgs(1, 2),
		ValidArgsFunction: runNodeCompletion(f, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.RunRef, opts.NodeRef = "latest", args[0]
			if len(args) == 2 {
				opts.RunRef, opts.NodeRef = args[0], args[1]
			}
			if runF != nil {
				return runF(opts)
			}
			return showRun(cmd.Context(), opts)
		},
	}
	return cmd
}

func showRun(ctx context.Context, opts *ShowOptions) error {
	seq, err := ParseNodeRef(opts.NodeRef)
	if err != nil {
		return err
	}
	// the team's cache lifetime and prices for the node's cache section
	v, err := analyzer(opts.F, lenientPolicy(opts.F)).Node(ctx, opts.RunRef, seq, analysis.NodeOptions{Cache: true, Branches: true})
	if err != nil {
		return refError(err)
	}
	var md strings.Builder
	writeNode(&md, v)
	out := md.String()
	if style, ok := opts.F.IO.markdownStyle(opts.F.Getenv); ok {
		r, err := mdterm.New(style, opts.F.IO.Width)
		if err == nil {
			if s, err := mdterm.Render(r, out, opts.F.IO.Width); err == nil {
				// glamour's styles go out as they are; its input is sanitized
				_, err = fmt.Fprint(opts.F.IO.Raw, s)
				return err
			}
		}
	}
	_, err = fmt.Fprint(opts.F.IO.Out, out)
	return err
}

// writeNode writes node view v in full as Markdown (readable as plain
// text): the web's node page shows the same view as HTML.
func writeNode(w *strings.Builder, v *analysis.NodeView) {
	n := v.Node
	where := "trunk"
	if n.Branch != "" {
		where = "branch " + n.Branch
	}
	fmt.Fprintf(w, "# %s · %s · %s · %s\n\n", n.ID(), n.Kind, where, n.Status)
	fmt.Fprintf(w, "- run: %s\n", v.Run.ID)
	if n.Agent != "" {
		fmt.Fprintf(w, "- agent: %s\n", n.Agent)
	}
	fmt.Fprintf(w, "- started: %s\n", n.Started.UTC().Format(time.RFC3339Nano))
	if !n.Ended.IsZero() {
		fmt.Fprintf(w, "- ended: %s (%s)\n", n.Ended.UTC().Format(time.RFC3339Nano), graph.FormatDuration(n.Duration()))
	}
	if n.Error != "" {
		fmt.Fprintf(w, "- error: %s\n", oneLineText(n.Error))
	}
	w.WriteString("\n")

	switch n.Kind {
	case record.KindUser:
		section(w, "Message", n.Text)
	case record.KindFinal:
		if n.Failed() {
			section(w, "Error", n.Error)
		} else {
			section(w, "Answer", n.Text)
		}
	case record.KindLLM:
		writeLLM(w, v)
	case record.KindTool:
		if t := n.Tool; t != nil {
			fmt.Fprintf(w, "- tool: %s\n- call id: %s\n- research: %v\n\n", t.Name, t.CallID, t.Research)
			code(w, "Arguments", prettyJSON(t.Args))
			code(w, "Result", t.Result)
		}
	case record.KindHandoff:
		if h := n.Handoff; h != nil {
			fmt.Fprintf(w, "- from: %s\n- to: %s\n\n", h.From, h.To)
			section(w, "Reason", h.Reason)
		}
	case record.KindFork:
		if f := n.Fork; f != nil {
			fmt.Fprintf(w, "- context: %s\n", f.Context)
			if n.ForkOf != nil && n.ForkOf.Join != nil {
				fmt.Fprintf(w, "- joined at: %s\n", n.ForkOf.Join.ID())
			}
			for _, b := range v.Branches {
				fmt.Fprintf(w, "- branch %s: %s\n", b.Name, branchTokens(b))
			}
			w.WriteString("\n")
			for _, b := range f.Branches {
				section(w, fmt.Sprintf("Branch %s (agent %s)", b.Name, b.Agent), b.Instructions)
			}
		}
	case record.KindJoin:
		if j := n.Join; j != nil {
			fmt.Fprintf(w, "- closes fork: n%d\n\n", j.ForkSeq)
			for i, b := range j.Branches {
				title := fmt.Sprintf("Branch %s (agent %s) · %s · %s", b.Name, b.Agent, b.Status, graph.FormatDuration(b.Duration))
				if i < len(v.Branches) && v.Branches[i].Name == b.Name {
					title += " · " + branchTokens(v.Branches[i])
				}
				section(w, title, b.Answer)
			}
		}
	default:
		panic(fmt.Sprintf("internal error: unhandled node kind %v", n.Kind))
	}

	if len(v.Asks) > 0 {
		fmt.Fprintf(w, "## Asks (%d)\n\n", len(v.Asks))
		for _, a := range v.Asks {
			incomplete := ""
			if a.Incomplete != "" {
				incomplete = " · incomplete"
			}
			fmt.Fprintf(w, "### %s · %s · %s%s\n\n", a.Created.UTC().Format(time.RFC3339), a.Mode, a.Model, incomplete)
			if a.Question != "" {
				fmt.Fprintf(w, "**Q:** %s\n\n", a.Question)
			}
			if a.Incomplete != "" {
				fmt.Fprintf(w, "**Incomplete:** %s\n\n", a.Incomplete)
			}
			fmt.Fprintf(w, "%s\n\n", strings.TrimSpace(a.Answer))
		}
	}
}

// writeLLM writes an llm node: usage, the rebuilt request, the response,
// the prompt-cache section.
func writeLLM(w *strings.Builder, v *analysis.NodeView) {
	n, c := v.Node, v.LLM
	if l := n.LLM; l != nil {
		cached := "cached not reported"
		if l.Usage.CachedReported {
			cached = fmt.Sprintf("cached %d", l.Usage.Cached)
		}
		if l.Usage.CacheWriteReported {
			cached += fmt.Sprintf(" · cache writes %d", l.Usage.CacheWrite)
		}
		fmt.Fprintf(w, "- model: %s\n- %s\n- usage: in %d · out %d · %s\n", l.Model, c.Choice, l.Usage.In, l.Usage.Out, cached)
		fmt.Fprintf(w, "- weighted: %s tokens (uncached input, cache writes and output in full, cache reads at 25%%)\n", weighted(l.Usage.Weighted()))
		if !c.Exact {
			fmt.Fprintf(w, "- request: %s\n", ask.Reconstruction(v.Run))
		}
		if l.Attempts > 1 {
			fmt.Fprintf(w, "- attempts: %d (the request was sent again after %d failures)\n", l.Attempts, l.Attempts-1)
		}
		w.WriteString("\n")
	}
	writeCallRequest(w, c)
	writeCallResponse(w, c, n)
	writeCache(w, v.Cache, n.Seq)
}

// writeCache writes the node's prompt-cache prefix analysis (of the run up
// to the node, with the team's cache lifetime and prices); a run that
// cannot be analysed says why instead.
func writeCache(w *strings.Builder, c *analysis.NodeCache, seq int64) {
	if c == nil {
		return
	}
	if c.Err != nil {
		fmt.Fprintf(w, "## Prompt cache\n\n(not analysed: %v)\n\n", c.Err)
		return
	}
	var b strings.Builder
	if err := report.ShowMarkdown(&b, c.Report, seq); err == nil {
		w.WriteString(b.String())
	}
}

// branchTokens says what a branch cost, its nested branches included:
// "weighted 860 tokens over 2 calls (in 1100 · out 60 · cached 400)".
func branchTokens(b *graph.Branch) string {
	t := b.Tokens()
	calls := "calls"
	if t.Calls == 1 {
		calls = "call"
	}
	cached := "cached not reported"
	if t.CachedReported {
		cached = fmt.Sprintf("cached %d", t.Cached)
	}
	return fmt.Sprintf("weighted %s tokens over %d %s (in %d · out %d · %s)", weighted(t.Weighted), t.Calls, calls, t.In, t.Out, cached)
}

// weighted prints weighted tokens exactly: whole, or with the quarter a
// cache read leaves (1234.25).
func weighted(w float64) string { return strconv.FormatFloat(w, 'f', -1, 64) }

func writeMessage(w *strings.Builder, title string, m *chat.Message) {
	if m.Text != "" || len(m.Calls) == 0 {
		section(w, title, m.Text)
	} else {
		fmt.Fprintf(w, "### %s\n\n", title)
	}
	for _, c := range m.Calls {
		code(w, fmt.Sprintf("calls %s (%s)", c.Name, c.ID), prettyJSON(c.Arguments))
	}
}

// writeRequest and writeResponse write an llm node's request and response
// bodies as show does (writeCallRequest, writeCallResponse).
func writeRequest(w *strings.Builder, body []byte) {
	writeCallRequest(w, analysis.ReadCall(nil, &record.Node{Kind: record.KindLLM}, body, nil))
}

func writeResponse(w *strings.Builder, body []byte, n *graph.Node) {
	writeCallResponse(w, analysis.ReadCall(nil, n.Node, nil, body), n)
}

// writeCallRequest writes a request's messages and offered tools, read
// through chat (any OpenAI-compatible body, and the other formats chat
// reads); a body chat cannot read is printed as it is.
func writeCallRequest(w *strings.Builder, c *analysis.CallView) {
	body := c.Body
	if len(body) == 0 {
		w.WriteString("## Request\n\n(not recorded)\n\n")
		return
	}
	req := c.Request
	if c.RequestErr != nil {
		code(w, fmt.Sprintf("Request (%d bytes)", len(body)), prettyJSON(string(body)))
		return
	}
	format := ""
	if req.Format != chat.OpenAIChat {
		format = ", " + string(req.Format)
	}
	fmt.Fprintf(w, "## Request (%d messages, %d bytes%s)\n\n", len(req.Messages), len(body), format)
	if tools := req.ToolNames(); len(tools) > 0 {
		fmt.Fprintf(w, "- tools offered: %s\n", strings.Join(tools, ", "))
	} else {
		w.WriteString("- tools offered: none\n")
	}
	if len(req.ToolChoice) > 0 {
		fmt.Fprintf(w, "- tool_choice: %s\n", req.ToolChoice)
	}
	w.WriteString("\n")
	if req.Format != chat.OpenAIChat && req.System != "" {
		// Chat Completions carries its system prompt as messages; the
		// other formats beside them.
		section(w, "system", req.System)
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		title := fmt.Sprintf("%d. %s", i+1, m.Role)
		if m.CallID != "" {
			title += " (result of " + m.CallID + ")"
		}
		writeMessage(w, title, m)
	}
}

// writeCallResponse writes the response's message and usage.
func writeCallResponse(w *strings.Builder, c *analysis.CallView, n *graph.Node) {
	body := c.ResponseBody
	if len(body) == 0 {
		if n.LLM != nil && n.LLM.Content != "" {
			section(w, "Response", n.LLM.Content)
		} else {
			w.WriteString("## Response\n\n(none recorded)\n\n")
		}
		return
	}
	if c.ResponseErr != nil || c.Failed {
		// what the provider sent back, as it came: for a failed call its
		// error body (or the malformed reply that failed it)
		title := "Response"
		if c.Failed {
			title = fmt.Sprintf("Response of the failed call (%d bytes, as received)", len(body))
		}
		code(w, title, prettyJSON(string(body)))
		return
	}
	resp := c.Response
	fmt.Fprintf(w, "## Response (finish_reason %s)\n\n", resp.FinishReason)
	writeMessage(w, "assistant", &resp.Message)
	if len(resp.UsageJSON) > 0 {
		code(w, "Usage", prettyJSON(string(resp.UsageJSON)))
	}
}

// section writes a heading and text exactly as recorded, fenced so that
// Markdown inside a prompt or answer is not read as ours.
func section(w *strings.Builder, title, text string) {
	if strings.TrimSpace(text) == "" {
		fmt.Fprintf(w, "### %s\n\n(empty)\n\n", title)
		return
	}
	code(w, title, text)
}

// code writes a heading and text in a code fence long enough for the text.
func code(w *strings.Builder, title, text string) {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	fmt.Fprintf(w, "### %s\n\n%s\n%s\n%s\n\n", title, fence, strings.TrimRight(text, "\n"), fence)
}

// prettyJSON indents JSON text, or returns s unchanged when it is not JSON.
func prettyJSON(s string) string {
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(s), "", "  ") != nil {
		return s
	}
	return buf.String()
}

func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }
