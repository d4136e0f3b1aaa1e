// Package fleet aggregates the audits of many runs (DESIGN §18 "Fleet"):
// per rule × agent × source, how many runs a mistake affected, their share
// of the runs audited, its total and median price (time, tokens, money),
// a few examples (run and nodes), and the change against the previous
// window of the same length. Runs are added one at a time (Add) and only
// their counts and prices are kept, so a fleet of any size is audited in
// the memory of one run. It knows no SQL and reads no database: the
// caller opens each run (package analysis) and hands its audit in.
package fleet

import (
	"sort"
	"time"

	"github.com/inspect-dev/inspect/findings"
)

// DefaultExamples is how many example runs a row keeps.
const DefaultExamples = 3

// Window is the span of start times of the runs counted: [From, Until).
// A zero From means since the first run (and no previous window).
type Window struct {
	From, Until time.Time
}

// Previous is the window of the same length just before w (zero when w
// has no start).
func (w Window) Previous() Window {
	if w.From.IsZero() || w.Until.IsZero() {
		return Window{}
	}
	return Window{From: w.From.Add(-w.Until.Sub(w.From)), Until: w.From}
}

func (w Window) holds(t time.Time) bool {
	return (w.From.IsZero() || !t.Before(w.From)) && (w.Until.IsZero() || t.Before(w.Until))
}

// Run is what Add needs of a run beside its audit.
type Run struct {
	ID      string
	Source  string // the source format: inspect, otlp, claude-code, …
	Started time.Time
}

// Key is one row: a rule, the agent its findings point at, a source.
type Key struct {
	Rule, Agent, Source string
}

// Fleet gathers audits. The zero value is not ready: use New.
type Fleet struct {
	window, prev Window
	examples     int

	runs, prevRuns int
	sources        map[string]int
	rows           map[Key]*row
	rules          map[string]*ruleCount // distinct runs per rule, both windows
	failed         []Failed
}

// Failed is a run that could not be audited (it is not counted).
type Failed struct {
	Run   string `json:"run"`
	Error string `json:"error"`
}

type row struct {
	name     string
	severity findings.Severity
	runs     int // affected runs of the window
	prevRuns int // ... of the previous window
	findings int
	// per affected run of the window: its price for this row
	elapsed, tokens []int64
	money           []float64
	currency        string
	moneyRuns       int
	examples        []Example
}

type ruleCount struct{ runs, prevRuns int }

// New returns a Fleet counting the runs started in w, and those of the
// previous window of the same length for the trend; examples is how many
// example runs a row keeps (0: DefaultExamples).
func New(w Window, examples int) *Fleet {
	if examples <= 0 {
		examples = DefaultExamples
	}
	return &Fleet{window: w, prev: w.Previous(), examples: examples, sources: map[string]int{},
		rows: map[Key]*row{}, rules: map[string]*ruleCount{}}
}

// Range is the span of start times whose runs Add counts (the previous
// window's start to the window's end): what to list.
func (f *Fleet) Range() Window {
	if f.prev.From.IsZero() {
		return f.window
	}
	return Window{From: f.prev.From, Until: f.window.Until}
}

// Fail notes a run that could not be audited.
func (f *Fleet) Fail(run string, err error) {
	f.failed = append(f.failed, Failed{Run: run, Error: err.Error()})
}

// Add counts run r with its audit rep: in the window, or in the previous
// one (for the trend alone), or not at all when it started in neither.
// Findings suppressed by the team's policy or a baseline are not counted.
func (f *Fleet) Add(r Run, rep *findings.Report) {
	cur := f.window.holds(r.Started)
	if !cur && (f.prev.From.IsZero() || !f.prev.holds(r.Started)) {
		return
	}
	if cur {
		f.runs++
		f.sources[r.Source]++
	} else {
		f.prevRuns++
	}
	type acc struct {
		price  findings.Price
		money  float64
		cur    string
		priced bool
		nodes  []string
		n      int
	}
	per := map[Key]*acc{}
	var order []Key
	ruleSeen := map[string]bool{}
	for i := range rep.Findings {
		fd := &rep.Findings[i]
		if fd.Suppressed != nil {
			continue
		}
		k := Key{Rule: fd.Rule, Agent: fd.Agent, Source: r.Source}
		a := per[k]
		if a == nil {
			a = &acc{}
			per[k] = a
			order = append(order, k)
		}
		a.n++
		a.price.ElapsedMS += fd.Price.ElapsedMS
		a.price.TokensIn += fd.Price.TokensIn
		a.price.TokensOut += fd.Price.TokensOut
		if fd.Money != nil {
			a.money += fd.Money.Amount
			a.cur = fd.Money.Currency
			a.priced = true
		}
		a.nodes = append(a.nodes, fd.Nodes...)
		if !ruleSeen[fd.Rule] {
			ruleSeen[fd.Rule] = true
			rc := f.rules[fd.Rule]
			if rc == nil {
				rc = &ruleCount{}
				f.rules[fd.Rule] = rc
			}
			if cur {
				rc.runs++
			} else {
				rc.prevRuns++
			}
		}
		rw := f.rows[k]
		if rw == nil {
			rw = &row{name: fd.Name, severity: fd.Severity}
			f.rows[k] = rw
		}
	}
	for _, k := range order {
		a, rw := per[k], f.rows[k]
		if !cur {
			rw.prevRuns++
			continue
		}
		rw.runs++
		rw.findings += a.n
		rw.elapsed = append(rw.elapsed, a.price.ElapsedMS)
		rw.tokens = append(rw.tokens, a.price.TokensIn+a.price.TokensOut)
		if a.priced {
			rw.money = append(rw.money, a.money)
			rw.currency = a.cur
			rw.moneyRuns++
		}
		if len(rw.examples) < f.examples {
			rw.examples = append(rw.examples, Example{Run: r.ID, Nodes: dedupe(a.nodes)})
		}
	}
}

