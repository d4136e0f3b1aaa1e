// Package money turns recorded token usage into money with a team's price
// table (DESIGN §17): per model, the price of a million input tokens, of
// cached input (cache reads), of cache writes and of output. A model call
// costs
//
//	(in − cached − cache_write) × input + cached × cached_input
//	  + cache_write × cache_write + out × output, all ÷ 1,000,000
//
// where in counts every input token (record.Usage), cached and
// cache_write count only when the source reported them, and reasoning
// tokens are part of out. A rate the table leaves out for cached input or
// cache writes is the input rate: nothing is made cheaper than the table
// says. A model the table does not price is listed as unpriced, never
// guessed; without a table there is no money at all.
//
// The package reads *graph.Run (run and per-agent totals) and knows
// nothing of SQL, rules or rendering; findings, diff and the web pages show
// what it computes.
package money

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// Rates are one model's prices, in the table's currency per million tokens.
type Rates struct {
	Input float64 `json:"input"`
	// CachedInput is the price of cache reads; without HasCachedInput,
	// Input applies.
	CachedInput    float64 `json:"cached_input"`
	HasCachedInput bool    `json:"-"`
	// CacheWrite is the price of cache creation; without HasCacheWrite,
	// Input applies.
	CacheWrite    float64 `json:"cache_write"`
	HasCacheWrite bool    `json:"-"`
	Output        float64 `json:"output"`
}

// MarshalJSON writes the rates in force: cached_input and cache_write are
// the input rate when the table left them out.
func (r Rates) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Input       float64 `json:"input"`
		CachedInput float64 `json:"cached_input"`
		CacheWrite  float64 `json:"cache_write"`
		Output      float64 `json:"output"`
	}{r.Input, r.cached(), r.write(), r.Output})
}

// cached is the rate of cache reads in force.
func (r Rates) cached() float64 {
	if r.HasCachedInput {
		return r.CachedInput
	}
	return r.Input
}

// write is the rate of cache writes in force.
func (r Rates) write() float64 {
	if r.HasCacheWrite {
		return r.CacheWrite
	}
	return r.Input
}

// Cost is what one model call with usage u costs at r (see the package
// doc for the formula).
func (r Rates) Cost(u record.Usage) float64 {
	var cached, write int64
	if u.CachedReported {
		cached = u.Cached
	}
	if u.CacheWriteReported {
		write = u.CacheWrite
	}
	plain := u.In - cached - write
	if plain < 0 { // impossible counts: never a negative price
		plain = 0
	}
	return (float64(plain)*r.Input + float64(cached)*r.cached() + float64(write)*r.write() + float64(u.Out)*r.Output) / 1e6
}

// Saved is what the prompt cache saved on one model call with usage u at
// r, from the figures the source reported: its cache reads cost the
// cached-input rate instead of the input rate, its cache writes the write
// rate instead of the input rate. Negative when the writes cost more than
// the reads saved; 0 when nothing was reported.
func (r Rates) Saved(u record.Usage) float64 {
	var saved float64
	if u.CachedReported {
		saved += float64(u.Cached) * (r.Input - r.cached())
	}
	if u.CacheWriteReported {
		saved -= float64(u.CacheWrite) * (r.write() - r.Input)
	}
	return saved / 1e6
}

// Discount is what tokens of input would have cost less read from the
// cache than sent uncached at r: tokens × (input − cached input) ÷
// 1,000,000 (0 when the table gives cache reads no lower rate).
func (r Rates) Discount(tokens int64) float64 {
	return float64(max(tokens, 0)) * max(r.Input-r.cached(), 0) / 1e6
}

// Price is one entry of a Table: a model name, or a prefix ending in *,
// and its rates.
type Price struct {
	// Model is the model name, or a pattern "claude-sonnet-4*" matching
	// every name that starts with the rest.
	Model string
	Rates Rates
	// Source says where the entry was written (".inspect.yaml:12").
	Source string
}

// Table is a price table. The zero Currency reads USD.
type Table struct {
	// Currency is an ISO code ("USD", "EUR").
	Currency string
	Prices   []Price
}

