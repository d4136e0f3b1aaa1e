package diff

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// Metric names one total. The names are the JSON keys of docs/diff-json.md.
type Metric string

// The metrics, in report order.
const (
	MetricTokensIn     Metric = "tokens_in"
	MetricTokensOut    Metric = "tokens_out"
	MetricTokensCached Metric = "tokens_cached"
	MetricElapsed      Metric = "elapsed_ms"
	MetricLLMCalls     Metric = "llm_calls"
	MetricToolCalls    Metric = "tool_calls"
	MetricForks        Metric = "forks"
	MetricBranches     Metric = "branches"
	MetricHandoffs     Metric = "handoffs"
)

// Metrics lists every metric in report order.
func Metrics() []Metric {
	return []Metric{MetricTokensIn, MetricTokensOut, MetricTokensCached, MetricElapsed, MetricLLMCalls,
		MetricToolCalls, MetricForks, MetricBranches, MetricHandoffs}
}

// Label is the metric's name in human formats ("tokens in").
func (m Metric) Label() string {
	switch m {
	case MetricTokensIn:
		return "tokens in"
	case MetricTokensOut:
		return "tokens out"
	case MetricTokensCached:
		return "tokens cached"
	case MetricElapsed:
		return "elapsed"
	case MetricLLMCalls:
		return "model calls"
	case MetricToolCalls:
		return "tool calls"
	case MetricForks:
		return "forks"
	case MetricBranches:
		return "branches"
	case MetricHandoffs:
		return "hand-offs"
	}
	return string(m)
}

// totals holds one value per metric; cachedReported is false when no call
// reported cached tokens.
type totals struct {
	v              map[Metric]int64
	cachedReported bool
}

// totalsOf sums the metrics over run g, or over the nodes agent owned when
// agent is not empty. Per agent, elapsed is busy time: the durations of the
// agent's model and tool calls; forks are the forks it made, branches the
// branches of those forks, hand-offs those it made.
func totalsOf(g *graph.Run, agent string) totals {
	t := totals{v: map[Metric]int64{}}
	var nodes []*graph.Node
	for _, n := range g.Nodes {
		if agent == "" || n.Agent == agent {
			nodes = append(nodes, n)
		}
	}
	tok := graph.SumTokens(nodes)
	t.v[MetricTokensIn], t.v[MetricTokensOut], t.v[MetricLLMCalls] = tok.In, tok.Out, int64(tok.Calls)
	t.v[MetricTokensCached], t.cachedReported = tok.Cached, tok.CachedReported
	var busy time.Duration
	for _, n := range nodes {
		switch n.Kind {
		case record.KindTool:
			t.v[MetricToolCalls]++
			busy += n.Duration()
		case record.KindLLM:
			busy += n.Duration()
		case record.KindFork:
			t.v[MetricForks]++
			if n.ForkOf != nil {
				t.v[MetricBranches] += int64(len(n.ForkOf.Branches))
			}
		case record.KindHandoff:
			t.v[MetricHandoffs]++
		}
	}
	if agent == "" {
		t.v[MetricElapsed] = g.Elapsed().Milliseconds()
	} else {
		t.v[MetricElapsed] = busy.Milliseconds()
	}
	return t
}

// Delta is one metric in both runs.
type Delta struct {
	// Metric names the total.
	Metric Metric `json:"metric"`
	// Base and New are the values; Change is New − Base.
	Base   int64 `json:"base"`
	New    int64 `json:"new"`
	Change int64 `json:"change"`
	// Percent is Change relative to Base, in percent; nil when Base is 0.
	Percent *float64 `json:"percent"`
	// Reported is false for tokens_cached when neither run's provider
	// reported cached tokens (then the values mean nothing).
	Reported bool `json:"reported"`
}

func deltas(b, n totals) []Delta {
	var out []Delta
	for _, m := range Metrics() {
		d := Delta{Metric: m, Base: b.v[m], New: n.v[m], Reported: true}
		d.Change = d.New - d.Base
		if d.Base != 0 {
			p := math.Round(float64(d.Change)/float64(d.Base)*1000) / 10
			d.Percent = &p
		}
		if m == MetricTokensCached {
			d.Reported = b.cachedReported || n.cachedReported
		}
		out = append(out, d)
	}
	return out
}

