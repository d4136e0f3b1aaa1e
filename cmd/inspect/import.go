package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/all"
	"github.com/inspect-dev/inspect/store"
)

// ImportOptions are the inputs of `inspect import`.
type ImportOptions struct {
	F      *Factory
	Paths  []string
	Format string // "" = detect
	Strict bool
	Watch  bool
	// Project is the folder the sessions' instruction files are read
	// from (--project); "" = the current folder, for a session that ran
	// there.
	Project string
	// Poll is how often --watch looks for changes.
	Poll time.Duration
	// Getwd is the current folder (injected for tests).
	Getwd func() (string, error)
	// From is a trace backend to import from (--from jaeger URL), with
	// its query.
	From FromOptions
}

// NewCmdImport builds `inspect import`. runF replaces the action in tests.
func NewCmdImport(f *Factory, runF func(*ImportOptions) error) *cobra.Command {
	opts := &ImportOptions{F: f, Poll: time.Second, Getwd: os.Getwd}
	names := importers.Names(all.Formats())
	cmd := &cobra.Command{
		Use:   "import [PATH...]",
		Short: "Import other tools' sessions (Claude Code, …) as runs",
		Long: `Import the sessions other agent tools record, with their sub-agents, as
runs: graph, audit, show and ask work on them as on inspect's own runs.
Each session is one run; importing a session again updates its run.

An inspect database (FILE.db, as inspect export -o FILE.db writes) is
merged: each of its runs is copied with its requests, asks and tags; a run
already here (the same id, or the same imported session) stays as it is,
so merging a file twice gives each run once.

The format of each PATH is detected; --format names it. With --format and
no PATH, the newest session of the current folder in that tool's home is
imported (claude-code: ~/.claude/projects, or CLAUDE_CONFIG_DIR).
--watch keeps importing as a live session grows, until Ctrl-C.

The instruction files of a session (CLAUDE.md, AGENTS.md, sub-agent
definitions such as .claude/agents/<type>.md) are copied into the run from
its project folder: --project DIR, else the current folder when the session
ran there. A session that ran elsewhere (another user's, a shared file)
brings none: the folder it names is never read on its word. Files are read
inside that folder only (a symlink out of it is not followed) and only
regular files (a FIFO is never waited on); sub-agent files likewise only
inside the session's own folder.

Formats: ` + strings.Join(names, ", ") + `.
What maps to what, and what an imported request lacks: docs/import.md.

A tool the format's own list does not name counts as research when its
name matches the research: patterns of .inspect.yaml (default read*, get*,
list*, search*, find*, fetch*, lookup*, query*).

Records of unknown types are skipped, and records the run cannot hold as
written (a tool result without its call, a duplicate span, a value over
the size cap) adjusted, each counted by kind; a malformed line is
reported as FILE:LINE and the import goes on (--strict makes it fail; the
run keeps what was read before the line, marked interrupted).

Every format is recorded as it is read, so an import's memory stays about
the same whatever the file's size: a trace's spans are held only until
its last one was read (docs/import.md says what each format keeps).

--from jaeger URL imports the traces a Jaeger query service holds, each
as a run, through its API v3: --service (required), --operation,
--attr KEY=VALUE (repeatable), --since/--until, --limit N. A second import
of the same query fetches only what is new. Credentials for a Jaeger
behind a proxy come from the environment only: INSPECT_JAEGER_TOKEN
(bearer), or INSPECT_JAEGER_USER and INSPECT_JAEGER_PASSWORD (basic).
See docs/import.md.

Exit codes: 0 imported; 2 a PATH missing or in no known format, or a
malformed line under --strict; 3 the database failed.`,
		Example: `  inspect import shared.db                       # merge another inspect database
  inspect import ~/.claude/projects/-home-me-app/3f2c….jsonl
  inspect import --format claude-code            # the newest session of this folder
  inspect import --format claude-code --watch    # follow it live
  inspect import shared.jsonl --project ~/src/app  # a colleague's session of my checkout
  inspect import session.jsonl --strict
  inspect import --from jaeger http://localhost:16686 --service checkout-agent --since 7d`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Paths = args
			if opts.From.Backend != "" || cmd.Flags().Changed("service") || cmd.Flags().Changed("since") || cmd.Flags().Changed("attr") {
				if err := checkFrom(opts); err != nil {
					return err
				}
				if runF != nil {
					return runF(opts)
				}
				return importFrom(cmd.Context(), opts)
			}
			if opts.Format != "" && importers.ByName(all.Formats(), opts.Format) == nil {
				return Usagef("unknown --format %q; choose one of: %s", opts.Format, strings.Join(names, ", "))
			}
			if len(args) == 0 && opts.Format == "" {
				return Usagef("give a session PATH, or --format (one of: %s) to import the newest session of this folder", strings.Join(names, ", "))
			}
			if opts.Watch && len(args) > 1 {
				return Usagef("--watch follows one session; give one PATH")
			}
			if runF != nil {
				return runF(opts)
			}
			return importRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "", "the format of every PATH: `NAME` ("+strings.Join(names, "|")+"); default: detected")
	cmd.Flags().BoolVar(&opts.Strict, "strict", false, "fail on a malformed line instead of reporting it and going on")
	cmd.Flags().BoolVar(&opts.Watch, "watch", false, "keep importing as the session grows, until Ctrl-C")
	cmd.Flags().StringVar(&opts.Project, "project", "", "read the sessions' instruction files (CLAUDE.md, AGENTS.md, sub-agent definitions) from `DIR`; default: the current folder, for a session that ran there")
	addFromFlags(cmd, opts)
	cmd.RegisterFlagCompletionFunc("format", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func importRun(ctx context.Context, opts *ImportOptions) error {
	formats := all.Formats()
	paths := opts.Paths
	if len(paths) == 0 {
		loc, ok := importers.ByName(formats, opts.Format).(importers.Locator)
		if !ok {
			return Usagef("--format %s cannot find sessions by itself; give the session's PATH", opts.Format)
		}
		cwd, err := opts.Getwd()
		if err != nil {
			return fmt.Errorf("find the current folder: %w", err)
		}
		p, err := loc.Newest(cwd, opts.F.Getenv)
		if err != nil {
			return &UsageError{Err: err}
		}
		paths = []string{p}
	}
	// Every path is checked before anything is imported.
	chosen := make([]importers.Format, len(paths))
	var databases []string
	for i, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return Usagef("no file %q to import; give the path of a session file", p)
		}
		if !fi.Mode().IsRegular() && !fi.IsDir() { // a FIFO is not opened: it would wait for a writer
			return Usagef("%s is not a regular file (a FIFO, a socket or a device); give the path of a session file", p)
		}
		if opts.Format == "" && store.IsDatabase(p) {
			databases = append(databases, p)
			continue
		}
		if opts.Format != "" {
			chosen[i] = importers.ByName(formats, opts.Format)
			continue
		}
		f, err := importers.Detect(formats, p)
		if err != nil {
			return &UsageError{Err: err}
		}
		chosen[i] = f
	}
	if len(databases) > 0 {
		if len(databases) != len(paths) || opts.Watch {
			return Usagef("give inspect databases to merge, or sessions to import, in separate commands (without --watch for a database)")
		}
		return mergeDatabases(ctx, opts, databases)
	}
	opt, err := importOptions(opts)
	if err != nil {
		return err
	}
	db, err := opts.F.Store(ctx)
	if err != nil {
		return err
	}
	policy, err := opts.F.Config()
	if err != nil {
		return err
	}
	if patterns := policy.ResearchPatterns(); patterns != nil {
		opt.Research = func(tool string) bool { return importers.MatchResearch(patterns, tool) }
	}
	if opts.Watch {
		fmt.Fprintf(opts.F.IO.ErrOut, "watching %s; Ctrl-C stops\n", paths[0])
		return importers.Watch(ctx, db, chosen[0], paths[0], opt, opts.Poll, func(res []importers.Result, err error) {
			if err != nil {
				fmt.Fprintf(opts.F.IO.ErrOut, "%s: %v (retrying when it changes)\n", time.Now().Format("15:04:05"), err)
				return
			}
			printImported(opts, res)
		})
	}
	// Each run's line is printed as it is written (the progress of a file
	// of many runs); only the last run's id is kept, for the hints.
	last := ""
	for i, p := range paths {
		err := importers.ImportEach(ctx, db, chosen[i], p, opt, func(r importers.Result) error {
			printResult(opts, &r)
			last = r.RunID
			return nil
		})
		if err != nil {
			if opts.Strict && !errors.Is(err, context.Canceled) {
				return &UsageError{Err: err}
			}
			return err
		}
	}
	if last != "" {
		fmt.Fprintf(opts.F.IO.ErrOut, "next: %s\n", hint(opts.F.DBPath, "graph", last))
		fmt.Fprintf(opts.F.IO.ErrOut, "next: %s\n", hint(opts.F.DBPath, "audit", last))
	}
	return nil
}

