// Package web is `inspect serve` and `inspect report` (DESIGN §16): a
// local web UI over recorded runs, and the same run page as one
// self-contained HTML file for CI artifacts.
//
// Pages: the runs (newest first, filtered by status, source, agent and
// text, updated live while a run records), a run (its graph as SVG with pan
// and zoom; a timeline with one lane per conversation, the slowest branch
// and the critical path marked, hand-offs as markers; the findings, each
// marking its nodes in graph and timeline; grades; cache figures), a node
// (the request folded by system prompt, tools and messages, the response,
// usage, asks; whether the request is exact or reconstructed), and a diff
// of two runs, and the fleet: the audit of many runs at once, per rule ×
// agent × source (inspect fleet, package fleet), under the run filters of
// the command line. Deep links: /runs/<id>, /runs/<id>/nodes/n7,
// /diff?base=<id>&new=<id>, /fleet?since=7d&source=otlp (&format=json:
// the JSON of inspect fleet --format json).
//
// It renders what graph, mermaid (the chart and its collapsing),
// timeline, findings and diff give it, opening and analysing runs through
// package analysis (under the team's Policy) over a Source; it knows no
// SQL (analysis/storesrc adapts the store). Every page is html/template
// with its CSS and script embedded in the binary and inlined in the page
// under a Content-Security-Policy that allows only their hashes: no CDN,
// no network, no inline script from content, so a page works offline and
// from file://. Untrusted text (tasks, prompts, tool traffic, names) is
// only ever written by html/template; even the graph's SVG is rebuilt from
// Graphviz's output, element by element, through the templates.
package web

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/cache/report"
	"github.com/inspect-dev/inspect/chart"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/internal/hostcheck"
	"github.com/inspect-dev/inspect/mermaid"
	"github.com/inspect-dev/inspect/mermaid/render"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/timeline"
)

// Options configure a Server.
type Options struct {
	// Mounts are extra handlers served beside the pages, each on an
	// http.ServeMux pattern (`inspect serve --otlp` mounts the OTLP
	// receiver on "/v1/traces"). They get the request as it came, without
	// the page headers, but behind the same Hosts check: a page that
	// rebinds a DNS name to 127.0.0.1 cannot post to them either.
	Mounts []Mount
	// Hosts, when set, are the only Host header names (without port) the
	// pages answer; others get 403. A server on loopback sets its loopback
	// names, so a web page that rebinds a DNS name to 127.0.0.1 cannot read
	// the runs.
	Hosts []string
	// Policy is the team's policy (`.inspect.yaml` as cmd/inspect reads
	// it) every audit and cache analysis of the pages runs under; nil
	// means the defaults.
	Policy *analysis.Policy
	// Poll is how often a page asks for news while a run records; 0 means 2s.
	Poll time.Duration
	// Now is the clock (tests inject it); nil means time.Now.
	Now func() time.Time
	// Log receives errors the pages could only show as 500; nil discards.
	Log *log.Logger
	// Open, when set, opens the database the pages read: it did not exist
	// when the server started (`inspect serve` before the first run), so
	// New's Source is an empty one, and the runs page calls Open on each
	// visit until it returns a Source, then reads that.
	Open func(ctx context.Context) (Source, error)
	// DBFlag is what the empty runs page's commands add to name the
	// database ("--db PATH" quoted for a shell, or "" for the default).
	DBFlag string
	// Progressive is the run size, in nodes, from which a run's page opens
	// with its graph and timeline and fetches the audit and cache figures
	// once they are computed; 0 means 10,000.
	Progressive int
}

// Mount is one extra handler of a Server.
type Mount struct {
	Pattern string
	Handler http.Handler
}

// Server serves the pages of one Source.
type Server struct {
	an   atomic.Pointer[analysis.Analyzer] // swapped once when Options.Open opens the database
	opts Options
	mux  *http.ServeMux

	mu    sync.Mutex
	cache []*cached // most recently used last

	openMu sync.Mutex
	isOpen bool // Options.Open has opened the database

	fleetSem chan struct{} // one fleet audit at a time
}

// setSource makes the pages read src.
func (s *Server) setSource(src Source) {
	an := analysis.New(src, s.opts.Policy)
	an.Now = s.opts.Now
	s.an.Store(an)
}

// analyzer is what the pages read through.
func (s *Server) analyzer() *analysis.Analyzer { return s.an.Load() }

// opened calls Options.Open while the database does not exist yet and
// reads it once it does.
func (s *Server) opened(ctx context.Context) {
	s.openMu.Lock()
	defer s.openMu.Unlock()
	if s.opts.Open == nil || s.isOpen {
		return
	}
	if src, err := s.opts.Open(ctx); err == nil && src != nil {
		s.setSource(src)
		s.isOpen = true
	}
}

// maxCached is how many analysed runs a server keeps.
const maxCached = 6