// format prints a value of the metric: durations for elapsed.
func (m Metric) format(v int64) string {
	if m == MetricElapsed {
		return fmtDuration(time.Duration(v) * time.Millisecond)
	}
	return strconv.FormatInt(v, 10)
}

// Short is the change in human form: "+120 (+8.5%)", "±0", "-1.2s (-10.0%)".
func (d Delta) Short() string {
	if d.Change == 0 {
		return "±0"
	}
	sign := "+"
	v := d.Change
	if v < 0 {
		sign, v = "-", -v
	}
	s := sign + d.Metric.format(v)
	if d.Percent != nil {
		s += fmt.Sprintf(" (%+.1f%%)", *d.Percent)
	}
	return s
}

// signed is the change without the percentage: "+120", "±0", "-1.2s".
func (d Delta) signed() string {
	switch {
	case d.Change == 0:
		return "±0"
	case d.Change < 0:
		return "-" + d.Metric.format(-d.Change)
	}
	return "+" + d.Metric.format(d.Change)
}

// AgentDelta is the metrics of one agent in both runs.
type AgentDelta struct {
	// Agent is the agent's name.
	Agent string `json:"agent"`
	// InBase and InNew say which runs the agent ran in.
	InBase bool `json:"in_base"`
	InNew  bool `json:"in_new"`
	// Totals are the agent's metrics, in Metrics order (tokens_cached
	// included; elapsed is the agent's busy time).
	Totals []Delta `json:"totals"`
	// Money is the agent's model calls in money, when both audits had a
	// price table.
	Money *MoneyDelta `json:"money,omitempty"`
}

// State says whether the agent ran in one run only: "new", "gone", or ""
// when it ran in both.
func (a AgentDelta) State() string {
	switch {
	case !a.InBase:
		return "new"
	case !a.InNew:
		return "gone"
	}
	return ""
}

// Cell is the delta as a per-agent table shows it: the new value and the
// change, "1382 (+120)"; "-" for cached tokens neither run reported.
func (d Delta) Cell() string {
	if d.Metric == MetricTokensCached && !d.Reported {
		return "-"
	}
	return d.Metric.format(d.New) + " (" + d.signed() + ")"
}

func agentDeltas(base, new *graph.Run) []AgentDelta {
	in := func(g *graph.Run, a string) bool { return g.FirstOwned(a) != nil }
	var names []string
	seen := map[string]bool{}
	for _, g := range []*graph.Run{base, new} {
		for _, a := range g.Agents {
			if !seen[a] {
				seen[a] = true
				names = append(names, a)
			}
		}
	}
	out := []AgentDelta{}
	for _, a := range names {
		out = append(out, AgentDelta{Agent: a, InBase: in(base, a), InNew: in(new, a), Totals: deltas(totalsOf(base, a), totalsOf(new, a))})
	}
	return out
}

// Limit is one --max-increase entry: how much a total may grow.
type Limit struct {
	// Key is tokens (in + out), tokens_in, tokens_out, elapsed, llm_calls
	// or tool_calls.
	Key string `json:"key"`
	// Percent is true when Value is a percentage of the base value;
	// otherwise Value is absolute (tokens, calls, or milliseconds for elapsed).
	Percent bool    `json:"percent"`
	Value   float64 `json:"value"`
}

// LimitKeys lists the keys --max-increase accepts.
func LimitKeys() []string {
	return []string{"tokens", "tokens_in", "tokens_out", "elapsed", "llm_calls", "tool_calls"}
}

// String is the limit as written: "tokens=10%", "elapsed=30s".
func (l Limit) String() string {
	v := strconv.FormatFloat(l.Value, 'f', -1, 64)
	switch {
	case l.Percent:
		v += "%"
	case l.Key == "elapsed":
		v = (time.Duration(l.Value) * time.Millisecond).String()
	}
	return l.Key + "=" + v
}

