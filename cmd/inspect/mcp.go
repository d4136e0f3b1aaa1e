package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/analysis/storesrc"
	"github.com/inspect-dev/inspect/ask"
	"github.com/inspect-dev/inspect/mcpserver"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// MCPOptions are the inputs of `inspect mcp`.
type MCPOptions struct {
	F        *Factory
	AllowAsk bool
	// AllowDB are database files besides --db whose runs a client may
	// name as FILE.db:RUN.
	AllowDB []string
}

// NewCmdMCP builds `inspect mcp`. runF replaces the action in tests.
func NewCmdMCP(f *Factory, runF func(*MCPOptions) error) *cobra.Command {
	opts := &MCPOptions{F: f}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve inspect to a coding agent over MCP (stdio)",
		Long: `Run a Model Context Protocol server on stdin and stdout, so a coding agent
(Claude Code, Codex, Cursor, …) reads recorded runs itself. Its tools:
list_runs, graph, audit, show_node, diff and explain_rule, each reading the
--db database under the repository's .inspect.yaml (or --config FILE); each
result is the text inspect prints, for the agent to read, and the same
result's JSON as structured content. The tools take runs (latest, an id or
a prefix), nodes (n<seq>), rules and thresholds, never a file: the agent
cannot choose another database, another policy, an output file or the
provider. --allow-db FILE (repeatable) lets it name the runs of that file
too, as FILE:RUN (a baseline database to diff against), read-only. With
--allow-ask it adds ask, which sends a recorded request with a question to
the run's provider (the key comes from ANTHROPIC_API_KEY or OPENAI_API_KEY,
as the run's API reads it; it costs money) and stores the answer with the
run, so leave it off unless you want the agent to spend.

The client starts it; it runs until the client closes stdin. How to add it to
the agents people use, and a guide for the agent: docs/agents.md.`,
		Example: `  claude mcp add inspect -- inspect mcp --db .inspect/runs.db
  codex mcp add inspect -- inspect mcp
  inspect mcp --allow-db ci/baseline.db   # diff against baseline.db's runs too
  inspect mcp --allow-ask            # lets the agent put questions to recorded calls`,
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return mcpRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.AllowAsk, "allow-ask", false, "add the ask tool: the agent may send recorded requests with its questions to the provider")
	cmd.Flags().StringArrayVar(&opts.AllowDB, "allow-db", nil, "let the agent read the runs of database `FILE` too, as FILE:RUN (repeatable)")
	return cmd
}

func mcpRun(ctx context.Context, opts *MCPOptions) error {
	f := opts.F
	if _, err := f.Config(); err != nil {
		return err // a broken policy file is said now, not at every call
	}
	for _, p := range opts.AllowDB {
		if !strings.HasSuffix(p, ".db") {
			return Usagef("--allow-db %s: a database file's name ends in .db (the agent names its runs FILE.db:RUN)", p)
		}
		if err := dbExists(p); err != nil {
			return Usagef("--allow-db %s: no such database file", p)
		}
	}
	wd, err := os.Getwd()
	if f.Getwd != nil {
		wd, err = f.Getwd()
	}
	if err != nil {
		return err
	}
	b := &mcpserver.Analysis{
		Analyzer: mcpAnalyzer(f, wd, opts.AllowDB, lenientPolicy(f)),
		Policy: func(set []mcpserver.Threshold) (*analysis.Policy, error) {
			var sets []string
			for _, t := range set {
				sets = append(sets, t.String())
			}
			return policy(f, sets)
		},
		List: func(ctx context.Context, q mcpserver.RunQuery) (*mcpserver.RunList, error) { return mcpRuns(ctx, f, q) },
		NodeText: func(v *analysis.NodeView) string {
			var md strings.Builder
			writeNode(&md, v)
			return md.String()
		},
		StoreAsk: func(ctx context.Context, run string, seq int64, a *ask.Asked) error {
			db, err := f.StoreAt(ctx, f.DBPath)
			if err != nil {
				return err
			}
			return db.AddAsk(ctx, &store.Ask{RunID: run, NodeSeq: seq, Mode: string(a.Mode), Question: a.Question,
				Answer: a.Answer, Model: a.Model, BaseURL: a.BaseURL, Incomplete: a.Incomplete})
		},
	}
	s := mcpserver.New(b, mcpserver.Options{Version: version(), AllowAsk: opts.AllowAsk,
		AskEnv: f.Getenv, AllowDB: opts.AllowDB, Dir: wd})
	tools := "list_runs, graph, audit, show_node, diff, explain_rule"
	if opts.AllowAsk {
		tools += ", ask"
	}
	fmt.Fprintf(f.IO.ErrOut, "inspect mcp: serving %s on stdio (database %s)\n", tools, f.DBPath)
	// its messages are data: as they are to a client, JSON-escaped on a terminal
	err = s.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(f.IO.In), Writer: nopWriteCloser{f.IO.Data()}})
	if err != nil && ctx.Err() != nil {
		return nil // Ctrl-C
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpAnalyzer opens --db's database and the --allow-db files, read-only,
// and no other: mcpserver gives it only references to those, and a path
// that is neither is refused here too.
func mcpAnalyzer(f *Factory, wd string, allowDB []string, p *analysis.Policy) *analysis.Analyzer {
	abs := func(path string) string {
		if !filepath.IsAbs(path) {
			path = filepath.Join(wd, path)
		}
		return filepath.Clean(path)
	}
	allowed := map[string]bool{abs(f.DBPath): true}
	for _, a := range allowDB {
		allowed[abs(a)] = true
	}
	return analysis.NewFiles(func(ctx context.Context, path string) (analysis.Source, error) {
		if !allowed[abs(path)] {
			return nil, fmt.Errorf("internal error: %s is not a database inspect mcp was started with", path)
		}
		if err := dbExists(path); err != nil {
			return nil, err
		}
		db, err := f.ReadStore(ctx, path)
		if err != nil {
			return nil, err
		}
		return storesrc.New(db), nil
	}, f.DBPath, p)
}

// mcpRuns is list_runs: the runs of --db's database that q keeps, as
// `inspect runs --json` has them.
func mcpRuns(ctx context.Context, f *Factory, q mcpserver.RunQuery) (*mcpserver.RunList, error) {
	filter := store.RunFilter{Source: q.Source, Agent: q.Agent, Grep: q.Grep, Since: q.Since, Until: q.Until, Tags: q.Tags, Limit: q.Limit}
	for _, s := range q.Statuses {
		filter.Statuses = append(filter.Statuses, record.Status(s))
	}
	list := &mcpserver.RunList{Filtered: filter.Filtered()}
	if dbExists(f.DBPath) != nil { // a missing file lists no runs, and is not created
		return list, nil
	}
	db, err := f.ReadStore(ctx, f.DBPath)
	if err != nil {
		return nil, err
	}
	runs, err := db.ListRuns(ctx, filter)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	for i := range runs {
		list.Runs = append(list.Runs, runSummaryJSON(&runs[i], now))
	}
	return list, nil
}