// New returns a Server reading src.
func New(src Source, o Options) *Server {
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Progressive <= 0 {
		o.Progressive = progressiveNodes
	}
	s := &Server{opts: o, mux: http.NewServeMux(), fleetSem: make(chan struct{}, 1)}
	s.setSource(src)
	page := func(h func(http.ResponseWriter, *http.Request) error) http.Handler {
		return s.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := h(w, r); err != nil {
				s.fail(w, r, err)
			}
		}))
	}
	s.mux.Handle("GET /{$}", page(s.runsPage))
	s.mux.Handle("GET /runs/{id}", page(s.runPage))
	s.mux.Handle("GET /runs/{id}/state", page(s.runState))
	s.mux.Handle("GET /runs/{id}/report.html", page(s.reportFile))
	s.mux.Handle("GET /runs/{id}/nodes/{node}", page(s.nodePage))
	s.mux.Handle("GET /runs/{id}/part/{part}", page(s.runPart))
	s.mux.Handle("GET /runs/{id}/findings", page(s.findingsPage))
	s.mux.Handle("GET /diff", page(s.diffPage))
	s.mux.Handle("GET /fleet", page(s.fleetPage))
	s.mux.Handle("/", page(func(w http.ResponseWriter, r *http.Request) error {
		return notFound("there is no page %s", r.URL.Path)
	}))
	for _, m := range o.Mounts {
		s.mux.Handle(m.Pattern, s.hostCheck(m.Handler))
	}
	return s
}

// ServeHTTP serves the pages and the mounted handlers.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// hostCheck refuses a request addressed to a name not in Options.Hosts.
func (s *Server) hostCheck(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(s.opts.Hosts) > 0 && !hostcheck.Allowed(r.Host, s.opts.Hosts) {
			http.Error(w, "inspect serve answers only requests addressed to "+strings.Join(s.opts.Hosts, ", ")+
				"; open the address it printed", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// guard checks the Host header and sets the headers every page carries.
func (s *Server) guard(h http.Handler) http.Handler {
	return s.hostCheck(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", policy(false)+"; frame-ancestors 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	}))
}

// policy is the Content-Security-Policy of every page: only the embedded
// stylesheet and script, by hash; images only as data: URLs (the icon);
// fetches only to the server itself, and none from a file (a report).
func policy(file bool) string {
	connect := "'self'"
	if file {
		connect = "'none'"
	}
	return fmt.Sprintf("default-src 'none'; script-src '%s'; style-src '%s'; img-src data:; connect-src %s; base-uri 'none'; form-action 'self'",
		assets().jsHash, assets().cssHash, connect)
}

func hashOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(h[:])
}

// httpError is an error with the status a page answers it with.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func notFound(format string, args ...any) error {
	return &httpError{http.StatusNotFound, fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// fail answers err as a page: 404 and 400 say what to do; anything else
// is a 500 that is logged.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := http.StatusInternalServerError, "inspect could not read this: "+err.Error()
	var he *httpError
	switch {
	case errors.As(err, &he):
		status, msg = he.status, he.msg
	case errors.Is(err, ErrNotFound):
		status, msg = http.StatusNotFound, err.Error()
	case errors.Is(err, context.Canceled):
		return
	default:
		if s.opts.Log != nil {
			s.opts.Log.Printf("%s %s: %v", r.Method, r.URL.Path, err)
		}
	}
	w.WriteHeader(status)
	_ = s.render(w, "error", &errorPage{pageData: s.base("Not shown", "error"), Status: status, Message: msg})
}

// cached is one analysed run.
type cached struct {
	key  string
	once sync.Once
	a    *analysed
	err  error
}

