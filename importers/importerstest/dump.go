package importerstest

import (
	"fmt"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/importers"
)

// Dump renders a session as indented text (one line a step, times relative
// to the session's start) for failure messages and reading.
func Dump(s *importers.Session) string {
	var b strings.Builder
	fmt.Fprintf(&b, "session %s %s id=%s title=%q dir=%q models=%v tasks=%d\n", s.Source.Format, s.Source.Version, s.Source.ID, s.Title, s.Dir, s.Models, len(s.Tasks))
	for _, f := range s.Project.Files {
		fmt.Fprintf(&b, "  file %s (%d bytes)\n", f.Path, len(f.Content))
	}
	rel := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Sub(s.Started).Round(time.Millisecond).String()
	}
	var conv func(c *importers.Conversation, ind string)
	conv = func(c *importers.Conversation, ind string) {
		if c == nil {
			fmt.Fprintf(&b, "%s(no conversation)\n", ind)
			return
		}
		fmt.Fprintf(&b, "%sconv @%s %s..%s status=%q err=%q\n", ind, c.Agent, rel(c.Started), rel(c.Ended), c.Status, c.Error)
		for _, st := range c.Steps {
			switch {
			case st.User != nil:
				fmt.Fprintf(&b, "%s  user %s %q\n", ind, rel(st.User.At), clip(st.User.Text))
			case st.LLM != nil:
				l := st.LLM
				u := l.Usage
				fmt.Fprintf(&b, "%s  llm %s..%s %s model=%q in=%d out=%d cached=%d write=%d calls=%v %q\n", ind, rel(l.Started), rel(l.Ended), l.Status, l.Model, u.In, u.Out, u.Cached, u.CacheWrite, l.Calls, clip(l.Content))
			case st.Tool != nil:
				t := st.Tool
				fmt.Fprintf(&b, "%s  tool %s %s..%s %s research=%v args=%q result=%q err=%q\n", ind, t.Name, rel(t.Started), rel(t.Ended), t.Status, t.Research, clip(t.Args), clip(t.Result), t.Error)
			case st.Handoff != nil:
				fmt.Fprintf(&b, "%s  handoff %s -> %s\n", ind, st.Handoff.From, st.Handoff.To)
			case st.Fork != nil:
				f := st.Fork
				fmt.Fprintf(&b, "%s  fork %s %s join=%s context=%s branches=%d\n", ind, f.Tool, rel(f.At), rel(f.JoinAt), f.Context, len(f.Branches))
				for _, br := range f.Branches {
					fmt.Fprintf(&b, "%s    branch %s @%s call=%s instructions=%q answer=%q\n", ind, br.Name, br.Agent, br.CallID, clip(br.Instructions), clip(br.Answer))
					conv(br.Conv, ind+"      ")
				}
			case st.Final != nil:
				fmt.Fprintf(&b, "%s  final %s %q\n", ind, rel(st.Final.At), clip(st.Final.Text))
			case st.Compact != nil:
				fmt.Fprintf(&b, "%s  compact %s %q\n", ind, rel(st.Compact.At), clip(st.Compact.Summary))
			default:
				fmt.Fprintf(&b, "%s  (empty step)\n", ind)
			}
		}
	}
	conv(s.Trunk, "  ")
	for k, n := range s.Report.Skipped {
		fmt.Fprintf(&b, "  skipped %d %s\n", n, k)
	}
	for _, p := range s.Report.Problems {
		fmt.Fprintf(&b, "  problem %s:%d: %s\n", p.File, p.Line, p.Err)
	}
	return b.String()
}

func clip(s string) string {
	s = strings.ReplaceAll(s, "\n", "⏎")
	if r := []rune(s); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return s
}
