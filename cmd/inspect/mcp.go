package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/ask"
	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/diff"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graphjson"
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
the provider (the key comes from OPENAI_API_KEY; it costs money) and stores
the answer with the run, so leave it off unless you want the agent to spend.

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
	wd, _ := os.Getwd()
	if f.Getwd != nil {
		wd, _ = f.Getwd()
	}
	s := mcpserver.New(&mcpBackend{f: f}, mcpserver.Options{Version: version(), AllowAsk: opts.AllowAsk,
		AskKey: f.Getenv("OPENAI_API_KEY"), AskBaseURL: f.Getenv("OPENAI_BASE_URL"), AllowDB: opts.AllowDB, Dir: wd})
	tools := "list_runs, graph, audit, show_node, diff, explain_rule"
	if opts.AllowAsk {
		tools += ", ask"
	}
	fmt.Fprintf(f.IO.ErrOut, "inspect mcp: serving %s on stdio (database %s)\n", tools, f.DBPath)
	err := s.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(f.IO.In), Writer: nopWriteCloser{f.IO.Raw}})
	if err != nil && ctx.Err() != nil {
		return nil // Ctrl-C
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpBackend is inspect mcp's mcpserver.Backend: the --db database and
// the files --allow-db named, under the policy the server started with.
type mcpBackend struct{ f *Factory }

func (b *mcpBackend) Runs(ctx context.Context, q mcpserver.RunQuery) (*mcpserver.RunList, error) {
	filter := store.RunFilter{Source: q.Source, Agent: q.Agent, Grep: q.Grep, Since: q.Since, Until: q.Until, Tags: q.Tags, Limit: q.Limit}
	for _, s := range q.Statuses {
		filter.Statuses = append(filter.Statuses, record.Status(s))
	}
	list := &mcpserver.RunList{Filtered: filter.Filtered()}
	if dbExists(b.f.DBPath) != nil {
		return list, nil
	}
	db, err := b.f.ReadStore(ctx, b.f.DBPath)
	if err != nil {
		return nil, err
	}
	runs, err := db.ListRuns(ctx, filter)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	for _, r := range runs {
		j := mcpserver.RunSummary{ID: r.ID, Status: string(r.Status), Started: r.Started.UTC().Format(time.RFC3339Nano),
			ElapsedMS: liveElapsed(&r, now).Milliseconds(), Agents: nonNil(r.Agents), TokensIn: r.TokensIn, TokensOut: r.TokensOut,
			LLMCalls: r.LLMCalls, Nodes: r.Nodes, Tasks: nonNil(r.Tasks), Project: r.Project, Source: r.Source, Tags: r.Tags}
		if j.Tags == nil {
			j.Tags = map[string]string{}
		}
		if !r.Ended.IsZero() {
			e := r.Ended.UTC().Format(time.RFC3339Nano)
			j.Ended = &e
		}
		list.Runs = append(list.Runs, j)
	}
	return list, nil
}

func (b *mcpBackend) Graph(ctx context.Context, run mcpserver.RunRef) (*mcpserver.Graph, error) {
	o := briefCache(b.f)
	_, g, reqs, readErr, err := loadGraphRequests(ctx, b.f, run.String(), o)
	if err != nil {
		return nil, err
	}
	out := &mcpserver.Graph{Run: g}
	if readErr == nil {
		out.Cache, readErr = cache.AnalyzeRequests(g, reqs, o)
	}
	if readErr != nil {
		out.Cache = nil
		out.Notes = append(out.Notes, fmt.Sprintf("note: the prompt-cache analysis failed (%v); the graph is drawn without it", readErr))
	}
	return out, nil
}

func (b *mcpBackend) audit(ctx context.Context, ref string, set []mcpserver.Threshold) (*graph.Run, *findings.Report, error) {
	var sets []string
	for _, t := range set {
		sets = append(sets, t.String())
	}
	o, policy, err := auditOptions(b.f, sets)
	if err != nil {
		return nil, nil, err
	}
	co := briefCache(b.f)
	db, g, reqs, readErr, err := loadGraphRequests(ctx, b.f, ref, co)
	if err != nil {
		return nil, nil, err
	}
	cfg := auditConfig(ctx, db, g, reqs, readErr, co)
	applyPolicy(cfg, o, policy)
	rep, err := cfg.Audit(g)
	return g, rep, err
}

func (b *mcpBackend) Audit(ctx context.Context, run mcpserver.RunRef, set []mcpserver.Threshold) (*findings.Report, error) {
	_, rep, err := b.audit(ctx, run.String(), set)
	return rep, err
}

func (b *mcpBackend) Node(ctx context.Context, run mcpserver.RunRef, seq int64) (*mcpserver.Node, error) {
	db, g, err := loadGraph(ctx, b.f, run.String())
	if err != nil {
		return nil, err
	}
	n := g.Node(seq)
	if n == nil {
		return nil, unknownNodeIn(ctx, db, g.ID, seq)
	}
	co := &cache.Options{}
	if policy, err := b.f.Config(); err == nil {
		co.Prices = policy.Prices
		if d, _, ok := policy.Lifetime(); ok {
			co.Lifetime = d
		}
	}
	var md strings.Builder
	if err := writeNode(ctx, &md, db, g.Run, n, co); err != nil {
		return nil, err
	}
	out := &mcpserver.Node{Text: md.String()}
	for _, j := range graphjson.New(g).Nodes {
		if j.Seq == seq {
			out.JSON = &j
			break
		}
	}
	return out, nil
}

func (b *mcpBackend) Diff(ctx context.Context, base, new mcpserver.RunRef) (*diff.Report, error) {
	side := func(r mcpserver.RunRef) (diff.Side, error) {
		g, rep, err := b.audit(ctx, r.String(), nil)
		if err != nil {
			return diff.Side{}, err
		}
		return diff.Side{Ref: r.String(), Run: g, Report: rep}, nil
	}
	bs, err := side(base)
	if err != nil {
		return nil, err
	}
	ns, err := side(new)
	if err != nil {
		return nil, err
	}
	return (&diff.Config{}).Compare(bs, ns)
}

func (b *mcpBackend) Options(context.Context) (*findings.Options, error) {
	o, _, err := auditOptions(b.f, nil)
	return o, err
}

func (b *mcpBackend) AskTarget(ctx context.Context, run mcpserver.RunRef, seq int64) (*mcpserver.AskTarget, error) {
	if run.DB != "" {
		return nil, errors.New("internal error: an ask in another database")
	}
	db, id, err := openRun(ctx, b.f, run.Run)
	if err != nil {
		return nil, err
	}
	r, n, err := readNode(ctx, db, id, seq)
	if err != nil {
		return nil, err
	}
	var g *graph.Run
	if n.Kind == record.KindLLM {
		g, err = graph.Build(r, []*record.Node{n.Node})
	} else {
		g, err = graph.Load(ctx, db, id) // the error names the nearest model calls
	}
	if err != nil {
		return nil, err
	}
	return &mcpserver.AskTarget{Run: g, Recording: db, Store: func(ctx context.Context, a *ask.Asked) error {
		wdb, err := b.f.StoreAt(ctx, b.f.DBPath)
		if err != nil {
			return err
		}
		return wdb.AddAsk(ctx, &store.Ask{RunID: g.ID, NodeSeq: seq, Mode: string(a.Mode), Question: a.Question,
			Answer: a.Answer, Model: a.Model, BaseURL: a.BaseURL, Incomplete: a.Incomplete})
	}}, nil
}
