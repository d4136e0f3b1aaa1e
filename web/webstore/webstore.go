// Package webstore serves the web pages from a runs database: it adapts a
// *store.DB (opened read-only by its caller) to web.Source, so that
// package web itself never links SQL. It only reads.
package webstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
	"github.com/inspect-dev/inspect/store/layout"
	"github.com/inspect-dev/inspect/web"
)

// Source is a web.Source over one database.
type Source struct {
	DB *store.DB
	// Now is the clock of a running run's elapsed time; nil means time.Now.
	Now func() time.Time
}

// New returns a Source over db.
func New(db *store.DB) *Source { return &Source{DB: db} }

var _ web.Source = (*Source)(nil)

func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// notFound marks the store's "no such run or node" errors as web.ErrNotFound.
func notFound(err error) error {
	var nf *store.NotFoundError
	var amb *store.AmbiguousError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf), errors.As(err, &amb), errors.Is(err, store.ErrNoNode), errors.Is(err, store.ErrNoRuns):
		return fmt.Errorf("%w: %w", web.ErrNotFound, err)
	}
	return err
}

// Runs lists every run, newest first.
func (s *Source) Runs(ctx context.Context) ([]web.RunSummary, error) {
	runs, err := s.DB.Runs(ctx, 0)
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := make([]web.RunSummary, len(runs))
	for i, r := range runs {
		e := r.Elapsed()
		if r.Status == record.StatusRunning && now.Sub(r.Started) > e {
			e = now.Sub(r.Started)
		}
		out[i] = web.RunSummary{ID: r.ID, Started: r.Started, Ended: r.Ended, Elapsed: e, Status: r.Status, Tasks: r.Tasks,
			Project: r.Project, Agents: r.Agents, TokensIn: r.TokensIn, TokensOut: r.TokensOut, LLMCalls: r.LLMCalls,
			Nodes: r.Nodes, Source: r.Source}
		if out[i].Source == "" {
			out[i].Source = record.SourceInspect
		}
	}
	return out, nil
}

// Resolve turns a run reference into an id.
func (s *Source) Resolve(ctx context.Context, ref string) (string, error) {
	id, err := s.DB.ResolveRun(ctx, ref)
	return id, notFound(err)
}

// Run reads one run's record.
func (s *Source) Run(ctx context.Context, id string) (*record.Run, error) {
	r, err := s.DB.LoadRun(ctx, id)
	return r, notFound(err)
}

// Graph loads run r's nodes into a graph.
func (s *Source) Graph(ctx context.Context, r *record.Run) (*graph.Run, error) {
	var nodes []*record.Node
	if err := s.DB.ScanNodes(ctx, r, func(n *record.Node) error {
		nodes = append(nodes, n)
		return nil
	}); err != nil {
		return nil, err
	}
	return graph.Build(r, nodes)
}

// Node reads one node.
func (s *Source) Node(ctx context.Context, r *record.Run, seq int64) (*record.Node, error) {
	n, err := s.DB.Node(ctx, r, seq)
	return n, notFound(err)
}

// Request is the stored request body of node seq.
func (s *Source) Request(ctx context.Context, run string, seq int64) ([]byte, error) {
	b, err := s.DB.Request(ctx, run, seq)
	if errors.Is(err, store.ErrNoRequest) {
		return nil, nil
	}
	return b, err
}

// Response is the stored response body of node seq.
func (s *Source) Response(ctx context.Context, run string, seq int64) ([]byte, error) {
	return s.DB.Response(ctx, run, seq)
}

// Asks are the asks of node seq.
func (s *Source) Asks(ctx context.Context, run string, seq int64) ([]web.Ask, error) {
	asks, err := s.DB.Asks(ctx, run, seq)
	if err != nil {
		return nil, err
	}
	out := make([]web.Ask, len(asks))
	for i, a := range asks {
		out[i] = web.Ask{Mode: a.Mode, Question: a.Question, Answer: a.Answer, Model: a.Model, Created: a.Created, Incomplete: a.Incomplete}
	}
	return out, nil
}

// RequestParts reads run's stored requests for the cache analysis.
func (s *Source) RequestParts(ctx context.Context, run string, seqs []int64, data bool) (layout.Links, []layout.RequestParts, error) {
	return s.DB.RequestParts(ctx, run, seqs, data)
}

// ScanMessages reads message links with their bytes for the cache analysis.
func (s *Source) ScanMessages(ctx context.Context, ids []int64, link func(layout.MessageLink) error) error {
	return s.DB.ScanMessages(ctx, ids, link)
}

// RequestFrame is node seq's request without its conversation.
func (s *Source) RequestFrame(ctx context.Context, run string, seq int64) ([]byte, error) {
	b, err := s.DB.RequestFrame(ctx, run, seq)
	if errors.Is(err, store.ErrNoRequest) {
		return nil, nil
	}
	return b, err
}
