package otlp

import (
	"fmt"
	"strings"

	"github.com/inspect-dev/inspect/importers"
)

// outline is a Session as indented text: one line per step, what the
// tests compare (times left out: the fixtures' clocks change on every
// regeneration).
func outline(s *importers.Session) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tasks %q models %v\n", s.Tasks, s.Models)
	outlineConv(&b, s.Trunk, "")
	return b.String()
}

func outlineConv(b *strings.Builder, c *importers.Conversation, ind string) {
	fmt.Fprintf(b, "%sconv %s status=%q\n", ind, c.Agent, c.Status)
	for _, st := range c.Steps {
		switch {
		case st.User != nil:
			fmt.Fprintf(b, "%s  user %q\n", ind, clip(st.User.Text))
		case st.LLM != nil:
			l := st.LLM
			agent := ""
			if l.Agent != "" {
				agent = " agent=" + l.Agent
			}
			fmt.Fprintf(b, "%s  llm %s%s in=%d out=%d cached=%d/%v calls=%v req=%v resp=%v %q\n", ind, l.Model, agent, l.Usage.In, l.Usage.Out, l.Usage.Cached, l.Usage.CachedReported, l.Calls, l.Request != nil, l.Response != nil, clip(l.Content))
		case st.Tool != nil:
			t := st.Tool
			fmt.Fprintf(b, "%s  tool %s id=%s args=%s result=%q research=%v status=%q\n", ind, t.Name, t.CallID, clip(t.Args), clip(t.Result), t.Research, t.Status)
		case st.Handoff != nil:
			fmt.Fprintf(b, "%s  handoff %s -> %s %q\n", ind, st.Handoff.From, st.Handoff.To, st.Handoff.Reason)
		case st.Fork != nil:
			f := st.Fork
			fmt.Fprintf(b, "%s  fork tool=%s context=%s joined=%v\n", ind, f.Tool, f.Context, !f.JoinAt.IsZero())
			for _, br := range f.Branches {
				fmt.Fprintf(b, "%s    branch %s agent=%s instructions=%q answer=%q\n", ind, br.Name, br.Agent, clip(br.Instructions), clip(br.Answer))
				outlineConv(b, br.Conv, ind+"      ")
			}
		case st.Final != nil:
			fmt.Fprintf(b, "%s  final %q\n", ind, clip(st.Final.Text))
		}
	}
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
