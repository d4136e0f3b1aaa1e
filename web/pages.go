package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/diff"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// runsPerPage is the length of one page of the runs list.
const runsPerPage = 50

// runsPage is the list of runs, one page of it.
type runsPage struct {
	pageData
	Runs     []RunSummary
	All      int
	Matched  int
	Statuses []string
	Sources  []string
	Agents   []string
	// The filters in force.
	Status, Source, Agent, Q string
	// The order in force (a column's key, "asc" or "desc") and the page.
	Sort, Dir string
	PageN     int
	Pages     int
	From, To  int
	Heads     []sortHead
	Running   bool
	Now       time.Time
	// DBFlag names the database in the empty page's commands.
	DBFlag string
}

// sortHead is a column header that orders the list.
type sortHead struct {
	Label string
	Key   string
	Right bool
	// ARIA is the column's aria-sort; Href orders by it (the other way
	// when it is the order in force).
	ARIA string
	Href string
}

// runColumns are the columns the runs list orders by, with the direction
// each starts in.
var runColumns = []struct {
	label, key, dir string
	right           bool
}{
	{"Started", "started", "desc", false}, {"Status", "status", "asc", false}, {"Elapsed", "elapsed", "desc", true},
	{"Tokens in / out", "tokens", "desc", true}, {"Nodes", "nodes", "desc", true},
}

// query is the runs list's address with the filters in force and vals.
func (p *runsPage) query(vals ...string) string {
	q := url.Values{}
	for k, v := range map[string]string{"status": p.Status, "source": p.Source, "agent": p.Agent, "q": p.Q, "sort": p.Sort, "dir": p.Dir} {
		if v != "" {
			q.Set(k, v)
		}
	}
	for i := 0; i+1 < len(vals); i += 2 {
		q.Del(vals[i])
		if vals[i+1] != "" {
			q.Set(vals[i], vals[i+1])
		}
	}
	if q.Get("sort") == "started" && q.Get("dir") == "desc" {
		q.Del("sort")
		q.Del("dir")
	}
	if len(q) == 0 {
		return "/"
	}
	return "/?" + q.Encode()
}

// PageHref is the address of page n of the list in force.
func (p *runsPage) PageHref(n int) string {
	if n <= 1 {
		return p.query()
	}
	return p.query("page", strconv.Itoa(n))
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) error {
	s.opened(r.Context())
	ctx := r.Context()
	q := r.URL.Query()
	p := &runsPage{pageData: s.base("runs", "runs"), Status: q.Get("status"), Source: q.Get("source"),
		Agent: q.Get("agent"), Q: strings.TrimSpace(q.Get("q")), Sort: q.Get("sort"), Dir: q.Get("dir"), PageN: 1,
		Now: s.opts.Now(), DBFlag: s.opts.DBFlag}
	if p.Sort == "" {
		p.Sort = "started"
	}
	known := false
	for _, c := range runColumns {
		if c.key == p.Sort {
			known = true
			if p.Dir == "" {
				p.Dir = c.dir
			}
		}
	}
	if !known {
		return badRequest("the runs cannot be sorted by %q: sort by started, status, elapsed, tokens or nodes", p.Sort)
	}
	if p.Dir != "asc" && p.Dir != "desc" {
		return badRequest("dir %q is neither asc nor desc", p.Dir)
	}
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return badRequest("page %q is not a page number", v)
		}
		p.PageN = n
	}
	for _, st := range record.Statuses {
		p.Statuses = append(p.Statuses, string(st))
	}
	facets, err := s.analyzer().Facets(ctx)
	if err != nil {
		return err
	}
	p.Sources, p.Agents, p.Running = facets.Sources, facets.Agents, facets.Running
	list, err := s.analyzer().PageRuns(ctx, analysis.RunQuery{Status: record.Status(p.Status), Source: p.Source, Agent: p.Agent, Text: p.Q,
		Order: analysis.RunOrder(p.Sort), Asc: p.Dir == "asc", Offset: (p.PageN - 1) * runsPerPage, Limit: runsPerPage})
	if err != nil {
		return err
	}
	p.Runs, p.All, p.Matched = list.Runs, list.All, list.Matched
	p.Pages = max(1, (p.Matched+runsPerPage-1)/runsPerPage)
	if p.PageN > p.Pages && q.Get("fragment") == "" {
		return notFound("there is no page %d: %d runs make %d pages", p.PageN, p.Matched, p.Pages)
	}
	if len(p.Runs) > 0 {
		p.From, p.To = (p.PageN-1)*runsPerPage+1, (p.PageN-1)*runsPerPage+len(p.Runs)
	}
	for _, c := range runColumns {
		h := sortHead{Label: c.label, Key: c.key, Right: c.right, ARIA: "none", Href: p.query("sort", c.key, "dir", c.dir)}
		if c.key == p.Sort {
			h.ARIA = map[string]string{"asc": "ascending", "desc": "descending"}[p.Dir]
			h.Href = p.query("sort", c.key, "dir", map[string]string{"asc": "desc", "desc": "asc"}[p.Dir])
		}
		p.Heads = append(p.Heads, h)
	}
	p.Live = p.Running
	if q.Get("fragment") == "rows" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		t, err := page("runs")
		if err != nil {
			return err
		}
		return t.ExecuteTemplate(w, "listing", p)
	}
	return s.writePage(w, "runs", p)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// nodePage is one node in full.
