package mcpserver

import (
	"context"

	"github.com/inspect-dev/inspect/ask"
	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/diff"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graphjson"
)

// Backend is what the tools need of inspect: the runs of the database
// inspect mcp was started on (and of the files it allowed), their
// analyses under the team's policy, and where an ask is stored.
// cmd/inspect gives one built on the analysis package; tests give a fake.
//
// Every reference a Backend is given has been validated (RunRef, a node's
// sequence number, Threshold): it never receives a path, a flag or a file
// name a client chose, so it can neither write nor read anything the user
// did not name when starting the server.
type Backend interface {
	// Runs lists runs of the default database, newest first.
	Runs(ctx context.Context, q RunQuery) (*RunList, error)
	// Graph loads run's graph with the brief prompt-cache analysis its
	// chart's labels show.
	Graph(ctx context.Context, run RunRef) (*Graph, error)
	// Audit audits run under the policy, the thresholds of set winning
	// over the policy's.
	Audit(ctx context.Context, run RunRef, set []Threshold) (*findings.Report, error)
	// Node is node seq of run in full.
	Node(ctx context.Context, run RunRef, seq int64) (*Node, error)
	// Diff compares run new with run base, both audited under the policy.
	Diff(ctx context.Context, base, new RunRef) (*diff.Report, error)
	// Options are the audit options in force: the policy's thresholds
	// and the rules it turned off.
	Options(ctx context.Context) (*findings.Options, error)
	// AskTarget is what an ask of node seq of run (of the default
	// database) needs: the run, its recording and where to store the answer.
	AskTarget(ctx context.Context, run RunRef, seq int64) (*AskTarget, error)
}

// RunList is list_runs' result.
type RunList struct {
	// Runs are the runs that match, newest first.
	Runs []RunSummary
	// Filtered says a filter left runs out (an empty list then means no
	// match rather than no runs).
	Filtered bool
	// Notes are what the agent should know about the read (an older
	// schema read through a temporary copy, …).
	Notes []string
}

// RunSummary is one run of list_runs, in the fields of `inspect runs
// --json` (a documented interface).
type RunSummary struct {
	ID        string            `json:"id"`
	Status    string            `json:"status"`
	Started   string            `json:"started"`
	Ended     *string           `json:"ended"`
	ElapsedMS int64             `json:"elapsed_ms"`
	Agents    []string          `json:"agents"`
	TokensIn  int64             `json:"tokens_in"`
	TokensOut int64             `json:"tokens_out"`
	LLMCalls  int64             `json:"llm_calls"`
	Nodes     int64             `json:"nodes"`
	Tasks     []string          `json:"tasks"`
	Project   string            `json:"project"`
	Source    string            `json:"source"`
	Tags      map[string]string `json:"tags"`
}

// Graph is graph's result: the run and the analysis its labels show.
type Graph struct {
	Run *graph.Run
	// Cache is the brief prompt-cache analysis; nil when it failed (Notes
	// then say why, and the chart is drawn without it).
	Cache *cache.Report
	Notes []string
}

// Node is show_node's result.
type Node struct {
	// Text is the node in full as Markdown, readable as plain text: what
	// `inspect show RUN NODE` prints.
	Text string
	// JSON is the node as the graph JSON has it.
	JSON *graphjson.Node
	// Request and Response are an llm node's stored request and response
	// bodies (secrets already redacted in the store); nil when none was
	// recorded, or for another kind of node. Exact says the request was
	// stored byte for byte; else an importer rebuilt it, lacking Lacks.
	Request, Response []byte
	Exact             bool
	Lacks             []string
}

// AskTarget is what an ask needs of a run.
type AskTarget struct {
	// Run holds at least the node asked about.
	Run *graph.Run
	// Recording reads the run's requests and responses.
	Recording ask.Recording
	// Store keeps an answer (or the part of one that arrived) with the run.
	Store func(ctx context.Context, a *ask.Asked) error
}
