// Package analysis is the one place every front end — cmd/inspect, web
// and mcpserver — opens a recorded run and analyses it (DESIGN §2): the
// run's graph, its prompt-cache analysis, its audit under the team's
// policy, one node's full view, and a diff against another run. The front
// ends keep only their flags, formats, pages and wording.
//
// An Analyzer reads runs through a Source (package analysis/storesrc
// adapts a runs database; tests may give any implementation) under one
// Policy, what `.inspect.yaml` says (PolicyOf): thresholds and rules,
// prices, ignore entries, the cache lifetime. Everything derived from the
// policy is derived here once: the cache options every analysis of a run
// uses (Policy.CacheOptions), the findings.Config of every audit (Run.Audit),
// the diff.Side of every comparison (Run.Side). A run's stack profile
// (package stack) is picked from its source and handed to the audit.
//
//	a := analysis.NewFiles(open, ".inspect/runs.db", policy)
//	r, err := a.Open(ctx, "base.db:latest", analysis.LoadBrief)
//	rep, err := r.Audit(ctx, nil)          // findings.Report
//	c, err := r.Cache(ctx)                 // cache.Report, full
//	v, err := a.Node(ctx, "latest", 7, analysis.NodeOptions{Cache: true})
//	d, err := analysis.Diff(ctx, &diff.Config{}, base, r)
//
// It knows no SQL: `go list -deps ./analysis` holds neither database/sql
// nor a SQLite driver.
package analysis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// Source is what an Analyzer reads one runs database through.
// storesrc.New adapts a *store.DB opened read-only; every method only
// reads. Errors for a run or node it does not have wrap ErrNotFound.
type Source interface {
	// LoadRun, ScanNodes, LastSeq and ScanNodesRange read a run and its
	// nodes (graph.Load reads halves at once through them).
	graph.RangeSource
	// RequestParts and ScanMessages read a run's stored requests as the
	// prompt-cache analysis needs them.
	cache.Source
	// Runs lists every run, newest first.
	Runs(ctx context.Context) ([]RunSummary, error)
	// PageRuns reads one page of the runs q selects, in q's order,
	// reading that page's rows, not every run; Facets what the filters of
	// a list of runs offer.
	PageRuns(ctx context.Context, q RunQuery) (*RunPage, error)
	Facets(ctx context.Context) (*RunFacets, error)
	// Resolve turns a run reference (an id, a unique prefix of one, or
	// "latest") into a run id.
	Resolve(ctx context.Context, ref string) (string, error)
	// Node reads node seq of run r alone.
	Node(ctx context.Context, r *record.Run, seq int64) (*record.Node, error)
	// JoinOf is the join node closing fork node forkSeq, nil while open.
	JoinOf(ctx context.Context, r *record.Run, forkSeq int64) (*record.Node, error)
	// ScanNodesTo is ScanNodes of the nodes up to and including seq last.
	ScanNodesTo(ctx context.Context, r *record.Run, last int64, fn func(*record.Node) error) error
	// CallWindow is the first seq of what llm node n's neighbourhood in
	// time reaches: the llm node before n in its conversation and every
	// llm node before n that ended from since up to n's start, each with
	// the fork node its conversation hangs from (n's too); n.Seq when none
	// is there. It reads by index, not the nodes between.
	CallWindow(ctx context.Context, r *record.Run, n *record.Node, since time.Time) (int64, error)
	// NearestNodes are the (at most) k nodes of run nearest to seq, in
	// seq order, and the run's last seq: for the message about a node
	// that does not exist.
	NearestNodes(ctx context.Context, run string, seq int64, k int) ([]NodeBrief, int64, error)
	// Request and RequestFrame are llm node seq's stored request, whole
	// and without its conversation (model, tools, options, system
	// prompt); Response its stored response. Each is nil, with no error,
	// when none was recorded.
	Request(ctx context.Context, run string, seq int64) ([]byte, error)
	RequestFrame(ctx context.Context, run string, seq int64) ([]byte, error)
	Response(ctx context.Context, run string, seq int64) ([]byte, error)
	// Asks are the questions put to node seq, oldest first.
	Asks(ctx context.Context, run string, seq int64) ([]Ask, error)
}

