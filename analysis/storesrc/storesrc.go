// Package storesrc reads runs for package analysis from a runs database:
// it adapts a *store.DB (opened read-only by its caller) to
// analysis.Source, so that analysis, and the front ends above it (web,
// mcpserver, cmd/inspect), never link SQL for reading a run. It only
// reads.
package storesrc

import (
	"context"
	"errors"
	"time"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
	"github.com/inspect-dev/inspect/store/layout"
)

// Source is an analysis.Source over one database.
type Source struct {
	DB *store.DB
	// Now is the clock of a running run's elapsed time in Runs; nil
	// means time.Now.
	Now func() time.Time
}

// New returns a Source over db.
func New(db *store.DB) *Source { return &Source{DB: db} }

var (
	_ analysis.Source = (*Source)(nil)
	_ analysis.Lister = (*Source)(nil)
)

func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// notFound marks the store's "no such run or node" errors as
// analysis.ErrNotFound.
func notFound(err error) error {
	var nf *store.NotFoundError
	var amb *store.AmbiguousError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNoRuns):
		return &found{err, analysis.ErrNoRuns}
	case errors.As(err, &nf), errors.As(err, &amb), errors.Is(err, store.ErrNoNode):
		return &found{err, nil}
	}
	return err
}

// found is a store error that also reads as analysis.ErrNotFound; its
// text is the store's ("no run matches …"), which cmd/inspect prints as
// it is.
// An empty database's error also reads as analysis.ErrNoRuns (also).
type found struct{ err, also error }

func (e *found) Error() string { return e.err.Error() }
func (e *found) Unwrap() []error {
	if e.also != nil {
		return []error{e.err, analysis.ErrNotFound, e.also}
	}
	return []error{e.err, analysis.ErrNotFound}
}

// Runs lists every run, newest first.
func (s *Source) Runs(ctx context.Context) ([]analysis.RunSummary, error) {
	runs, err := s.DB.Runs(ctx, 0)
	if err != nil {
		return nil, err
	}
	return s.summaries(runs), nil
}

// ListRuns lists the runs f keeps, newest first, as inspect runs does.
func (s *Source) ListRuns(ctx context.Context, f analysis.RunFilter) ([]analysis.RunSummary, error) {
	runs, err := s.DB.ListRuns(ctx, store.RunFilter{Statuses: f.Statuses, Source: f.Source, Agent: f.Agent,
		Since: f.Since, Until: f.Until, Grep: f.Grep, Tags: f.Tags, Limit: f.Limit})
	if err != nil {
		return nil, err
	}
	return s.summaries(runs), nil
}

// summaries are the store's summaries as package analysis has them.
func (s *Source) summaries(runs []store.RunSummary) []analysis.RunSummary {
	now := s.now()
	out := make([]analysis.RunSummary, len(runs))
	for i, r := range runs {
		e := r.Elapsed()
		if r.Status == record.StatusRunning && now.Sub(r.Started) > e {
			e = now.Sub(r.Started)
		}
		out[i] = analysis.RunSummary{ID: r.ID, Started: r.Started, Ended: r.Ended, Elapsed: e, Status: r.Status, Tasks: r.Tasks,
			Project: r.Project, Agents: r.Agents, TokensIn: r.TokensIn, TokensOut: r.TokensOut, LLMCalls: r.LLMCalls,
			Nodes: r.Nodes, Source: r.Source}
		if out[i].Source == "" {
			out[i].Source = record.SourceInspect
		}
	}
	return out
}

