package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/cache/report"
	auditreport "github.com/inspect-dev/inspect/findings/report"
	"github.com/inspect-dev/inspect/mermaid"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime"
	"github.com/inspect-dev/inspect/runtime/examples"
)

// DemoOptions are the inputs of `inspect demo`.
type DemoOptions struct {
	F        *Factory
	Realtime bool
	// Now and RunID are injected by tests; zero values = wall clock, fresh id.
	Now   func() time.Time
	RunID string
}

// NewCmdDemo builds `inspect demo`. runF replaces the action in tests.
func NewCmdDemo(f *Factory, runF func(*DemoOptions) error) *cobra.Command {
	opts := &DemoOptions{F: f}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a built-in scripted project, then show its graph and audit",
		Long: `Run a small built-in project with the scripted model (no API key, no
network) and record it in the runs database, then print the run's Mermaid
graph and its audit. The project hands off from an analyst to a writer, forks
two researcher branches, and makes topology mistakes on purpose: among them,
it reads three regional reports one after another although it could fork
them (a missed fan-out), and its fork is uneven (one branch takes far longer).`,
		Example: `  inspect demo
  inspect demo --db /tmp/demo.db`,
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return demoRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Realtime, "realtime", false, "really wait the scripted latencies (about 25 seconds)")
	return cmd
}

func demoRun(ctx context.Context, opts *DemoOptions) error {
	ios := opts.F.IO
	tmp, err := os.MkdirTemp("", "inspect-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "demo")
	if _, err := examples.Write(examples.Demo(), dir); err != nil {
		return err
	}
	fmt.Fprintln(ios.ErrOut, "running the demo project (scripted model)")
	res, err := runtime.Run(ctx, runtime.Config{
		Project:  dir,
		Script:   filepath.Join(dir, "script.yaml"),
		OpenDB:   opts.F.Store,
		Now:      opts.Now,
		RunID:    opts.RunID,
		Realtime: opts.Realtime,
		Progress: ios.ErrOut,
		Getenv:   opts.F.Getenv,
	})
	if err != nil {
		return err
	}
	node, err := showDemoResult(ctx, opts.F, res.RunID)
	if err != nil {
		return err
	}
	if err := reportRun(ios, res, opts.F.DBPath, false, 0, true); err != nil {
		return err
	}
	if node != 0 {
		fmt.Fprintf(ios.ErrOut, "try:  %s   # the exact request behind finding 1; drop --dry-run (with OPENAI_API_KEY set) to ask the model why\n",
			hint(opts.F.DBPath, "ask", res.RunID, fmt.Sprintf("n%d", node), "--dry-run"))
	}
	if selfCommand != "inspect" {
		fmt.Fprintf(ios.ErrOut, "note: `%s` puts inspect in $(go env GOPATH)/bin; with that folder on PATH, `inspect …` replaces `%s …`\n",
			strings.Replace(selfCommand, "go run", "go install", 1), selfCommand)
	}
	return nil
}

// showDemoResult prints the demo run's Mermaid graph and its audit on
// stdout, as `inspect graph` and `inspect audit` would, and returns the
// first llm node among the first finding's evidence (the call worth asking
// about), or 0.
func showDemoResult(ctx context.Context, f *Factory, runID string) (int64, error) {
	run, cr, err := graphCache(ctx, f, runID)
	if err != nil {
		return 0, err
	}
	g := run.Graph
	out := f.IO.Out
	if err := (&mermaid.Config{Notes: report.Notes(cr)}).Fprint(out, g); err != nil {
		return 0, err
	}
	fmt.Fprintln(out)
	rep, err := run.Audit(ctx, nil)
	if err != nil {
		return 0, err
	}
	if style, ok := f.IO.markdownStyle(f.Getenv); ok {
		err = writeGlamour(f.IO, rep, style)
	} else {
		err = auditreport.WriteText(out, rep)
	}
	if err != nil || len(rep.Findings) == 0 {
		return 0, err
	}
	for _, ref := range rep.Findings[0].Nodes {
		if seq, err := ParseNodeRef(ref); err == nil {
			if n := g.Node(seq); n != nil && n.Kind == record.KindLLM {
				return seq, nil
			}
		}
	}
	return 0, nil
}