// ErrNotFound is what a Source wraps for a run or node it does not have.
var ErrNotFound = errors.New("not found")

// ErrNoRuns is what a Source wraps, besides ErrNotFound, when "latest" is
// asked of a database that holds no run yet: a caller can say how to
// record a first one (the MCP server names its tools) without reading the
// store's errors.
var ErrNoRuns = errors.New("no runs yet")

// ErrNoRequest is what an audit reads for an llm node without a stored
// request ("n3: no recorded request", as the store says it).
var ErrNoRequest = errors.New("no recorded request")

// RunSummary is one run as a list of runs shows it.
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

// RunOrder is what a page of runs is ordered by.
type RunOrder string

// The orders of a page of runs.
const (
	OrderStarted RunOrder = "started" // when it started (the default)
	OrderElapsed RunOrder = "elapsed" // its wall time
	OrderTokens  RunOrder = "tokens"  // tokens in and out
	OrderNodes   RunOrder = "nodes"   // its nodes
	OrderStatus  RunOrder = "status"  // its status as read
)

// RunQuery selects one page of a list of runs.
type RunQuery struct {
	// Status, Source and Agent keep runs of that status (as read), source
	// format, or with a node of that agent; "" keeps all.
	Status record.Status
	Source string
	Agent  string
	// Text keeps runs whose id, project, tasks or agents contain it (ASCII
	// letters case folded).
	Text string
	// Order is what the page is ordered by ("" is OrderStarted); Asc puts
	// the smallest first (the default is the largest, the newest, first).
	Order RunOrder
	Asc   bool
	// Offset skips that many runs; Limit keeps at most that many (0 = all).
	Offset, Limit int
}

// RunPage is one page of runs: its runs, how many the filters keep, and
// how many there are.
type RunPage struct {
	Runs         []RunSummary
	Matched, All int
}

// RunFacets are what the filters of a list of runs offer: the source
// formats and agents of all runs, sorted, and whether one is running.
type RunFacets struct {
	Sources []string
	Agents  []string
	Running bool
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

// NodeBrief is what a list of node references shows of each node.
type NodeBrief struct {
	Seq  int64
	Kind record.Kind
}

// Ref is a parsed run reference: [FILE.db:]RUN.
type Ref struct {
	DB  string // a database file named in the reference, or "" for the default
	Run string // latest, an id or a unique prefix
}

// ParseRef splits "[FILE.db:]RUN". A reference that is only a database
// file ("base.db") means its latest run.
func ParseRef(s string) Ref {
	if i := strings.LastIndex(s, ".db:"); i >= 0 {
		return Ref{DB: s[:i+3], Run: s[i+4:]}
	}
	if strings.HasSuffix(s, ".db") {
		return Ref{DB: s, Run: "latest"}
	}
	return Ref{Run: s}
}

// Opener opens the runs database file at path read-only as a Source. It
// says itself what a missing or unreadable file is (cmd/inspect: "no runs
// recorded yet: there is no runs database at …").
type Opener func(ctx context.Context, path string) (Source, error)

// Analyzer opens and analyses runs under one policy.
type Analyzer struct {
	// Policy is the team's policy; nil means every default.
	Policy *Policy
	// Now is the clock a running run's elapsed time is read at; nil
	// means time.Now.
	Now func() time.Time

	src  Source // New's one database
	open Opener // NewFiles' databases
	db   string // NewFiles' default database
}

// New returns an Analyzer over the one database src: a reference naming
// a database file (FILE.db:RUN) is refused (a client of `inspect mcp` or
// of the web pages cannot choose another file).
func New(src Source, p *Policy) *Analyzer { return &Analyzer{Policy: p, src: src} }

// NewFiles returns an Analyzer that opens databases with open: the one
// at defaultDB for a plain reference, the one a FILE.db:RUN reference
// names for that.
func NewFiles(open Opener, defaultDB string, p *Policy) *Analyzer {
	return &Analyzer{Policy: p, open: open, db: defaultDB}
}

func (a *Analyzer) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Analyzer) policy() *Policy {
	if a.Policy == nil {
		return &Policy{}
	}
	return a.Policy
}