// importOptions are the importers' options of opts: --strict, and the
// project folder (--project, checked; the current folder as Here).
func importOptions(opts *ImportOptions) (importers.Options, error) {
	opt := importers.Options{Strict: opts.Strict}
	if opts.Project != "" {
		abs, err := filepath.Abs(opts.Project)
		if err != nil {
			return opt, Usagef("--project %s: %v", opts.Project, err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return opt, Usagef("--project %s is not a folder; give the project folder that holds the session's instruction files", opts.Project)
		}
		opt.Project = abs
	}
	if opts.Getwd != nil {
		if here, err := opts.Getwd(); err == nil {
			if abs, err := filepath.Abs(here); err == nil {
				opt.Here = abs
			}
		}
	}
	return opt, nil
}

// mergeDatabases copies every run of each inspect database in paths into
// the --db database: a run it already has (the same id, or the same
// imported session) stays as it is.
func mergeDatabases(ctx context.Context, opts *ImportOptions, paths []string) error {
	for _, p := range paths {
		if abs, _ := filepath.Abs(p); abs != "" {
			if mine, _ := filepath.Abs(opts.F.DBPath); mine == abs {
				return Usagef("%s is the database runs are merged into (--db); merge another file", p)
			}
		}
	}
	db, err := opts.F.Store(ctx)
	if err != nil {
		return err
	}
	merged, known := 0, 0
	for _, p := range paths {
		src, err := opts.F.ReadStore(ctx, p)
		if err != nil {
			return &UsageError{Err: fmt.Errorf("%s is a SQLite file inspect cannot merge: %w", p, err)}
		}
		runs, err := src.Runs(ctx, 0)
		if err != nil {
			return err
		}
		ids := make([]string, len(runs))
		for i := range runs {
			ids[len(runs)-1-i] = runs[i].ID // oldest first, as they were recorded
		}
		copied, err := store.CopyRuns(ctx, db, src, ids)
		for _, c := range copied {
			if c.Skipped != "" {
				known++
				who := "run " + c.ID
				if !store.ValidRunID(c.ID) { // the reason quotes it
					who = "a run"
				}
				fmt.Fprintf(opts.F.IO.Out, "%s from %s: %s\n", who, p, c.Skipped)
				continue
			}
			merged++
			fmt.Fprintf(opts.F.IO.Out, "merged run %s from %s · %d nodes\n", c.ID, p, c.Nodes)
		}
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(opts.F.IO.ErrOut, "%s: %d %s merged, %d not (already there, or still running)\n", opts.F.DBPath, merged, plural(merged, "run", "runs"), known)
	fmt.Fprintf(opts.F.IO.ErrOut, "next: %s\n", hint(opts.F.DBPath, "runs"))
	return nil
}

// maxProblems is how many malformed lines are listed one by one.
const maxProblems = 10

// printImported prints one line per run, then what was skipped or could
// not be read.
func printImported(opts *ImportOptions, res []importers.Result) {
	for i := range res {
		printResult(opts, &res[i])
	}
}

// printResult prints one run's line, then what its import skipped or
// could not read.
func printResult(opts *ImportOptions, r *importers.Result) {
	io := opts.F.IO
	src := r.Source.Format
	if r.Source.Version != "" {
		src += " " + r.Source.Version
	}
	secrets := ""
	if n := r.Redacted.Total(); n > 0 {
		secrets = fmt.Sprintf(" · %d %s redacted", n, plural(n, "secret", "secrets"))
	}
	fmt.Fprintf(io.Out, "imported run %s · %s · session %s · %s · %d %s · %d nodes%s\n", r.RunID, src, r.Source.ID, r.Status,
		r.Conversations, plural(r.Conversations, "conversation", "conversations"), r.Nodes, secrets)
	if n := r.Redacted.Total(); n > 0 {
		fmt.Fprintf(io.ErrOut, "  redacted %d %s the session held (%s): stored, shown and exported as [redacted]\n",
			n, plural(n, "value that looks like a secret", "values that look like secrets"), r.Redacted.Rules())
	}
	if n := len(r.Report.Skipped); n > 0 {
		total := 0
		kinds := make([]string, 0, n)
		for k, c := range r.Report.Skipped {
			total += c
			kinds = append(kinds, fmt.Sprintf("%s ×%d", k, c))
		}
		sort.Strings(kinds)
		// not all unknown types: a result without its call, a duplicate
		// span, a cut value, joined traces are counted here too
		fmt.Fprintf(io.ErrOut, "  skipped or adjusted %d %s of %d %s: %s\n", total, plural(total, "record", "records"), n, plural(n, "kind", "kinds"), strings.Join(kinds, ", "))
	}
	for i, p := range r.Report.Problems {
		if i == maxProblems {
			fmt.Fprintf(io.ErrOut, "  … and %d more malformed lines\n", len(r.Report.Problems)-maxProblems)
			break
		}
		fmt.Fprintf(io.ErrOut, "  %s\n", problemLine(p))
	}
}

// problemLine is one problem of an import's report: FILE:LINE: WHY, or
// FILE: WHY for a problem of a whole file (Line 0), which has no line 0.
func problemLine(p importers.Problem) string {
	if p.Line <= 0 {
		return fmt.Sprintf("%s: %s", p.File, p.Err)
	}
	return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Err)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
