package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/runtime/examples"
)

// InitOptions are the inputs of `inspect init`.
type InitOptions struct {
	F   *Factory
	Dir string
}

// NewCmdInit builds `inspect init`. runF replaces the action in tests.
func NewCmdInit(f *Factory, runF func(*InitOptions) error) *cobra.Command {
	opts := &InitOptions{F: f}
	cmd := &cobra.Command{
		Use:   "init DIR",
		Short: "Write a small runnable example project",
		Long: `Write a small multi-agent project into DIR: agents.yaml with three agents
(an analyst that can fork researchers and hand off to a writer), their role
files, house rules, the runtime's fork-instructions.md, a workspace with
three regional reports, and a script.yaml so it runs without an API key.
The script runs two turns: a fan-out (one researcher branch per region) and
a routing hand-off to the writer. Its audit is clean; ` + "`inspect demo`" + ` is
where the topology mistakes are shown. Existing files are never overwritten.`,
		Example: `  inspect init ./myproject
  inspect run ./myproject --script ./myproject/script.yaml`,
		Args: rangeArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			if runF != nil {
				return runF(opts)
			}
			return initRun(opts)
		},
	}
	return cmd
}

func initRun(opts *InitOptions) error {
	paths, err := examples.Write(examples.Init(), opts.Dir)
	if err != nil {
		return Usagef("init: %v", err)
	}
	out := opts.F.IO.Out
	fmt.Fprintf(out, "wrote %d files to %s:\n", len(paths), opts.Dir)
	for _, p := range paths {
		fmt.Fprintf(out, "  %s\n", p)
	}
	script := filepath.Join(opts.Dir, "script.yaml")
	db := opts.F.DBPath
	fmt.Fprintln(out)
	for _, h := range []string{
		hint("", "run", opts.Dir, "--check"),
		hint(db, "run", opts.Dir, "--script", script),
		hint(db, "graph"),
		hint(db, "audit"),
	} {
		fmt.Fprintf(out, "next: %s\n", h)
	}
	return nil
}