// ResolveError is a run reference the database at Path (the default
// database: "" with New) does not resolve. Its text is Err's.
type ResolveError struct {
	Path string
	Ref  string
	Err  error
}

func (e *ResolveError) Error() string { return e.Err.Error() }
func (e *ResolveError) Unwrap() error { return e.Err }

// FileRefError is a FILE.db:RUN reference given to an Analyzer of one
// database (New).
type FileRefError struct{ Ref string }

func (e *FileRefError) Error() string {
	return fmt.Sprintf("run reference %q names a database file; only runs of this database can be read here (give a run id, a prefix or latest)", e.Ref)
}

// Database returns the Source a reference reads from and the path of its
// file ("" for New's database).
func (a *Analyzer) Database(ctx context.Context, ref string) (Source, string, error) {
	r := ParseRef(ref)
	if a.open == nil {
		if r.DB != "" {
			return nil, "", &FileRefError{Ref: ref}
		}
		return a.src, "", nil
	}
	path := a.db
	if r.DB != "" {
		path = r.DB
	}
	src, err := a.open(ctx, path)
	return src, path, err
}

// Resolve turns a run reference into its Source and run id.
func (a *Analyzer) Resolve(ctx context.Context, ref string) (Source, string, error) {
	src, path, err := a.Database(ctx, ref)
	if err != nil {
		return nil, "", err
	}
	id, err := src.Resolve(ctx, ParseRef(ref).Run)
	if err != nil {
		return nil, "", &ResolveError{Path: path, Ref: ref, Err: err}
	}
	return src, id, nil
}

// Runs lists the runs of the default database, newest first.
func (a *Analyzer) Runs(ctx context.Context) ([]RunSummary, error) {
	src, _, err := a.Database(ctx, "")
	if err != nil {
		return nil, err
	}
	return src.Runs(ctx)
}

// PageRuns reads one page of the runs of the default database.
func (a *Analyzer) PageRuns(ctx context.Context, q RunQuery) (*RunPage, error) {
	src, _, err := a.Database(ctx, "")
	if err != nil {
		return nil, err
	}
	return src.PageRuns(ctx, q)
}

// Facets reads what the filters of the default database's runs offer.
func (a *Analyzer) Facets(ctx context.Context) (*RunFacets, error) {
	src, _, err := a.Database(ctx, "")
	if err != nil {
		return nil, err
	}
	return src.Facets(ctx)
}

// Record reads the record of run ref (its snapshot, status and times),
// without its nodes.
func (a *Analyzer) Record(ctx context.Context, ref string) (*record.Run, error) {
	src, id, err := a.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	return src.LoadRun(ctx, id)
}

// NoNodeError is a node reference the run does not have. Its text names
// the nearest nodes the run has; it wraps ErrNotFound.
type NoNodeError struct {
	Run     string
	Seq     int64
	Nearest []NodeBrief
	Last    int64
}

func (e *NoNodeError) Error() string {
	if len(e.Nearest) == 0 {
		return fmt.Sprintf("run %s has no nodes", e.Run)
	}
	var names []string
	for _, b := range e.Nearest {
		names = append(names, fmt.Sprintf("n%d (%s)", b.Seq, b.Kind))
	}
	return fmt.Sprintf("run %s has no node n%d (it has n1..n%d); nearest: %s", e.Run, e.Seq, e.Last, strings.Join(names, ", "))
}

func (e *NoNodeError) Unwrap() error { return ErrNotFound }

// MissingNode is the NoNodeError of node seq, which run ref lacks: the
// nearest nodes it has, read by index (not by loading the run).
func (a *Analyzer) MissingNode(ctx context.Context, ref string, seq int64) error {
	src, id, err := a.Resolve(ctx, ref)
	if err != nil {
		return err
	}
	return noNode(ctx, src, id, seq)
}

// noNode is the NoNodeError of node seq of run, read from src (by index,
// not by loading the run).
func noNode(ctx context.Context, src Source, run string, seq int64) error {
	near, last, err := src.NearestNodes(ctx, run, seq, 5)
	if err != nil {
		return err
	}
	return &NoNodeError{Run: run, Seq: seq, Nearest: near, Last: last}
}
