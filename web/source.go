package web

import (
	"context"
	"errors"
	"time"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// Source is what the pages read: runs, their graphs, and the bodies and
// asks of single nodes. webstore.New adapts a read-only *store.DB to it;
// tests may give any implementation. Every method only reads.
type Source interface {
	// Runs lists every run, newest first.
	Runs(ctx context.Context) ([]RunSummary, error)
	// Resolve turns a run reference (an id, a unique prefix of one, or
	// "latest") into a run id; an unknown one is an error wrapping
	// ErrNotFound.
	Resolve(ctx context.Context, ref string) (string, error)
	// Run reads one run's record (its snapshot, status and times) without
	// its nodes; an unknown id is an error wrapping ErrNotFound.
	Run(ctx context.Context, id string) (*record.Run, error)
	// Graph loads the nodes of run r into a graph.
	Graph(ctx context.Context, r *record.Run) (*graph.Run, error)
	// Node reads node seq of run r alone (a missing one wraps ErrNotFound).
	Node(ctx context.Context, r *record.Run, seq int64) (*record.Node, error)
	// Request and Response are the stored bodies of llm node seq (nil when
	// none was recorded).
	Request(ctx context.Context, run string, seq int64) ([]byte, error)
	Response(ctx context.Context, run string, seq int64) ([]byte, error)
	// RequestFrame is llm node seq's request without its conversation
	// (model, tools, options, system prompt), what the audit's cause
	// checks read.
	RequestFrame(ctx context.Context, run string, seq int64) ([]byte, error)
	// Asks are the questions put to node seq, oldest first.
	Asks(ctx context.Context, run string, seq int64) ([]Ask, error)
	// RequestParts reads a run's stored requests as the prompt-cache
	// analysis needs them (cache.Source).
	cache.Source
}

// ErrNotFound is what a Source wraps for a run or node it does not have;
// the pages answer 404.
var ErrNotFound = errors.New("not found")

// RunSummary is one row of the runs page.
type RunSummary struct {
	ID      string
	Started time.Time
	Ended   time.Time // zero while running
	// Elapsed is the run's wall time (for a running run, up to now).
	Elapsed   time.Duration
	Status    record.Status
	Tasks     []string
	Project   string
	Agents    []string
	TokensIn  int64
	TokensOut int64
	LLMCalls  int64
	Nodes     int64
	// Source is the source format: "inspect" or an importer's name.
	Source string
}

// Ask is one question put to a recorded model call (`inspect ask`).
type Ask struct {
	Mode     string // question, replay, prompt
	Question string
	Answer   string
	Model    string
	Created  time.Time
	// Incomplete says why Answer is not the whole answer; "" when it is.
	Incomplete string
}