type nodePage struct {
	pageData
	RunID     string
	RunTitle  string
	Node      *record.Node
	ID        string
	Where     string
	At        time.Duration
	Dur       time.Duration
	Open      bool
	Prev      string
	Next      string
	LLM       *llmView
	ArgsJSON  string
	ForkJoin  string
	Asks      []Ask
	RunSource string
	Cache     *callCache
}

type llmView struct {
	Model        string
	Calls        string
	Usage        record.Usage
	Attempts     int
	Exact        bool
	Lacks        []string
	Source       string
	RequestBytes int
	Request      *chat.Request
	RequestRaw   string
	RequestErr   string
	System       string
	Tools        []toolView
	Messages     []messageView
	Response     *chat.Response
	ResponseRaw  string
	ResponseNote string
	UsageJSON    string
	RespCalls    []callView
}

type toolView struct {
	Name        string
	Description string
	Params      string
}

type messageView struct {
	N       int
	Role    string
	Name    string
	Text    string
	Calls   []callView
	CallID  string
	IsError bool
	Parts   []string
	System  bool
	Open    bool
}

type callView struct {
	Name string
	ID   string
	Args string
}

func (s *Server) nodePage(w http.ResponseWriter, r *http.Request) error {
	id, ok, err := s.resolve(w, r)
	if err != nil || !ok {
		return err
	}
	seq, err := parseNode(r.PathValue("node"))
	if err != nil {
		return err
	}
	ctx := r.Context()
	v, err := s.analyzer().Node(ctx, id, seq, analysis.NodeOptions{})
	if err != nil {
		return err
	}
	if v.LLM != nil {
		// the run's analysis (kept for the run page too) holds the call's
		// cache figures; without it the node is shown all the same
		if a, err := s.analyse(ctx, id); err == nil && a.cached() && a.cache != nil {
			v.Cache = &analysis.NodeCache{Report: a.cache}
		}
	}
	p := nodeOf(v, id, seq)
	p.pageData = s.base(fmt.Sprintf("n%d of run %s", seq, id), "node")
	return s.writePage(w, "node", p)
}

// nodeOf is node seq of run id as its page shows it (without the page's
// pageData).
func nodeOf(v *analysis.NodeView, id string, seq int64) *nodePage {
	run, n := v.Run, v.Node.Node
	p := &nodePage{RunID: id, Node: n, ID: fmt.Sprintf("n%d", seq),
		Where: "trunk", At: n.Started.Sub(run.Started), Dur: n.Duration(), Open: n.Ended.IsZero(), RunSource: run.Source.Format, Asks: v.Asks}
	if len(run.Tasks) > 0 {
		p.RunTitle = oneLine(run.Tasks[0], 80)
	}
	if n.Branch != "" {
		p.Where = "branch " + n.Branch
	}
	if seq > 1 {
		p.Prev = fmt.Sprintf("n%d", seq-1)
	}
	if v.Next {
		p.Next = fmt.Sprintf("n%d", seq+1)
	}
	switch n.Kind {
	case record.KindLLM:
		p.LLM = llmViewOf(v)
		if v.Cache != nil {
			p.Cache = callCacheOf(v.Cache.Call(seq), v.Cache.Report)
		}
	case record.KindTool:
		if n.Tool != nil {
			p.ArgsJSON = prettyJSON(n.Tool.Args)
		}
	}
	return p
}