// PageRuns reads one page of runs (store.DB.PageRuns).
func (s *Source) PageRuns(ctx context.Context, q analysis.RunQuery) (*analysis.RunPage, error) {
	p, err := s.DB.PageRuns(ctx, store.RunQuery{Status: q.Status, Source: q.Source, Agent: q.Agent, Text: q.Text,
		Order: store.RunOrder(q.Order), Asc: q.Asc, Offset: q.Offset, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	return &analysis.RunPage{Runs: s.summaries(p.Runs), Matched: p.Matched, All: p.All}, nil
}

// Facets reads what the filters of a list of runs offer (store.DB.Facets).
func (s *Source) Facets(ctx context.Context) (*analysis.RunFacets, error) {
	f, err := s.DB.Facets(ctx)
	if err != nil {
		return nil, err
	}
	return &analysis.RunFacets{Sources: f.Sources, Agents: f.Agents, Running: f.Running}, nil
}

// Resolve turns a run reference into an id.
func (s *Source) Resolve(ctx context.Context, ref string) (string, error) {
	id, err := s.DB.ResolveRun(ctx, ref)
	return id, notFound(err)
}

// LoadRun reads one run's record.
func (s *Source) LoadRun(ctx context.Context, id string) (*record.Run, error) {
	r, err := s.DB.LoadRun(ctx, id)
	return r, notFound(err)
}

// ScanNodes reads run's nodes in seq order.
func (s *Source) ScanNodes(ctx context.Context, run *record.Run, fn func(*record.Node) error) error {
	return s.DB.ScanNodes(ctx, run, fn)
}

// ScanNodesTo reads run's nodes up to seq last.
func (s *Source) ScanNodesTo(ctx context.Context, run *record.Run, last int64, fn func(*record.Node) error) error {
	return s.DB.ScanNodesTo(ctx, run, last, fn)
}

// CallWindow is where llm node n's neighbourhood in time starts.
func (s *Source) CallWindow(ctx context.Context, run *record.Run, n *record.Node, since time.Time) (int64, error) {
	return s.DB.CallWindow(ctx, run, n, since)
}

// LastSeq is the seq of run's last node.
func (s *Source) LastSeq(ctx context.Context, run *record.Run) (int64, error) {
	return s.DB.LastSeq(ctx, run)
}

// ScanNodesRange reads run's nodes after seq from up to seq last.
func (s *Source) ScanNodesRange(ctx context.Context, run *record.Run, from, last int64, fn func(*record.Node) error) error {
	return s.DB.ScanNodesRange(ctx, run, from, last, fn)
}

// Node reads one node.
func (s *Source) Node(ctx context.Context, r *record.Run, seq int64) (*record.Node, error) {
	n, err := s.DB.Node(ctx, r, seq)
	return n, notFound(err)
}

// JoinOf is the join closing fork node forkSeq.
func (s *Source) JoinOf(ctx context.Context, r *record.Run, forkSeq int64) (*record.Node, error) {
	return s.DB.JoinOf(ctx, r, forkSeq)
}

// NearestNodes are the nodes of run nearest to seq.
func (s *Source) NearestNodes(ctx context.Context, run string, seq int64, k int) ([]analysis.NodeBrief, int64, error) {
	near, last, err := s.DB.NearestNodes(ctx, run, seq, k)
	if err != nil {
		return nil, 0, err
	}
	out := make([]analysis.NodeBrief, len(near))
	for i, b := range near {
		out[i] = analysis.NodeBrief{Seq: b.Seq, Kind: b.Kind}
	}
	return out, last, nil
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

// RequestFrame is node seq's request without its conversation.
func (s *Source) RequestFrame(ctx context.Context, run string, seq int64) ([]byte, error) {
	b, err := s.DB.RequestFrame(ctx, run, seq)
	if errors.Is(err, store.ErrNoRequest) {
		return nil, nil
	}
	return b, err
}

// Asks are the asks of node seq.
func (s *Source) Asks(ctx context.Context, run string, seq int64) ([]analysis.Ask, error) {
	asks, err := s.DB.Asks(ctx, run, seq)
	if err != nil {
		return nil, err
	}
	out := make([]analysis.Ask, len(asks))
	for i, a := range asks {
		out[i] = analysis.Ask{Mode: a.Mode, Question: a.Question, Answer: a.Answer, Model: a.Model, Created: a.Created, Incomplete: a.Incomplete}
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

// Opener opens database files read-only with open (cmd/inspect's, which
// opens each once and says what a missing one is) as Sources.
func Opener(open func(ctx context.Context, path string) (*store.DB, error)) analysis.Opener {
	return func(ctx context.Context, path string) (analysis.Source, error) {
		db, err := open(ctx, path)
		if err != nil {
			return nil, err
		}
		return New(db), nil
	}
}
