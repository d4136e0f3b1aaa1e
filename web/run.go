package web

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/inspect-dev/inspect/chart"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/mermaid"
	"github.com/inspect-dev/inspect/mermaid/render"
	"github.com/inspect-dev/inspect/money"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/stack"
	"github.com/inspect-dev/inspect/timeline"
)

// drawGraph draws g's chart as SVG through Graphviz and rebuilds it for the
// page.
func drawGraph(ctx context.Context, mc *mermaid.Config, g *graph.Run) (*svgElem, error) {
	var dot, svg bytes.Buffer
	if err := mc.FprintDOT(&dot, g); err != nil {
		return nil, err
	}
	if err := render.SVG(ctx, dot.Bytes(), &svg); err != nil {
		return nil, err
	}
	return cleanSVG(svg.Bytes())
}

// runPage is the run page (and the report).
type runPage struct {
	pageData
	ID        string
	Run       *graph.Run
	Task      string
	MoreTasks []string
	Status    string
	Error     string
	Notice    string
	Started   time.Time
	Elapsed   time.Duration
	Agents    []string
	Models    []string
	Source    string // "" for our runtime
	SourceAt  string
	Lacks     []string // what reconstructed requests lack
	Imported  bool
	Tokens    graph.Tokens
	// Summary says in one sentence what happened.
	Summary  string
	Nodes    int
	Tools    int
	Forks    int
	Handoffs int
	// Pending is set while the audit of a large run is still running,
	// CachePending while its cache analysis is: those parts of the page
	// are fetched.
	Pending      bool
	CachePending bool
	// Audited is set when the audit is in; AuditErr says why it is not.
	Audited      bool
	AuditErr     string
	Grades       []gradeView
	FindingCount int
	Items        []findingItem
	// Cost is the run's cost in money, and each agent's, with a price
	// table.
	Cost      string
	Checks    []findings.Check
	Graph     *svgElem
	GraphErr  string
	Collapsed string
	Timeline  timelineView
	Boxes     []boxView
	Cache     cacheView
	// Select is the box to select when the page opens (?node=n7).
	Select string
	// Details are, in a report, the nodes its findings name, each in full
	// (reportDetails); DetailsLeft the ones beyond the report's bound.
	Details     []*nodePage
	DetailsLeft []string
}

type gradeView struct {
	Area   string
	Letter string
	Score  int
}

// NA reports whether the area was not examined: no rule had anything of
// it to look at, so it has a letter n/a and no score.
func (g gradeView) NA() bool { return g.Letter == findings.NA }

// gradeClass is the style class of grade letter l: "g-A" … "g-F", and
// "g-na" for n/a (a slash is no class name).
func gradeClass(l string) string {
	if l == findings.NA {
		return "g-na"
	}
	return "g-" + l
}

type findingView struct {
	N        int
	Rule     string
	Name     string
	Area     string
	Severity string
	Agent    string
	Message  string
	// Boxes are the chart boxes that show the evidence nodes, space-separated.
	Boxes   string
	Nodes   []string
	Fix     string
	Also    []string
	Next    string
	Price   string
	Basis   string
	Causes  []findings.Cause
	Penalty int
	// Money is the price in money with a price table; Accepted says why an
	// ignore entry or a baseline covers the finding (it then counts not).
	Money    string
	Accepted string
	// InFull are, in a report, the nodes it holds in full.
	InFull []string
}

// findingItem is one entry of the findings list: a finding in full, or
// the rest of one rule's findings.
type findingItem struct {
	F *findingView
	G *findingGroup
}

// findingGroup stands for a rule's findings beyond the first few.
type findingGroup struct {
	Rule, Name, Severity string
	Count                int
	// First is the number of its first finding in the audit's order.
	First int
	// Price sums their prices; Boxes are the boxes of all their evidence.
	Price string
	Boxes string
	price findings.Price
	boxes []string
}

type boxView struct {
	ID      string
	Kind    string
	Label   string
	Agent   string
	Where   string
	At      time.Duration // from the run's start
	Dur     time.Duration
	Status  string
	Error   string
	Covers  int
	First   string
	Last    string
	Detail  []string
	Node    string // the node page to open: n<seq>
	Failed  bool
	Running bool
	// InFull is set when a report holds the box's node in full.
	InFull bool
}

// timelineView is the timeline as one SVG, in user units.
type timelineView struct {
	Width, Height float64
	LabelW        float64
	BarX, BarW    float64
	Ticks         []tickView
	Lanes         []laneView
	Links         []linkView
	Critical      []string
	SuffixX       float64
	// Gaps are the stretches of elided time drawn narrow.
	Gaps []gapView
}

