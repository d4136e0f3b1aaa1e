package analysis

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/diff"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/stack"
)

// Load says what Open reads beside a run's graph, at the same time.
type Load int

// What Open reads.
const (
	// LoadGraph reads the graph alone (inspect timeline); an analysis
	// asked for later reads the requests then.
	LoadGraph Load = iota
	// LoadBrief also reads the stored requests for the brief cache
	// analysis: a graph's labels, the audit, a diff.
	LoadBrief
	// LoadCache also reads them for the full cache analysis (inspect
	// cache): the same read, which serves both (the full analysis reads
	// the few message bytes more it quotes when it runs).
	LoadCache
)

// Run is one opened run: its graph, and the analyses of it, each made
// once on first use and kept (safe for concurrent use).
type Run struct {
	// Graph is the run's graph; ReadAt is when it was read.
	Graph *graph.Run
	// Ref is the reference the run was opened with.
	Ref string
	// Profile is the terms of the stack the run came from.
	Profile *stack.Profile

	src    Source
	id     string
	policy *Policy

	// the stored requests, read once (beside the graph when Open was told
	// to) for every cache analysis, brief and full
	reqsOnce sync.Once
	reqs     *cache.Requests
	reqsErr  error

	briefOnce, fullOnce sync.Once
	brief, full         *cache.Report
	briefErr, fullErr   error

	auditOnce sync.Once
	audit     *findings.Report
	auditErr  error
}

