package analysis

import (
	"context"
	"errors"
	"time"

	"github.com/inspect-dev/inspect/fleet"
	"github.com/inspect-dev/inspect/record"
)

// RunFilter selects runs as `inspect runs` and `inspect fleet` do (the
// store's filter, without SQL): every field left zero keeps all.
type RunFilter struct {
	// Statuses keeps runs with one of these statuses.
	Statuses []record.Status
	// Source keeps runs of this source format ("inspect", "otlp", …).
	Source string
	// Agent keeps runs in which this agent owned a node.
	Agent string
	// Since and Until keep runs started at or after Since and before Until.
	Since, Until time.Time
	// Grep keeps runs whose id, project, tasks or tags contain it, case
	// folded.
	Grep string
	// Tags keeps runs carrying every one of these tags; an empty value
	// asks only for the key.
	Tags map[string]string
	// Limit keeps at most this many, newest first; 0 = all.
	Limit int
}

// Lister is what a Source gives to list runs by a RunFilter
// (storesrc.Source has it); ErrNoFilter is what an Analyzer over a Source
// without it answers.
type Lister interface {
	ListRuns(ctx context.Context, f RunFilter) ([]RunSummary, error)
}

// ErrNoFilter is the error of ListRuns over a Source that cannot filter.
var ErrNoFilter = errors.New("this database cannot list runs by filter")

// ListRuns lists the runs of the default database f keeps, newest first.
func (a *Analyzer) ListRuns(ctx context.Context, f RunFilter) ([]RunSummary, error) {
	src, _, err := a.Database(ctx, "")
	if err != nil {
		return nil, err
	}
	l, ok := src.(Lister)
	if !ok {
		return nil, ErrNoFilter
	}
	return l.ListRuns(ctx, f)
}

// FleetQuery is what Fleet audits.
type FleetQuery struct {
	// Filter selects the runs; its Since and Until are the window (Until
	// zero with a Since: Now), whose previous window of the same length
	// is listed too, for the trend.
	Filter RunFilter
	// Examples is how many example runs a row keeps (0: the default).
	Examples int
	// Progress, when set, is told before each run is audited.
	Progress func(done, total int)
}

// Fleet audits every run q selects, one at a time (the memory of one run
// and of the counts, whatever their number: package fleet), as `inspect
// fleet` and the fleet page do. A run that cannot be opened or audited
// is noted as failed, not counted; only ctx ending stops it.
func (a *Analyzer) Fleet(ctx context.Context, q FleetQuery) (*fleet.Fleet, error) {
	win := fleet.Window{From: q.Filter.Since, Until: q.Filter.Until}
	if !win.From.IsZero() && win.Until.IsZero() {
		win.Until = a.now()
	}
	agg := fleet.New(win, q.Examples)
	f := q.Filter
	rng := agg.Range()
	f.Since, f.Until = rng.From, rng.Until
	list, err := a.ListRuns(ctx, f)
	if err != nil {
		return nil, err
	}
	for i, r := range list {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if q.Progress != nil {
			q.Progress(i, len(list))
		}
		run, err := a.Open(ctx, r.ID, LoadBrief)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			agg.Fail(r.ID, err)
			continue
		}
		rep, err := run.Audit(ctx, nil)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			agg.Fail(r.ID, err)
			continue
		}
		agg.Add(fleet.Run{ID: r.ID, Source: r.Source, Started: r.Started}, rep)
	}
	return agg, nil
}