// CurrencyCode is t's currency, USD when unset.
func (t *Table) CurrencyCode() string {
	if t == nil || t.Currency == "" {
		return "USD"
	}
	return strings.ToUpper(t.Currency)
}

// Lookup returns the entry that prices model: an exact name first, else
// the longest matching pattern.
func (t *Table) Lookup(model string) (Price, bool) {
	if t == nil {
		return Price{}, false
	}
	best, found := Price{}, false
	for _, p := range t.Prices {
		if p.Model == model {
			return p, true
		}
		if prefix, ok := strings.CutSuffix(p.Model, "*"); ok && strings.HasPrefix(model, prefix) {
			if !found || len(prefix) > len(strings.TrimSuffix(best.Model, "*")) {
				best, found = p, true
			}
		}
	}
	return best, found
}

// Format writes amount in currency: "$0.0123" for USD, "0.0123 EUR"
// otherwise; four decimals below 1, two from 1 on, so a cheap call still
// shows what it cost.
func Format(amount float64, currency string) string {
	digits := 4
	if math.Abs(amount) >= 1 {
		digits = 2
	}
	s := fmt.Sprintf("%.*f", digits, amount)
	if s == "-0.0000" || s == "-0.00" {
		s = s[1:]
	}
	if currency == "" || strings.EqualFold(currency, "USD") {
		if strings.HasPrefix(s, "-") {
			return "-$" + s[1:]
		}
		return "$" + s
	}
	return s + " " + strings.ToUpper(currency)
}

// Round keeps amounts to a millionth, so JSON carries 0.0123, not
// 0.012299999999999998.
func Round(amount float64) float64 { return math.Round(amount*1e6) / 1e6 }

// Usage sums the token counts of a set of model calls.
type Usage struct {
	Calls      int   `json:"calls"`
	TokensIn   int64 `json:"tokens_in"`
	Cached     int64 `json:"cached"`      // reported cache reads
	CacheWrite int64 `json:"cache_write"` // reported cache writes
	TokensOut  int64 `json:"tokens_out"`
}

func (u *Usage) add(x record.Usage) {
	u.Calls++
	u.TokensIn += x.In
	u.TokensOut += x.Out
	if x.CachedReported {
		u.Cached += x.Cached
	}
	if x.CacheWriteReported {
		u.CacheWrite += x.CacheWrite
	}
}

// Amount is money spent by some model calls.
type Amount struct {
	Usage
	// Amount is the money, rounded to a millionth; it covers the priced
	// calls only.
	Amount float64 `json:"amount"`
	// Unpriced counts the calls whose model the table does not price.
	Unpriced int `json:"unpriced_calls"`
}

// AgentCost is one agent's model calls and their price.
type AgentCost struct {
	Agent string `json:"agent"`
	Amount
}

// ModelCost is one model's calls, their price and the rates used.
type ModelCost struct {
	Model string `json:"model"`
	// Priced says whether the table prices the model; Pattern is the
	// table entry that did and Rates its rates.
	Priced  bool   `json:"priced"`
	Pattern string `json:"pattern,omitempty"`
	Rates   *Rates `json:"rates,omitempty"`
	Amount
}

// RunCost is the money a run spent on model calls.
type RunCost struct {
	// Currency is the table's ISO code.
	Currency string `json:"currency"`
	// Total covers every priced call; Partial is true when some calls'
	// model had no price (Total then leaves them out).
	Total   Amount `json:"total"`
	Partial bool   `json:"partial"`
	// Agents in the run's order of first appearance.
	Agents []AgentCost `json:"agents"`
	// Models in name order.
	Models []ModelCost `json:"models"`
}

// Format writes a in the run's currency.
func (c *RunCost) Format(a float64) string { return Format(a, c.Currency) }