type gapView struct{ X, W float64 }

type tickView struct {
	X     float64
	Label string
}

type laneView struct {
	ID       string
	Y        float64
	H        float64
	Label    string
	Full     string
	Suffix   string
	Class    string
	Bars     []barView
	Marks    []markView
	Depth    int
	Critical bool
	LabelX   float64
	TextY    float64
}

type barView struct {
	X, Y, W, H float64
	Class      string
	Box        string
	Label      string
}

type markView struct {
	X, Y, H float64
	Class   string
	Box     string
	Label   string
}

// linkView is a branch's connector from its parent lane.
type linkView struct {
	X, Y1, Y2 float64
	Class     string
}

// analysed resolves the run of r's path and analyses it; nil without an
// error when it redirected to the full id.
func (s *Server) analysed(w http.ResponseWriter, r *http.Request) (*analysed, error) {
	id, ok, err := s.resolve(w, r)
	if err != nil || !ok {
		return nil, err
	}
	return s.analyse(r.Context(), id)
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) error {
	a, err := s.analysed(w, r)
	if err != nil || a == nil {
		return err
	}
	// A page written before its audit is in (a large run's first) fetches
	// the cache figures as a part even when they are in already (the full
	// cache analysis starts with the graph, the audit after the page), so
	// that what it holds does not hang on which of the two came first.
	p := s.view(a, false, a.cached() && a.audited())
	if n := r.URL.Query().Get("node"); n != "" {
		if seq, err := parseNode(n); err == nil {
			if b := a.chart.BoxOf(seq); b != nil {
				p.Select = b.ID
			}
		}
	}
	defer a.start()
	return s.writePage(w, "run", p)
}

// parts are the pieces of a run page a large run's page fetches once its
// audit and cache analysis are in.
var parts = map[string]string{"head": "auditHead", "findings": "findingsBody", "cache": "cacheBody"}