// analysed is everything the run page shows of one run. The graph, its
// chart and timeline come first; the audit and the prompt-cache analysis
// may follow (a large run's page opens before they are in, and fetches
// them as parts): auditDone and cacheDone are closed once each is in.
type analysed struct {
	run   *analysis.Run
	g     *graph.Run
	chart *chart.Chart
	tl    *timeline.Timeline
	svg   *svgElem
	// svgErr says why the graph could not be drawn (the page says so).
	svgErr error

	auditDone, cacheDone chan struct{}
	// later starts the audit of a large run (once): after its page is
	// written, or when something waits for it. Its full cache analysis
	// starts as soon as its graph is in.
	later func()
	rep   *findings.Report
	// repErr says why the audit is missing.
	repErr error
	// cache is the prompt-cache analysis; cacheErr says why it is missing.
	cache    *cache.Report
	cacheErr error
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// audited reports whether the audit is in; cached whether the cache
// analysis is; ready whether both are.
func (a *analysed) audited() bool { return closed(a.auditDone) }
func (a *analysed) cached() bool  { return closed(a.cacheDone) }
func (a *analysed) ready() bool   { return a.audited() && a.cached() }

// start starts the audit and cache analysis if they wait to be started.
func (a *analysed) start() {
	if a.later != nil {
		a.later()
	}
}

// wait starts the audit and the cache analysis and waits for the channels.
func (a *analysed) wait(ctx context.Context, chans ...chan struct{}) error {
	a.start()
	if len(chans) == 0 {
		chans = []chan struct{}{a.auditDone, a.cacheDone}
	}
	for _, c := range chans {
		select {
		case <-c:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// progressiveNodes is Options.Progressive's default: a smaller run's page
// has its audit and cache figures at once (and the graph's labels carry
// each call's reusable share).
const progressiveNodes = 10_000

// analyse loads, charts and draws run id, and audits it — once per run
// state: a run that has ended is kept (the most recent few), one still
// recording is analysed afresh, whole, on every request.
func (s *Server) analyse(ctx context.Context, id string) (*analysed, error) {
	r, err := s.analyzer().Record(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Status == record.StatusRunning {
		return s.build(ctx, r, false)
	}
	key := fmt.Sprintf("%s/%s/%d", r.ID, r.Status, r.Ended.UnixNano())
	s.mu.Lock()
	var c *cached
	for i, e := range s.cache {
		if e.key == key {
			c = e
			s.cache = append(append(s.cache[:i:i], s.cache[i+1:]...), e)
			break
		}
	}
	if c == nil {
		c = &cached{key: key}
		s.cache = append(s.cache, c)
		if len(s.cache) > maxCached {
			s.cache = s.cache[1:]
		}
	}
	s.mu.Unlock()
	// A page closed while the run is analysed does not spoil the entry.
	c.once.Do(func() { c.a, c.err = s.build(context.WithoutCancel(ctx), r, true) })
	if c.err != nil {
		s.mu.Lock()
		for i, e := range s.cache {
			if e == c {
				s.cache = append(s.cache[:i:i], s.cache[i+1:]...)
				break
			}
		}
		s.mu.Unlock()
	}
	return c.a, c.err
}

// build analyses run r. With later, a large run's audit and cache analysis
// run after it returns.
func (s *Server) build(ctx context.Context, r *record.Run, later bool) (*analysed, error) {
	run, err := s.analyzer().OpenRecord(ctx, r.ID, r)
	if err != nil {
		return nil, err
	}
	g := run.Graph
	a := &analysed{run: run, g: g, auditDone: make(chan struct{}), cacheDone: make(chan struct{})}
	var cacheOnce sync.Once
	fullCache := func() {
		// A request the analysis cannot read leaves the page without
		// cache figures (it says why), not without the run.
		cacheOnce.Do(func() {
			a.cache, a.cacheErr = run.Cache(ctx)
			close(a.cacheDone)
		})
	}
	slow := func() {
		// The full cache analysis and the audit (which reads the brief
		// one, as inspect audit does) at once, each part shown when it is
		// in.
		var wg sync.WaitGroup
		wg.Go(fullCache)
		if a.rep, a.repErr = run.Audit(ctx, nil); a.repErr != nil {
			a.repErr = fmt.Errorf("audit run %s: %w", g.ID, a.repErr)
		}
		close(a.auditDone)
		wg.Wait()
	}
	progressive := later && len(g.Nodes) >= s.opts.Progressive
	mc := &mermaid.Config{Hooks: true}
	if progressive {
		// The full cache analysis, the later part, starts now that the
		// graph is in: reading the requests, its first and longest step,
		// takes the core the chart and the drawing leave (one each).
		go fullCache()
	} else {
		slow()
		mc.Notes = report.Notes(a.cache)
	}
	a.chart = mc.Chart(g)
	a.tl = timeline.Build(a.chart)
	a.svg, a.svgErr = drawGraph(ctx, mc, g)
	if progressive {
		// the audit not before the page is out: it would take the CPU the
		// page's rendering needs
		var once sync.Once
		a.later = func() { once.Do(func() { go slow() }) }
	}
	return a, nil
}

// base is the data every page shares.
func (s *Server) base(title, page string) pageData {
	return pageData{Title: title, Page: page, Poll: s.opts.Poll.Milliseconds()}
}

// resolve turns the {id} of a path into a run id; a prefix or "latest"
// redirects to the page of the full id.
func (s *Server) resolve(w http.ResponseWriter, r *http.Request) (string, bool, error) {
	ref := r.PathValue("id")
	_, id, err := s.analyzer().Resolve(r.Context(), ref)
	if err != nil {
		return "", false, err
	}
	if id != ref {
		u := *r.URL
		u.Path = "/runs/" + id + strings.TrimPrefix(r.URL.Path, "/runs/"+ref)
		http.Redirect(w, r, u.String(), http.StatusFound)
		return "", false, nil
	}
	return id, true, nil
}

// writePage renders a template into the response with the page headers.
func (s *Server) writePage(w http.ResponseWriter, name string, data any) error {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return s.render(w, name, data)
}

// Warm prepares the first page a user is likely to open: it compiles
// Graphviz (the first drawing of a process pays for it), parses the page
// templates and analyses the latest run, so that `inspect serve` then a
// browser shows it at once. It returns when done; errors are left for the
// page to show.
func (s *Server) Warm(ctx context.Context) {
	_ = render.SVG(ctx, []byte("digraph { a }"), io.Discard)
	_, _ = parsePages()
	if _, id, err := s.analyzer().Resolve(ctx, "latest"); err == nil {
		_, _ = s.analyse(ctx, id)
	}
}