// llmViewOf is the page's view of an llm node's call.
func llmViewOf(nv *analysis.NodeView) *llmView {
	c, n := nv.LLM, nv.Node
	v := &llmView{Exact: c.Exact, Calls: c.Choice, Lacks: c.Lacks}
	if l := n.LLM; l != nil {
		v.Model, v.Usage, v.Attempts = l.Model, l.Usage, l.Attempts
	}
	if !v.Exact {
		v.Source = nv.Run.Source.Format
	}
	body := c.Body
	v.RequestBytes = len(body)
	if len(body) > 0 {
		if c.RequestErr != nil {
			v.RequestErr = c.RequestErr.Error()
			v.RequestRaw = prettyJSON(string(body))
		} else {
			req := c.Request
			v.Request, v.System = req, req.System
			for _, t := range req.Tools {
				v.Tools = append(v.Tools, toolView{t.Name, t.Description, prettyJSON(string(t.Parameters))})
			}
			for i, m := range req.Messages {
				mv := messageView{N: i + 1, Role: m.Role, Name: m.Name, Text: m.Text, CallID: m.CallID, IsError: m.IsError,
					System: m.Role == "system" || m.Role == "developer"}
				for _, c := range m.Calls {
					mv.Calls = append(mv.Calls, callView{c.Name, c.ID, prettyJSON(c.Arguments)})
				}
				for _, part := range m.Parts {
					if part.Text == "" {
						mv.Parts = append(mv.Parts, part.Type)
					}
				}
				mv.Open = i >= len(req.Messages)-3 && !mv.System
				v.Messages = append(v.Messages, mv)
			}
		}
	}
	resp := c.ResponseBody
	if len(resp) > 0 {
		if c.Failed || c.ResponseErr != nil {
			v.ResponseRaw = prettyJSON(string(resp))
			v.ResponseNote = fmt.Sprintf("%d bytes, as received", len(resp))
			if c.Failed {
				v.ResponseNote = "the failed call's response, " + v.ResponseNote
			}
		} else {
			rd := c.Response
			v.Response = rd
			for _, c := range rd.Message.Calls {
				v.RespCalls = append(v.RespCalls, callView{c.Name, c.ID, prettyJSON(c.Arguments)})
			}
			if len(rd.UsageJSON) > 0 {
				v.UsageJSON = prettyJSON(string(rd.UsageJSON))
			}
		}
	} else if n.LLM != nil && n.LLM.Content != "" {
		v.Response = &chat.Response{Message: chat.Message{Role: "assistant", Text: n.LLM.Content}}
	}
	return v
}

// prettyJSON indents JSON text, or returns s unchanged when it is not JSON.
// The HTML escapes Go's encoder writes (\u003c, \u003e, \u0026) are shown
// as the characters they stand for: the page escapes them itself.
func prettyJSON(s string) string {
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(s), "", "  ") != nil {
		return s
	}
	return unescapeHTMLEscapes(buf.String())
}

// unescapeHTMLEscapes turns \u003c, \u003e and \u0026 in JSON text into <, >
// and &, leaving every other escape (an escaped backslash included) as it is.
func unescapeHTMLEscapes(s string) string {
	if !strings.Contains(s, `\u00`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if rest := s[i+1:]; len(rest) >= 5 {
			switch rest[:5] {
			case "u003c":
				b.WriteByte('<')
				i += 5
				continue
			case "u003e":
				b.WriteByte('>')
				i += 5
				continue
			case "u0026":
				b.WriteByte('&')
				i += 5
				continue
			}
		}
		b.WriteString(s[i : i+2]) // an escape pair, as it is
		i++
	}
	return b.String()
}

// diffPage compares two runs.
type diffPage struct {
	pageData
	// Choices are the runs the two selectors offer.
	Choices   []runChoice
	Base, New string
	// Diff is the comparison, once two runs are picked.
	Diff    *diff.Report
	BaseRun *graph.Run
	NewRun  *graph.Run
	Areas   []findings.Area
	// Metrics head the per-agent table's columns.
	Metrics []diff.Metric
	// Graphs are the base run's and the new run's, in that order.
	Graphs []diffGraph
}

// runChoice is one run a compare selector offers: its id, and a label
// cut so that a long task does not widen the page.
type runChoice struct {
	ID    string
	Label string
	Title string
}

// choiceTask is how much of a task a compare selector's option shows.
const choiceTask = 60