// ParseLimits reads "tokens=10%,elapsed=20%": comma-separated KEY=VALUE
// where VALUE is a percentage ("10%") or an absolute increase (a count for
// tokens and calls, a duration such as "30s" for elapsed).
func ParseLimits(s string) ([]Limit, error) {
	var out []Limit
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || v == "" {
			return nil, fmt.Errorf("%q is not KEY=VALUE (e.g. tokens=10%%)", part)
		}
		known := false
		for _, key := range LimitKeys() {
			known = known || key == k
		}
		if !known {
			return nil, fmt.Errorf("unknown key %q; use one of: %s", k, strings.Join(LimitKeys(), ", "))
		}
		l := Limit{Key: k}
		switch {
		case strings.HasSuffix(v, "%"):
			f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
			if err != nil || f < 0 {
				return nil, fmt.Errorf("%s: %q is not a percentage (e.g. 10%%)", k, v)
			}
			l.Percent, l.Value = true, f
		case k == "elapsed":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("elapsed: %q is neither a percentage (20%%) nor a duration (30s)", v)
			}
			l.Value = float64(d.Milliseconds())
		default:
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 {
				return nil, fmt.Errorf("%s: %q is neither a percentage (10%%) nor a number", k, v)
			}
			l.Value = f
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no limits in %q (e.g. tokens=10%%,elapsed=20%%)", s)
	}
	return out, nil
}

// ThresholdResult is one limit checked against the two runs.
type ThresholdResult struct {
	// Limit is the limit as written ("tokens=10%").
	Limit string `json:"limit"`
	// Key is the limit's key.
	Key string `json:"key"`
	// Base and New are the key's values; Increase is New − Base.
	Base     int64 `json:"base"`
	New      int64 `json:"new"`
	Increase int64 `json:"increase"`
	// Percent is Increase relative to Base; nil when Base is 0.
	Percent *float64 `json:"percent"`
	// Passed is false when the increase is over the limit.
	Passed bool `json:"passed"`
	// Message says what was compared.
	Message string `json:"message"`
}

func (l Limit) value(t totals) int64 {
	switch l.Key {
	case "tokens":
		return t.v[MetricTokensIn] + t.v[MetricTokensOut]
	case "tokens_in":
		return t.v[MetricTokensIn]
	case "tokens_out":
		return t.v[MetricTokensOut]
	case "elapsed":
		return t.v[MetricElapsed]
	case "llm_calls":
		return t.v[MetricLLMCalls]
	case "tool_calls":
		return t.v[MetricToolCalls]
	}
	panic(fmt.Sprintf("internal error: unhandled limit key %q", l.Key))
}

func (l Limit) check(b, n totals) ThresholdResult {
	r := ThresholdResult{Limit: l.String(), Key: l.Key, Base: l.value(b), New: l.value(n), Passed: true}
	r.Increase = r.New - r.Base
	if r.Base != 0 {
		p := math.Round(float64(r.Increase)/float64(r.Base)*1000) / 10
		r.Percent = &p
	}
	m := Metric(l.Key)
	if l.Key == "elapsed" {
		m = MetricElapsed
	}
	inc := m.format(r.Increase)
	if r.Increase > 0 {
		inc = "+" + inc
	}
	if r.Percent != nil {
		inc += fmt.Sprintf(" (%+.1f%%)", *r.Percent)
	}
	switch {
	case r.Increase <= 0:
	case l.Percent && r.Base == 0:
		r.Passed = false // any growth from zero is over a percentage
	case l.Percent:
		r.Passed = float64(r.Increase)*100 <= l.Value*float64(r.Base)
	default:
		r.Passed = float64(r.Increase) <= l.Value
	}
	verdict := "within"
	if !r.Passed {
		verdict = "over"
	}
	r.Message = fmt.Sprintf("%s went from %s to %s, %s: %s the --max-increase %s", l.Key, m.format(r.Base), m.format(r.New), inc, verdict, r.Limit)
	return r
}

// fmtDuration prints a duration as every inspect output does: 950ms, 1.2s, 2m03s.
func fmtDuration(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	var s string
	switch {
	case d < time.Second:
		s = fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		s = fmt.Sprintf("%.1fs", d.Seconds())
	default:
		s = fmt.Sprintf("%dm%02ds", int(d/time.Minute), int((d%time.Minute)/time.Second))
	}
	if neg {
		return "-" + s
	}
	return s
}