func dedupe(nodes []string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, n := range nodes {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// Report is the fleet's audit: its JSON is documented in docs/fleet-json.md.
type Report struct {
	// Runs is how many runs of the window were audited.
	Runs int `json:"runs"`
	// From and Until bound the window (RFC 3339; From empty: since the
	// first run).
	From  string `json:"from,omitempty"`
	Until string `json:"until,omitempty"`
	// PreviousRuns is how many runs the previous window of the same
	// length held (null without one).
	PreviousRuns *int `json:"previous_runs"`
	// Sources counts the window's runs by source format.
	Sources map[string]int `json:"sources"`
	// Rules has one row per rule × agent × source that found something
	// in the window or the previous one: most runs affected first.
	Rules []Row `json:"rules"`
	// Failed are the runs that could not be audited (not counted).
	Failed []Failed `json:"failed"`
}

// Row is one rule × agent × source.
type Row struct {
	Rule     string `json:"rule"`
	Name     string `json:"name"`
	Severity string `json:"severity"`
	Agent    string `json:"agent"`
	Source   string `json:"source"`
	// Runs is how many runs of the window it affected; Share that over
	// all the window's runs (0..1); Findings how many findings in them.
	Runs     int     `json:"runs"`
	Share    float64 `json:"share"`
	Findings int     `json:"findings"`
	// Total and Median are its price over the affected runs, and the
	// median of one affected run's.
	Total  Price `json:"total"`
	Median Price `json:"median"`
	// Previous is the same row in the previous window (nil without one);
	// Change is Share less the previous window's share, in share points.
	Previous *Prev    `json:"previous"`
	Change   *float64 `json:"change"`
	// Examples are the first affected runs, with the evidence nodes.
	Examples []Example `json:"examples"`
}

// Price is what a row's findings cost: wall time, tokens (in + out) and,
// with a price table, money (nil without one, or when no finding of the
// row was priced in it).
type Price struct {
	ElapsedMS int64  `json:"elapsed_ms"`
	Tokens    int64  `json:"tokens"`
	Money     *Money `json:"money"`
}

// Money is an amount in a currency; Runs how many affected runs it prices.
type Money struct {
	Currency string  `json:"currency"`
	Amount   float64 `json:"amount"`
	Runs     int     `json:"runs"`
}

// Prev is a row in the previous window.
type Prev struct {
	Runs  int     `json:"runs"`
	Share float64 `json:"share"`
}

// Example is one affected run and its evidence nodes.
type Example struct {
	Run   string   `json:"run"`
	Nodes []string `json:"nodes"`
}

// Rate is the share (0..1) of the window's runs with a finding of rule,
// over every agent and source.
func (f *Fleet) Rate(rule string) float64 {
	rc := f.rules[rule]
	if rc == nil || f.runs == 0 {
		return 0
	}
	return float64(rc.runs) / float64(f.runs)
}

// Report is what has been added so far.
func (f *Fleet) Report() *Report {
	rep := &Report{Runs: f.runs, Sources: f.sources, Rules: []Row{}, Failed: f.failed}
	if rep.Failed == nil {
		rep.Failed = []Failed{}
	}
	if !f.window.From.IsZero() {
		rep.From = f.window.From.UTC().Format(time.RFC3339)
	}
	if !f.window.Until.IsZero() {
		rep.Until = f.window.Until.UTC().Format(time.RFC3339)
	}
	hasPrev := !f.prev.From.IsZero()
	if hasPrev {
		n := f.prevRuns
		rep.PreviousRuns = &n
	}
	for k, rw := range f.rows {
		r := Row{Rule: k.Rule, Name: rw.name, Severity: rw.severity.String(), Agent: k.Agent, Source: k.Source,
			Runs: rw.runs, Findings: rw.findings, Examples: rw.examples}
		if r.Examples == nil {
			r.Examples = []Example{}
		}
		if f.runs > 0 {
			r.Share = float64(rw.runs) / float64(f.runs)
		}
		r.Total.ElapsedMS, r.Median.ElapsedMS = sum(rw.elapsed), median(rw.elapsed)
		r.Total.Tokens, r.Median.Tokens = sum(rw.tokens), median(rw.tokens)
		if rw.moneyRuns > 0 {
			var t float64
			for _, m := range rw.money {
				t += m
			}
			r.Total.Money = &Money{Currency: rw.currency, Amount: t, Runs: rw.moneyRuns}
			r.Median.Money = &Money{Currency: rw.currency, Amount: medianF(rw.money), Runs: rw.moneyRuns}
		}
		if hasPrev {
			p := &Prev{Runs: rw.prevRuns}
			if f.prevRuns > 0 {
				p.Share = float64(rw.prevRuns) / float64(f.prevRuns)
			}
			r.Previous = p
			if f.prevRuns > 0 && f.runs > 0 {
				c := r.Share - p.Share
				r.Change = &c
			}
		}
		rep.Rules = append(rep.Rules, r)
	}
	sort.Slice(rep.Rules, func(i, j int) bool {
		a, b := rep.Rules[i], rep.Rules[j]
		if a.Runs != b.Runs {
			return a.Runs > b.Runs
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		if a.Agent != b.Agent {
			return a.Agent < b.Agent
		}
		return a.Source < b.Source
	})
	return rep
}

func sum(xs []int64) int64 {
	var t int64
	for _, x := range xs {
		t += x
	}
	return t
}

// median is the middle value (the lower of the two middle ones).
func median(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)/2]
}

func medianF(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[(len(s)-1)/2]
}
