package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/mcpserver"
)

// MCPOptions are the inputs of `inspect mcp`.
type MCPOptions struct {
	F        *Factory
	AllowAsk bool
}

// NewCmdMCP builds `inspect mcp`. runF replaces the action in tests.
func NewCmdMCP(f *Factory, runF func(*MCPOptions) error) *cobra.Command {
	opts := &MCPOptions{F: f}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve inspect to a coding agent over MCP (stdio)",
		Long: `Run a Model Context Protocol server on stdin and stdout, so a coding agent
(Claude Code, Codex, Cursor, …) reads recorded runs itself. Its tools:
list_runs, graph, audit, show_node, diff and explain_rule, each running the
inspect command of that name on the --db database with the repository's
.inspect.yaml (or --config FILE); each result is the command's text, for the
agent to read, and its JSON as structured content. With --allow-ask it adds
ask, which sends a recorded request with a question to the provider (the key
comes from OPENAI_API_KEY; it costs money), so leave it off unless you want
the agent to spend.

The client starts it; it runs until the client closes stdin. How to add it to
the agents people use, and a guide for the agent: docs/agents.md.`,
		Example: `  claude mcp add inspect -- inspect mcp --db .inspect/runs.db
  codex mcp add inspect -- inspect mcp
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
	return cmd
}

func mcpRun(ctx context.Context, opts *MCPOptions) error {
	if _, err := opts.F.Config(); err != nil {
		return err // a broken policy file is said now, not at every call
	}
	f := opts.F
	runner := func(ctx context.Context, args []string) (string, string, int) {
		var out, errOut bytes.Buffer
		g := NewFactory(&IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, NoColor: true, Width: 100}, f.Getenv)
		g.DBPath, g.Getwd = f.DBPath, f.Getwd
		if f.ConfigPath != "" {
			args = append([]string{"--config", f.ConfigPath}, args...)
		}
		code := run(ctx, g, args)
		return out.String(), errOut.String(), code
	}
	s := mcpserver.New(runner, mcpserver.Options{Version: version(), AllowAsk: opts.AllowAsk})
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