// Run prices every model call of g with t; nil when t is nil (no table:
// nothing invented).
func Run(t *Table, g *graph.Run) *RunCost {
	if t == nil {
		return nil
	}
	c := &RunCost{Currency: t.CurrencyCode(), Agents: []AgentCost{}, Models: []ModelCost{}}
	agents := map[string]*AgentCost{}
	var agentOrder []string
	models := map[string]*ModelCost{}
	var totalRaw float64
	agentRaw := map[string]float64{}
	modelRaw := map[string]float64{}
	for _, n := range g.Nodes {
		if n.Kind != record.KindLLM || n.LLM == nil {
			continue
		}
		a := agents[n.Agent]
		if a == nil {
			a = &AgentCost{Agent: n.Agent}
			agents[n.Agent] = a
			agentOrder = append(agentOrder, n.Agent)
		}
		m := models[n.LLM.Model]
		if m == nil {
			m = &ModelCost{Model: n.LLM.Model}
			if p, ok := t.Lookup(n.LLM.Model); ok {
				rates := p.Rates
				m.Priced, m.Pattern, m.Rates = true, p.Model, &rates
			}
			models[n.LLM.Model] = m
		}
		u := n.LLM.Usage
		c.Total.add(u)
		a.add(u)
		m.add(u)
		if !m.Priced {
			c.Total.Unpriced++
			a.Unpriced++
			m.Unpriced++
			continue
		}
		cost := m.Rates.Cost(u)
		totalRaw += cost
		agentRaw[n.Agent] += cost
		modelRaw[n.LLM.Model] += cost
	}
	c.Total.Amount = Round(totalRaw)
	c.Partial = c.Total.Unpriced > 0
	for _, name := range agentOrder {
		a := agents[name]
		a.Amount.Amount = Round(agentRaw[name])
		c.Agents = append(c.Agents, *a)
	}
	names := make([]string, 0, len(models))
	for name := range models {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		m := models[name]
		m.Amount.Amount = Round(modelRaw[name])
		c.Models = append(c.Models, *m)
	}
	return c
}

// Agent returns agent's cost in c, or nil.
func (c *RunCost) Agent(agent string) *AgentCost {
	if c == nil {
		return nil
	}
	for i := range c.Agents {
		if c.Agents[i].Agent == agent {
			return &c.Agents[i]
		}
	}
	return nil
}

// Unpriced lists the models without a price, "name (N calls)".
func (c *RunCost) Unpriced() []string {
	var out []string
	for _, m := range c.Models {
		if !m.Priced {
			out = append(out, UnpricedModel(m.Model, m.Calls))
		}
	}
	return out
}

// UnpricedModel says a model the table does not price and its calls:
// "gpt-x (3 calls)".
func UnpricedModel(model string, calls int) string {
	if model == "" {
		model = "(no model recorded)"
	}
	return fmt.Sprintf("%s (%d %s)", model, calls, plural(calls, "call", "calls"))
}

// Summary is the one-line human form: "$0.0123 · 3 of 4 calls priced (no
// price for gpt-x: 1 call)".
func (c *RunCost) Summary() string {
	s := c.Format(c.Total.Amount)
	if c.Partial {
		s += fmt.Sprintf(" for %d of %d model calls; no price for %s", c.Total.Calls-c.Total.Unpriced, c.Total.Calls, strings.Join(c.Unpriced(), ", "))
	}
	return s
}

// Tokens is what a finding's price counts, to be priced at one model's
// rates.
type Tokens struct {
	In, Out        int64
	Cached         int64
	CachedReported bool
}

// Spend is the money of a number of tokens at one model's rates (a
// finding's price in money).
type Spend struct {
	Currency string  `json:"currency"`
	Amount   float64 `json:"amount"`
	// Model is the model whose rates priced it.
	Model string `json:"model"`
}

// Format writes the spend.
func (s Spend) Format() string { return Format(s.Amount, s.Currency) }

// PriceTokens prices tok at model's rates in t: false when t is nil, the
// model has no price, or there are no tokens to price.
func PriceTokens(t *Table, model string, tok Tokens) (Spend, bool) {
	if t == nil || tok.In+tok.Out == 0 {
		return Spend{}, false
	}
	p, ok := t.Lookup(model)
	if !ok {
		return Spend{}, false
	}
	cost := p.Rates.Cost(record.Usage{In: tok.In, Out: tok.Out, Cached: tok.Cached, CachedReported: tok.CachedReported})
	return Spend{Currency: t.CurrencyCode(), Amount: Round(cost), Model: model}, true
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