// Open resolves run reference ref and loads its graph, reading what load
// says beside it.
func (a *Analyzer) Open(ctx context.Context, ref string, load Load) (*Run, error) {
	src, id, err := a.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	r := &Run{Ref: ref, src: src, id: id, policy: a.policy()}
	var eg errgroup.Group
	var graphSrc graph.Source = src
	if load != LoadGraph {
		// the run's record first: its stack says what the requests read
		// beside the graph leave out of their comparison
		rec, err := src.LoadRun(ctx, id)
		if err != nil {
			return nil, err
		}
		graphSrc, r.Profile = recorded{src, rec}, stack.For(rec.Source)
	}
	eg.Go(func() error {
		var err error
		r.Graph, err = graph.Load(ctx, graphSrc, id)
		return err
	})
	if load != LoadGraph {
		// cache.Read needs no graph: it reads while the graph loads (its
		// error is the analyses')
		eg.Go(func() error {
			_, _ = r.requests(ctx)
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	r.Graph.ReadAt = a.now() // a running run's elapsed time is live
	r.Profile = stack.For(r.Graph.Source)
	return r, nil
}

// OpenRecord loads the graph of run rec, read already from the database
// of ref (the web pages read a run's record first to know whether it
// changed); nothing is read beside it.
func (a *Analyzer) OpenRecord(ctx context.Context, ref string, rec *record.Run) (*Run, error) {
	src, _, err := a.Database(ctx, ref)
	if err != nil {
		return nil, err
	}
	g, err := graph.Load(ctx, recorded{src, rec}, rec.ID)
	if err != nil {
		return nil, err
	}
	g.ReadAt = a.now()
	return &Run{Graph: g, Ref: ref, Profile: stack.For(rec.Source), src: src, id: rec.ID, policy: a.policy()}, nil
}

// recorded is a Source whose run record is read already.
type recorded struct {
	Source
	r *record.Run
}

func (s recorded) LoadRun(context.Context, string) (*record.Run, error) { return s.r, nil }

// Policy is the policy the run is analysed under.
func (r *Run) Policy() *Policy { return r.policy }

// Source is the database the run was read from.
func (r *Run) Source() Source { return r.src }

// requests are the run's stored requests as the cache analyses read them,
// read once, each without what its stack's provider leaves out of the
// prefix it compares (r.Profile, set before they are read).
func (r *Run) requests(ctx context.Context) (*cache.Requests, error) {
	r.reqsOnce.Do(func() {
		o := r.policy.CacheOptions()
		o.Stack = r.Profile
		r.reqs, r.reqsErr = cache.Read(ctx, r.src, r.id, nil, o)
	})
	return r.reqs, r.reqsErr
}

// Cache is the run's prompt-cache analysis in full (`inspect cache`, the
// web pages), with Policy.CacheOptions.
func (r *Run) Cache(ctx context.Context) (*cache.Report, error) {
	r.fullOnce.Do(func() { r.full, r.fullErr = r.analyseCache(ctx, r.policy.CacheOptions()) })
	return r.full, r.fullErr
}

// BriefCache is the brief prompt-cache analysis (no break naming) a
// graph's labels and the audit read, with Policy.CacheOptions. It and
// Cache may run at once: they read the requests once.
func (r *Run) BriefCache(ctx context.Context) (*cache.Report, error) {
	r.briefOnce.Do(func() { r.brief, r.briefErr = r.analyseCache(ctx, r.policy.briefOptions()) })
	return r.brief, r.briefErr
}

func (r *Run) analyseCache(ctx context.Context, o *cache.Options) (*cache.Report, error) {
	reqs, err := r.requests(ctx)
	if err != nil {
		return nil, err
	}
	return cache.AnalyzeRequests(ctx, r.Graph, reqs, o)
}

// Audit audits the run under the policy: its thresholds and rules, prices
// and ignore entries, the requests and frames the cause checks read, the
// brief cache analysis cache.unstable-prefix reads (what `inspect audit`
// reads, so every front end's audit is the same; it needs no break names,
// so it need not wait for a full analysis made beside it) and the run's
// stack profile. baseline, when set, marks the findings an earlier audit
// had.
//
// The audit without a baseline is made once and kept (a diff of the run
// reads the same report).
func (r *Run) Audit(ctx context.Context, baseline *findings.Baseline) (*findings.Report, error) {
	if baseline != nil {
		return r.auditConfig(ctx, baseline).Audit(r.Graph)
	}
	r.auditOnce.Do(func() { r.audit, r.auditErr = r.auditConfig(ctx, nil).Audit(r.Graph) })
	return r.audit, r.auditErr
}

// auditConfig is the findings.Config of every audit: built here alone.
func (r *Run) auditConfig(ctx context.Context, baseline *findings.Baseline) *findings.Config {
	p, id := r.policy, r.Graph.ID
	return &findings.Config{
		Rules:    rules.All,
		Policy:   p.Name,
		Options:  p.Options,
		Prices:   p.Prices,
		Ignore:   p.Ignore,
		Now:      p.Now,
		Baseline: baseline,
		Profile:  r.Profile,
		Requests: func(seq int64) ([]byte, error) { return stored(r.src.Request(ctx, id, seq))(seq) },
		Frames: func(seq int64) ([]byte, error) {
			if b, ok := r.frame(ctx, seq); ok {
				return b, nil
			}
			return stored(r.src.RequestFrame(ctx, id, seq))(seq)
		},
		Cache: func() (*cache.Report, error) { return r.BriefCache(ctx) },
	}
}

// frame is llm node seq's request frame from the requests read for the
// cache analyses, when they hold it (no query of its own).
func (r *Run) frame(ctx context.Context, seq int64) ([]byte, bool) {
	reqs, err := r.requests(ctx)
	if err != nil {
		return nil, false
	}
	return reqs.Frame(seq)
}

// stored turns a Source's "none recorded" (nil, nil) into ErrNoRequest,
// worded as the store words it.
func stored(b []byte, err error) func(seq int64) ([]byte, error) {
	return func(seq int64) ([]byte, error) {
		if err == nil && b == nil {
			return nil, fmt.Errorf("n%d: %w", seq, ErrNoRequest)
		}
		return b, err
	}
}

// Side is the run as one side of a comparison: audited under the policy,
// named by the reference it was opened with.
func (r *Run) Side(ctx context.Context) (diff.Side, error) {
	rep, err := r.Audit(ctx, nil)
	if err != nil {
		return diff.Side{}, err
	}
	return diff.Side{Ref: r.Ref, Run: r.Graph, Report: rep}, nil
}

// Diff compares run new with run base under cfg (its limits and
// --fail-on), each audited under its Analyzer's policy.
func Diff(ctx context.Context, cfg *diff.Config, base, new *Run) (*diff.Report, error) {
	b, err := base.Side(ctx)
	if err != nil {
		return nil, err
	}
	n, err := new.Side(ctx)
	if err != nil {
		return nil, err
	}
	return cfg.Compare(b, n)
}

// MissingNode is the NoNodeError of node seq, which the run does not
// have, read by index.
func (r *Run) MissingNode(ctx context.Context, seq int64) error {
	return noNode(ctx, r.src, r.Graph.ID, seq)
}
