package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/config"
	"github.com/inspect-dev/inspect/importers"
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
		Use:   "init [DIR]",
		Short: "Write the team's commented .inspect.yaml, or a small runnable example project",
		Long: `Without DIR, write a commented .inspect.yaml into the current folder (or
the file --config names): the team's policy, kept in the repository, with
every audit threshold at its default and an example of rules turned off,
research patterns, a price table, the cache lifetime and an ignore entry,
all commented out. inspect reads the nearest one from the working folder
upwards (docs/config.md).

With DIR, write a small multi-agent project into DIR: agents.yaml with three agents
(an analyst that can fork researchers and hand off to a writer), their role
files, house rules, the runtime's fork-instructions.md, a workspace with
three regional reports, and a script.yaml so it runs without an API key.
The script runs two turns: a fan-out (one researcher branch per region) and
a routing hand-off to the writer. Its audit is clean; ` + "`inspect demo`" + ` is
where the topology mistakes are shown. Existing files are never overwritten.`,
		Example: `  inspect init                      # .inspect.yaml in this folder
  inspect init ./myproject
  inspect run ./myproject --script ./myproject/script.yaml`,
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Dir = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			if opts.Dir == "" {
				return initConfig(opts)
			}
			return initRun(opts)
		},
	}
	return cmd
}

// initConfig writes the commented policy file, never over an existing one.
func initConfig(opts *InitOptions) error {
	path := opts.F.ConfigPath
	if path == "" {
		wd, err := opts.F.Getwd()
		if err != nil {
			return fmt.Errorf("find the current folder: %w", err)
		}
		path = filepath.Join(wd, config.FileName)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return Usagef("%s already exists; inspect init never overwrites it (edit it, or give another path with --config)", path)
	}
	if err != nil {
		return Usagef("cannot write %s: %v", path, err)
	}
	_, err = f.WriteString(config.Template(importers.DefaultResearchPatterns))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	out := opts.F.IO.Out
	fmt.Fprintf(out, "wrote %s: every setting is commented out; uncomment what the team decides\n", path)
	fmt.Fprintf(out, "next: %s\n", hint(opts.F.DBPath, "audit", "--rules"))
	return nil
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
