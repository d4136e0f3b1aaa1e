package claudecode_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/claudecode"
)

func dump(c *importers.Conversation, ind string) {
	fmt.Printf("%sconv agent=%s started=%v ended=%v status=%s err=%q\n", ind, c.Agent, c.Started.Format("15:04:05.000"), c.Ended.Format("15:04:05.000"), c.Status, c.Error)
	for _, st := range c.Steps {
		switch {
		case st.User != nil:
			fmt.Printf("%s  user %.60q\n", ind, st.User.Text)
		case st.LLM != nil:
			fmt.Printf("%s  llm %s calls=%v in=%d out=%d cached=%d cw=%d %s-%s %.40q %s\n", ind, st.LLM.Model, st.LLM.Calls, st.LLM.Usage.In, st.LLM.Usage.Out, st.LLM.Usage.Cached, st.LLM.Usage.CacheWrite, st.LLM.Started.Format("05.000"), st.LLM.Ended.Format("05.000"), st.LLM.Content, st.LLM.Agent)
		case st.Tool != nil:
			fmt.Printf("%s  tool %s research=%v %s %q %.50q\n", ind, st.Tool.Name, st.Tool.Research, st.Tool.Status, st.Tool.Error, st.Tool.Result)
		case st.Fork != nil:
			fmt.Printf("%s  fork %s join=%v\n", ind, st.Fork.Tool, st.Fork.JoinAt.Format("15:04:05.000"))
			for _, b := range st.Fork.Branches {
				fmt.Printf("%s   branch %q @%s answer=%.50q\n", ind, b.Name, b.Agent, b.Answer)
				if b.Conv != nil {
					dump(b.Conv, ind+"    ")
				}
			}
		case st.Final != nil:
			fmt.Printf("%s  final %s %q %.50q\n", ind, st.Final.Status, st.Final.Error, st.Final.Text)
		case st.Compact != nil:
			fmt.Printf("%s  compact\n", ind)
		}
	}
}

func TestDebugDump(t *testing.T) {
	p := os.Getenv("CCDUMP")
	if p == "" {
		t.Skip()
	}
	ss, err := claudecode.Format{}.Read(context.Background(), p, importers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		fmt.Printf("%+v title=%q dir=%q tasks=%d report=%+v lack=%v files=%d\n", s.Source, s.Title, s.Dir, len(s.Tasks), s.Report, s.RequestsLack, len(s.Project.Files))
		dump(s.Trunk, "")
	}
}