// runPart serves one part of the run page, waiting for the analysis.
func (s *Server) runPart(w http.ResponseWriter, r *http.Request) error {
	name, ok := parts[r.PathValue("part")]
	if !ok {
		return notFound("there is no part %q of a run page", r.PathValue("part"))
	}
	a, err := s.analyse(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	done := a.auditDone
	if name == "cacheBody" {
		done = a.cacheDone
	}
	if err := a.wait(r.Context(), done); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	t, err := page("run")
	if err != nil {
		return err
	}
	return t.ExecuteTemplate(w, name, s.runView(a, false))
}

// findingsPerPage is the length of one page of the findings list.
const findingsPerPage = 100

// findingsListPage lists a run's findings, all or one rule's, a page at a time.
type findingsListPage struct {
	pageData
	ID       string
	Rule     string
	Rules    []string
	Total    int
	From, To int
	Prev     int
	Next     int
	List     []findingView
	Pending  bool
}

func (s *Server) findingsPage(w http.ResponseWriter, r *http.Request) error {
	a, err := s.analysed(w, r)
	if err != nil || a == nil {
		return err
	}
	id := a.g.ID
	if err := a.wait(r.Context(), a.auditDone); err != nil {
		return err
	}
	if a.repErr != nil {
		return a.repErr
	}
	q := r.URL.Query()
	p := &findingsListPage{pageData: s.base("findings of run "+id, "findings"), ID: id, Rule: q.Get("rule")}
	page := 1
	if v := q.Get("page"); v != "" {
		if _, err := fmt.Sscan(v, &page); err != nil || page < 1 {
			return badRequest("page %q is not a page number", v)
		}
	}
	var all []int // indexes into the audit's findings
	seen := map[string]bool{}
	for i, f := range a.rep.Findings {
		if !seen[f.Rule] {
			seen[f.Rule] = true
			p.Rules = append(p.Rules, f.Rule)
		}
		if p.Rule == "" || f.Rule == p.Rule {
			all = append(all, i)
		}
	}
	p.Total = len(all)
	from := (page - 1) * findingsPerPage
	if from > len(all) {
		return notFound("there is no page %d: %d findings make %d pages", page, len(all), (len(all)+findingsPerPage-1)/findingsPerPage)
	}
	to := min(from+findingsPerPage, len(all))
	for _, i := range all[from:to] {
		p.List = append(p.List, findingOf(i+1, a.rep.Findings[i], a))
	}
	p.From, p.To = from+1, to
	if page > 1 {
		p.Prev = page - 1
	}
	if to < len(all) {
		p.Next = page + 1
	}
	return s.writePage(w, "findings", p)
}

// runState is what a live page polls: the run's status and size.
func (s *Server) runState(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	run, err := s.analyzer().Record(r.Context(), id)
	if err != nil {
		return err
	}
	var nodes int64
	runs, err := s.analyzer().Runs(r.Context())
	if err != nil {
		return err
	}
	for _, x := range runs {
		if x.ID == id {
			nodes = x.Nodes
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, err = fmt.Fprintf(w, `{"status":%q,"nodes":%d,"ended":%d}`, run.Status, nodes, run.Ended.UnixNano())
	return err
}

// runView builds the run page of a.
func (s *Server) runView(a *analysed, report bool) *runPage {
	return s.view(a, report, a.cached())
}

// view is runView with the cache figures shown when cacheIn (they are in).
func (s *Server) view(a *analysed, report, cacheIn bool) *runPage {
	g := a.g
	p := &runPage{pageData: s.base("run "+g.ID, "run"), ID: g.ID, Run: g, Status: string(g.Status), Error: g.Error,
		Started: g.Started, Elapsed: g.Elapsed(), Agents: g.Agents, Models: g.Models, Tokens: g.Tokens(),
		Nodes: len(g.Nodes), Forks: len(g.Forks), Handoffs: len(g.Handoffs), Collapsed: a.chart.Collapsed}
	p.Report = report
	p.Live = g.Status == record.StatusRunning && !report
	if len(g.Tasks) > 0 {
		p.Task, p.MoreTasks = g.Tasks[0], g.Tasks[1:]
		p.Title = oneLine(g.Tasks[0], 60) + " · run " + g.ID
	}
	if g.Status.Stopped() {
		// one banner, in the source's words: the run's own error (the
		// process stopped…; an imported session's "the session ends before
		// this conversation finished") when it has one, else how a run of
		// its source stops (stack.Stopped: never a dead process or Ctrl-C
		// for an imported session)
		why := stack.Stopped(g.Source, g.Status)
		if g.Error != "" {
			why = fmt.Sprintf("%s (%s)", g.Status, g.Error)
			p.Error = ""
		}
		p.Notice = fmt.Sprintf("This run was %s. Branches still running then are drawn as they were; the audit says which forks it could not judge.", why)
	}
	if !g.Source.IsInspect() {
		p.Imported = true
		p.Source = g.Source.Format
		if g.Source.Version != "" {
			p.Source += " " + g.Source.Version
		}
		p.SourceAt = g.Source.Path
		p.Lacks = g.Options.RequestsLack
	}
	p.Tools = g.ToolCounts().Total
	p.Pending = !report && !a.audited()
	p.CachePending = !report && !cacheIn
	s.auditView(p, a, cacheIn)
	p.Graph = a.svg
	if a.svgErr != nil {
		p.GraphErr = a.svgErr.Error()
	}
	p.Timeline = timelineOf(a.tl)
	a.chart.Walk(func(b *chart.Box, in *chart.Branch) {
		v := boxOf(g, b, in)
		if b.Node != nil && !b.Collapsed() && b.Node.Kind == record.KindLLM && cacheIn && a.cache != nil {
			if c := a.cache.Call(b.Node.Seq); c != nil && c.Analyzed {
				v.Detail = append(v.Detail, "prompt cache: "+pctf(c.Share)+" of the request reusable (predicted); "+c.Break.Why)
			}
		}
		p.Boxes = append(p.Boxes, v)
	})
	p.Summary = summary(g, a)
	return p
}

// maxPerRule is how many findings of one rule the run page shows in full;
// the rest of them are one item that marks all their boxes.
const maxPerRule = 5

// auditView fills the page's audit parts that are in: grades, findings
// and checks, and cache figures.
func (s *Server) auditView(p *runPage, a *analysed, cacheIn bool) {
	if cacheIn {
		p.Cache = cacheOf(a.cache, a.cacheErr)
	}
	if !a.audited() {
		return
	}
	if a.repErr != nil {
		p.AuditErr = a.repErr.Error()
		return
	}
	p.Audited = true
	p.FindingCount = len(a.rep.Findings)
	for _, area := range findings.Areas() {
		p.Grades = append(p.Grades, gradeView{string(area), a.rep.Grades[area], a.rep.Scores[area]})
	}
	p.Checks = a.rep.Checks
	p.Cost = a.rep.CostLine() // the run's and each agent's
	shown := map[string]int{}
	var rest *findingGroup
	for i, f := range a.rep.Findings {
		if shown[f.Rule] < maxPerRule {
			shown[f.Rule]++
			fv := findingOf(i+1, f, a)
			p.Items = append(p.Items, findingItem{F: &fv})
			continue
		}
		if rest == nil || rest.Rule != f.Rule {
			rest = &findingGroup{Rule: f.Rule, Name: f.Name, Severity: f.Severity.String(), First: i + 1}
			p.Items = append(p.Items, findingItem{G: rest})
		}
		rest.Count++
		rest.price.ElapsedMS += f.Price.ElapsedMS
		rest.price.TokensIn += f.Price.TokensIn
		rest.price.TokensOut += f.Price.TokensOut
		rest.price.ConversationStarts += f.Price.ConversationStarts
		rest.price.Calls += f.Price.Calls
		rest.boxes = append(rest.boxes, boxesOf(f, a)...)
	}
	for _, it := range p.Items {
		if g := it.G; g != nil {
			g.Price = g.price.Summary()
			g.Boxes = strings.Join(uniqueStrings(g.boxes), " ")
		}
	}
}

// findingOf is one finding as the page shows it (n counts from 1 in the
// audit's order).
func findingOf(n int, f findings.Finding, a *analysed) findingView {
	fv := findingView{N: n, Rule: f.Rule, Name: f.Name, Area: string(f.Area), Severity: f.Severity.String(),
		Agent: f.Agent, Message: f.Message, Nodes: f.Nodes, Fix: f.Fix.Line(),
		Next: f.Next, Price: f.Price.Summary(), Basis: f.Price.Basis, Causes: f.Causes, Penalty: findings.Penalty(f, a.rep)}
	for _, l := range f.Fix.Also {
		fv.Also = append(fv.Also, l.String())
	}
	fv.Boxes = strings.Join(uniqueStrings(boxesOf(f, a)), " ")
	if f.Money != nil {
		fv.Money = money.Format(f.Money.Amount, f.Money.Currency)
	}
	if f.Suppressed != nil {
		fv.Accepted = f.Suppressed.String()
	}
	return fv
}

// boxesOf are the chart boxes that show a finding's evidence nodes.
func boxesOf(f findings.Finding, a *analysed) []string {
	var out []string
	for _, ref := range f.Nodes {
		if seq, err := parseNode(ref); err == nil {
			if b := a.chart.BoxOf(seq); b != nil {
				out = append(out, b.ID)
			}
		}
	}
	return out
}

// uniqueStrings keeps the first of each string, in order.
func uniqueStrings(in []string) []string {
	seen := map[string]bool{}
	out := in[:0:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// summary says what happened in one sentence: who did how much, in what
// shape, and what the run waited on.
func summary(g *graph.Run, a *analysed) string {
	tc := g.ToolCounts()
	var b strings.Builder
	fmt.Fprintf(&b, "%s by %s in %s", plural(g.Tokens().Calls, "model call", "model calls")+" and "+plural(tc.Total, "tool call", "tool calls"),
		plural(len(g.Agents), "agent", "agents"), graph.FormatDuration(g.Elapsed()))
	if first, last := g.FirstAgent(), g.LastAgent(); first != "" && first != last {
		fmt.Fprintf(&b, "; the trunk started with %s and ended with %s", first, last)
	} else if first != "" {
		fmt.Fprintf(&b, "; %s held the trunk", first)
	}
	if n := len(g.Forks); n > 0 {
		branches := len(g.Conversations) - 1
		fmt.Fprintf(&b, "; %s into %s", plural(n, "fork", "forks"), plural(branches, "branch", "branches"))
	}
	if n := len(g.Handoffs); n > 0 {
		fmt.Fprintf(&b, "; %s", plural(n, "hand-off", "hand-offs"))
	}
	if len(a.tl.Critical) > 1 {
		path := a.tl.Critical
		if len(path) > 6 {
			path = append(append([]string{}, path[:5]...), fmt.Sprintf("… %d more", len(path)-5))
		}
		fmt.Fprintf(&b, ". The end waited on %s", strings.Join(path, " → "))
	}
	switch {
	case !a.audited():
		b.WriteString(". The audit is running.")
	case a.rep == nil:
		b.WriteString(".")
	case len(a.rep.Findings) == 0:
		b.WriteString(". The audit found no topology mistake.")
	default:
		fmt.Fprintf(&b, ". The audit found %s.", plural(len(a.rep.Findings), "mistake", "mistakes"))
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return thousands(int64(n)) + " " + many
}

// boxOf is the detail panel of one box.
func boxOf(g *graph.Run, b *chart.Box, in *chart.Branch) boxView {
	v := boxView{ID: b.ID, Kind: b.Kind.String(), Label: b.Label, Failed: b.Failed, Where: "trunk"}
	if in != nil {
		v.Where = "branch " + in.Branch.Name
		if in.Branch.Conv != nil && in.Branch.Conv.Path != "" {
			v.Where = "branch " + in.Branch.Conv.Path
		}
	}
	nodes := b.Nodes()
	if len(nodes) == 0 {
		return v
	}
	first, last := nodes[0], nodes[len(nodes)-1]
	v.First, v.Last, v.Covers, v.Node = first.ID(), last.ID(), len(nodes), first.ID()
	v.At = first.Started.Sub(g.Started)
	end := last.Ended
	if end.IsZero() {
		end = last.Started
		v.Running = true
	}
	v.Dur = end.Sub(first.Started)
	v.Agent = first.Agent
	if !b.Collapsed() {
		v.Kind = string(first.Kind)
		v.Status, v.Error = string(first.Status), first.Error
		switch n := first; n.Kind {
		case record.KindLLM:
			if l := n.LLM; l != nil {
				v.Detail = append(v.Detail, "model "+l.Model,
					fmt.Sprintf("in %s · out %s · cached %s", thousands(l.Usage.In), thousands(l.Usage.Out), cachedText(l.Usage)))
				if !l.Exact() {
					v.Detail = append(v.Detail, "request reconstructed from the imported source")
				}
			}
		case record.KindTool:
			if t := n.Tool; t != nil {
				v.Detail = append(v.Detail, "arguments "+oneLine(t.Args, 200), "result "+oneLine(t.Result, 300))
			}
		case record.KindHandoff:
			if h := n.Handoff; h != nil {
				v.Detail = append(v.Detail, "from "+h.From+" to "+h.To, "reason "+oneLine(h.Reason, 300))
			}
		case record.KindFork:
			if f := n.Fork; f != nil {
				v.Detail = append(v.Detail, "context "+f.Context)
				for _, fb := range f.Branches {
					v.Detail = append(v.Detail, fb.Name+" @"+fb.Agent+": "+oneLine(fb.Instructions, 160))
				}
			}
		case record.KindJoin:
			if j := n.Join; j != nil {
				for _, jb := range j.Branches {
					v.Detail = append(v.Detail, fmt.Sprintf("%s %s %s: %s", jb.Name, jb.Status, graph.FormatDuration(jb.Duration), oneLine(jb.Answer, 160)))
				}
			}
		case record.KindUser, record.KindFinal:
			v.Detail = append(v.Detail, oneLine(n.Text, 400))
		}
	}
	return v
}

func cachedText(u record.Usage) string {
	if !u.CachedReported {
		return "not reported"
	}
	return thousands(u.Cached) + " (reported)"
}

// The timeline's geometry, in SVG user units.
const (
	tlWidth  = 1200.0
	tlLabelW = 250.0
	tlSuffix = 120.0
	tlLaneH  = 22.0
	tlBarH   = 12.0
	tlAxisH  = 22.0
	tlMinBar = 1.5
)

// timelineOf lays the timeline out as SVG geometry.
func timelineOf(t *timeline.Timeline) timelineView {
	v := timelineView{Width: tlWidth, LabelW: tlLabelW, BarX: tlLabelW + 10, Critical: t.Critical}
	if len(v.Critical) > 8 {
		v.Critical = append(append([]string{}, t.Critical[:6]...), fmt.Sprintf("… %d more", len(t.Critical)-6))
	}
	v.BarW = tlWidth - v.BarX - tlSuffix - 10
	v.SuffixX = v.BarX + v.BarW + 8
	ax := t.Axis(v.BarW)
	x := func(at time.Time) float64 { return v.BarX + ax.X(at) }
	ticks := ax.Ticks()
	for i, tk := range ticks {
		// a tick's label needs about 60 units; the last one always shows
		if n := len(v.Ticks); i < len(ticks)-1 && n > 0 && tk.X+v.BarX-v.Ticks[n-1].X < 60 {
			continue
		}
		if n := len(v.Ticks); i == len(ticks)-1 && n > 1 && tk.X+v.BarX-v.Ticks[n-1].X < 60 {
			v.Ticks = v.Ticks[:n-1]
		}
		v.Ticks = append(v.Ticks, tickView{X: v.BarX + tk.X, Label: tk.Label})
	}
	for _, gp := range ax.Gaps() {
		v.Gaps = append(v.Gaps, gapView{X: v.BarX + gp.X0, W: gp.X1 - gp.X0})
	}
	index := map[*timeline.Lane]int{}
	for i, l := range t.Lanes {
		index[l] = i
		y := tlAxisH + float64(i)*tlLaneH
		lv := laneView{ID: l.ID, Y: y, H: tlLaneH, Depth: l.Depth, Critical: l.Critical,
			LabelX: 6 + 12*float64(min(l.Depth, 8)), TextY: y + tlLaneH/2 + 4}
		name := l.Name
		if len(l.Agents) > 0 {
			name += " @" + strings.Join(l.Agents, "→")
		}
		lv.Full = l.Title
		if len(l.Agents) > 0 {
			lv.Full += " @" + strings.Join(l.Agents, "→")
		}
		lv.Label = runewidth.Truncate(oneLine(name, 80), 34-2*min(l.Depth, 8), "…")
		var cls []string
		if l.Critical {
			cls = append(cls, "crit")
		}
		if l.Slowest {
			cls = append(cls, "slowest")
		}
		if l.Status.Failed() {
			cls = append(cls, "failed")
		}
		if l.Branches > 0 {
			cls = append(cls, "group")
			lv.Suffix = l.Statuses
		} else {
			lv.Suffix = graph.FormatDuration(l.Duration())
			if l.Slowest {
				lv.Suffix += " slowest"
			}
			if l.Status != record.StatusOK && l.Status != "" {
				lv.Suffix += " " + string(l.Status)
			}
		}
		lv.Class = strings.Join(cls, " ")
		for _, b := range l.Bars {
			bv := barView{X: x(b.Start), W: max(x(b.End)-x(b.Start), tlMinBar), Box: b.Box, Label: b.Label, H: tlBarH, Y: y + (tlLaneH-tlBarH)/2}
			c := b.Kind.String()
			if b.Kind == timeline.BarWait {
				bv.H, bv.Y = 2, y+tlLaneH/2-1
			}
			if b.Slots > 1 {
				// the calls of one response, each at its own time, stacked
				bv.H = (tlLaneH - 4) / float64(b.Slots)
				bv.Y = y + 2 + float64(b.Slot)*bv.H
			}
			switch {
			case b.Failed && b.Kind == timeline.BarCollapsed:
				c += " has-failed" // it holds a failure: outlined, not filled
			case b.Failed:
				c += " failed"
			}
			if b.Group != "" {
				c += " parallel"
			}
			bv.Class = c
			lv.Bars = append(lv.Bars, bv)
		}
		for _, m := range l.Marks {
			lv.Marks = append(lv.Marks, markView{X: x(m.At) - 2, Y: y + 2, H: tlLaneH - 4, Class: m.Kind.String(), Box: m.Box, Label: m.Label})
		}
		v.Lanes = append(v.Lanes, lv)
	}
	for _, l := range t.Lanes {
		if l.Parent == nil || l.Start.IsZero() {
			continue
		}
		c := "link"
		if l.Critical {
			c += " crit"
		}
		py := tlAxisH + float64(index[l.Parent])*tlLaneH + tlLaneH/2
		y := tlAxisH + float64(index[l])*tlLaneH + tlLaneH/2
		v.Links = append(v.Links, linkView{X: x(l.Start), Y1: py, Y2: y, Class: c})
	}
	v.Height = tlAxisH + float64(len(t.Lanes))*tlLaneH + 4
	return v
}

// parseNode reads "n7" (or "7").
func parseNode(s string) (int64, error) {
	var seq int64
	t := strings.TrimPrefix(s, "n")
	if _, err := fmt.Sscan(t, &seq); err != nil || seq <= 0 || fmt.Sprint(seq) != t {
		return 0, badRequest("%q is not a node: write n<number> as the graph shows it (e.g. n7)", s)
	}
	return seq, nil
}

// oneLine is s on one line, at most n runes, with an ellipsis.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// sortedAgents lists the agents of runs, sorted, once each.
func sortedAgents(runs []RunSummary) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range runs {
		for _, a := range r.Agents {
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	sort.Strings(out)
	return out
}