// diffGraph is one run's graph on the compare page; its ids carry a
// prefix, so the two drawings' boxes do not share ids.
type diffGraph struct {
	Side  string
	ID    string
	Graph *svgElem
	Err   string
}

func (s *Server) diffPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	q := r.URL.Query()
	base, nw := q.Get("base"), q.Get("new")
	if picked := q["run"]; len(picked) == 2 && base == "" && nw == "" {
		base, nw = picked[0], picked[1]
	} else if len(picked) > 0 && base == "" && nw == "" {
		return badRequest("pick two runs to compare (you picked %d)", len(picked))
	}
	runs, err := s.analyzer().Runs(ctx)
	if err != nil {
		return err
	}
	p := &diffPage{pageData: s.base("compare runs", "diff"), Areas: findings.Areas(), Metrics: diff.Metrics()}
	for _, run := range runs {
		c := runChoice{ID: run.ID, Label: run.ID + " · " + run.Started.UTC().Format("2006-01-02 15:04:05 UTC")}
		if len(run.Tasks) > 0 {
			c.Label += " · " + oneLine(run.Tasks[0], choiceTask)
			c.Title = oneLine(run.Tasks[0], 500)
		}
		p.Choices = append(p.Choices, c)
	}
	if base == "" || nw == "" {
		return s.writePage(w, "diff", p)
	}
	if _, p.Base, err = s.analyzer().Resolve(ctx, base); err != nil {
		return err
	}
	if _, p.New, err = s.analyzer().Resolve(ctx, nw); err != nil {
		return err
	}
	// The older run is the base when the runs were picked from the list.
	if len(q["run"]) == 2 {
		bi, ni := -1, -1
		for i, run := range runs {
			switch run.ID {
			case p.Base:
				bi = i
			case p.New:
				ni = i
			}
		}
		if bi >= 0 && ni >= 0 && bi < ni { // newest first: base is the later index
			p.Base, p.New = p.New, p.Base
		}
	}
	ba, err := s.analyse(ctx, p.Base)
	if err != nil {
		return err
	}
	na, err := s.analyse(ctx, p.New)
	if err != nil {
		return err
	}
	for _, a := range []*analysed{ba, na} {
		if err := a.wait(ctx); err != nil {
			return err
		}
		if a.repErr != nil {
			return a.repErr
		}
	}
	p.BaseRun, p.NewRun = ba.g, na.g
	p.Diff, err = analysis.Diff(ctx, &diff.Config{NoMermaid: true}, ba.run, na.run)
	if err != nil {
		return err
	}
	for _, g := range []struct {
		side string
		a    *analysed
	}{{"base", ba}, {"new", na}} {
		dg := diffGraph{Side: g.side, ID: g.a.g.ID}
		if g.a.svg != nil {
			dg.Graph = g.a.svg.prefixed(g.side + "-")
		}
		if g.a.svgErr != nil {
			dg.Err = g.a.svgErr.Error()
		}
		p.Graphs = append(p.Graphs, dg)
	}
	p.Title = "compare " + p.Base + " → " + p.New
	return s.writePage(w, "diff", p)
}

// reportFile serves the run's report as a file to save.
func (s *Server) reportFile(w http.ResponseWriter, r *http.Request) error {
	id, ok, err := s.resolve(w, r)
	if err != nil || !ok {
		return err
	}
	var buf bytes.Buffer
	if err := s.WriteReport(r.Context(), &buf, id); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="inspect-run-%s.html"`, id))
	_, err = w.Write(buf.Bytes())
	return err
}

// WriteReport writes run id's page as one self-contained HTML file
// (`inspect report`): the graph, the timeline, the findings, grades and
// cache figures, the nodes the findings name in full (bounded, saying
// what it cut), with its stylesheet and script inline under a policy in a
// meta element that allows only them and no fetch. It opens from file://
// with no network and links to no other page.
func (s *Server) WriteReport(ctx context.Context, w io.Writer, id string) error {
	a, err := s.analyse(ctx, id)
	if err != nil {
		return err
	}
	if err := a.wait(ctx); err != nil {
		return err
	}
	p := s.runView(a, true)
	if err := s.reportDetails(ctx, a, p); err != nil {
		return err
	}
	return renderPage(w, "run", p)
}

// errorPage says why a page is not shown.
type errorPage struct {
	pageData
	Status  int
	Message string
}
