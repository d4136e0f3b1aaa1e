// Package report writes a cache.Report (`inspect cache`) as plain text,
// Markdown (which cmd/inspect renders with glamour on a terminal) and JSON
// (the schema of docs/cache-json.md), and the short forms other outputs
// show: an llm node's reusable share for a graph label, the %% cache line
// of a Mermaid chart, a node's prefix analysis for `inspect show`.
//
// Every figure says whether it was predicted or reported: a hit or a miss
// is only called measured when the provider (or the scripted model's
// simulated cache) reported it. Text from the run (agent names, snippets
// of prompts and messages) is escaped in the Markdown (termsafe.Markdown,
// as the audit and diff reports do) and written as it is in the plain text
// (the terminal sanitizer of cmd/inspect makes it safe); JSON carries it
// as data.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/chart"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/internal/termsafe"
	"github.com/inspect-dev/inspect/money"
)

// Markdown and Text are the two styles of the human-readable report.
type style int

const (
	plain style = iota
	markdown
)

// WriteText writes rep as plain text.
func WriteText(w io.Writer, rep *cache.Report, node int64) error {
	return write(w, rep, node, plain)
}

// WriteMarkdown writes rep as Markdown. node > 0 writes only that call's
// analysis in full.
func WriteMarkdown(w io.Writer, rep *cache.Report, node int64) error {
	return write(w, rep, node, markdown)
}

type writer struct {
	w   io.Writer
	err error
	st  style
}

func (w *writer) printf(format string, args ...any) {
	if w.err == nil {
		_, w.err = fmt.Fprintf(w.w, format, args...)
	}
}

func (w *writer) heading(level int, s string) {
	if w.st == markdown {
		w.printf("%s %s\n\n", strings.Repeat("#", level), s)
		return
	}
	if level == 1 {
		w.printf("%s\n\n", s)
		return
	}
	w.printf("%s:\n", s)
}

func (w *writer) bold(s string) string {
	if w.st == markdown {
		return "**" + s + "**"
	}
	return s
}

func (w *writer) item(s string) {
	if w.st == markdown {
		w.printf("- %s\n", s)
		return
	}
	w.printf("  %s\n", s)
}

func (w *writer) end() { w.printf("\n") }

// text is untrusted text from the run (an agent or branch name, a model, a
// tool, what a request held) as the style writes it: in Markdown through
// termsafe.Markdown, the escaper the audit and diff reports share, so it
// never turns into structure; in plain text as it is (the terminal
// sanitizer of cmd/inspect makes it safe).
func (w *writer) text(s string) string {
	if w.st == markdown {
		return termsafe.Markdown(s)
	}
	return s
}

// Source says where the run's reported cached tokens come from.
func Source(rep *cache.Report) string {
	switch {
	case rep.Total.ReadsReported == 0:
		return "nothing was reported: every cache figure here is a prediction from the request bytes"
	case rep.Simulated:
		return "reported cached tokens come from the scripted model's simulated cache, which uses the same definition as the prediction"
	case rep.Total.Analyzed == 0:
		return "reported cached tokens come from the provider; no call's request could be analysed, so nothing here is predicted"
	}
	return "reported cached tokens come from the provider; predictions are from the request bytes"
}

// minimum states the minimum cacheable prefix in force: the provider's
// (--min-prefix), or, on a scripted run, that the simulated cache has
// none (DESIGN §5: it reports the longest shared prefix, however short),
// so a 5-token read there does not contradict a stated 1,024 minimum.
func minimum(rep *cache.Report) string {
	if rep.Simulated {
		return fmt.Sprintf("the simulated cache has no minimum prefix: it reports shared prefixes of any length, where a provider caches none under its minimum (%s tokens by --min-prefix)", group(rep.MinPrefix))
	}
	return "minimum cacheable prefix " + group(rep.MinPrefix) + " tokens"
}

func write(out io.Writer, rep *cache.Report, node int64, st style) error {
	w := &writer{w: out, st: st}
	if node > 0 {
		c := rep.Call(node)
		if c == nil {
			return fmt.Errorf("internal error: n%d is not an llm node of the report", node)
		}
		w.heading(1, fmt.Sprintf("Prompt cache · %s · run %s", c.Node.ID(), w.text(rep.Run)))
		w.printf("%s.\n\n", capitalize(Source(rep)))
		callDetail(w, rep, c)
		return w.err
	}
	w.heading(1, "Prompt cache · run "+w.text(rep.Run))
	w.printf("%s. Lifetime %s; %s.\n\n", capitalize(Source(rep)), graph.FormatDuration(rep.Lifetime), minimum(rep))
	w.item(w.bold("run") + ": " + totals(rep.Total, rep.Currency))
	w.end()
	if rep.Currency != "" {
		note := "Money from the price table in " + rep.Currency + ": cost from the reported usage; saved by the reported cache reads and writes against sending all input uncached; the misses' uncached input priced at the input rate less the cached-input rate."
		if len(rep.Unpriced) > 0 {
			note += " No price for " + w.text(strings.Join(rep.Unpriced, ", ")) + ": not counted."
		}
		w.printf("%s\n\n", note)
	} else {
		w.printf("No money without a price table: add `prices:` to .inspect.yaml (`inspect init` writes a commented one).\n\n")
	}
	if causes := missCauses(rep); len(causes) > 0 {
		w.heading(2, "Where reuse broke")
		for _, c := range causes {
			w.item(c)
		}
		w.end()
	}
	w.heading(2, "Calls")
	shared, n := sharedSkip(rep.Calls)
	if shared != "" {
		w.printf("%s of %s calls not analysed: %s. Their figures below are the provider's alone.\n\n", group(int64(n)), group(int64(len(rep.Calls))), w.text(shared))
	}
	for _, c := range rep.Calls {
		w.item(callLine(w, c, shared))
	}
	w.end()
	var mism, unst []*cache.Call
	for _, c := range rep.Calls {
		if c.Mismatch != nil {
			mism = append(mism, c)
		}
		if c.Unstable != nil {
			unst = append(unst, c)
		}
	}
	if len(mism) > 0 {
		w.heading(2, "Reported against predicted")
		for _, c := range mism {
			w.item(fmt.Sprintf("%s (%s): %s", w.bold(c.Node.ID()), c.Mismatch.Kind, w.text(c.Mismatch.Text())))
		}
		w.end()
	}
	if len(unst) > 0 {
		w.heading(2, "Unstable prefixes (cache.unstable-prefix)")
		for _, c := range unst {
			u := c.Unstable
			w.item(fmt.Sprintf("%s against %s: broke at %s (%s): %s; ≈%s tokens re-sent uncached", w.bold(c.Node.ID()), u.Previous.ID(), u.Break.Where, u.Break.What, w.text(u.Break.Why), group(u.Lost)))
		}
		w.end()
	}
	w.heading(2, "By conversation")
	for _, g := range rep.Conversations {
		name := "trunk"
		if g.Name != "" {
			name = "branch " + g.Name
		}
		w.item(w.bold(w.text(name)) + ": " + totals(g.Totals, rep.Currency))
	}
	w.end()
	w.heading(2, "By agent")
	for _, g := range rep.Agents {
		w.item(w.bold(w.text(orDash(g.Name))) + ": " + totals(g.Totals, rep.Currency))
	}
	w.end()
	return w.err
}

// totals is one line of totals.
func totals(t cache.Totals, currency string) string {
	s := fmt.Sprintf("%s calls · in %s · cache reads %s (%s) · writes %s · uncached input %s · hit ratio %s · weighted %s tokens",
		group(int64(t.Calls)), group(t.In), group(t.Reads), t.Basis(), writes(t), group(t.Uncached), percent(t.HitRatio()), group(int64(t.Weighted+0.5)))
	if t.Mismatches > 0 {
		s += fmt.Sprintf(" · %d reported unlike predicted", t.Mismatches)
	}
	return s + moneyText(t.Money, currency)
}

// moneyText is a totals line's money part: " · cost $0.0123 · cache
// saved $0.0040 · uncached input ≈$0.0010 above the cache-read price"; ""
// without a price table.
func moneyText(m *cache.Money, currency string) string {
	switch {
	case m == nil:
		return ""
	case m.Priced == 0:
		return " · no call priced"
	}
	s := fmt.Sprintf(" · cost %s · cache saved %s · uncached input ≈%s above the cache-read price",
		money.Format(m.Spent, currency), money.Format(m.Saved, currency), money.Format(m.Uncached, currency))
	if m.Unpriced > 0 {
		s += fmt.Sprintf(" (%d of %d calls priced)", m.Priced, m.Priced+m.Unpriced)
	}
	return s
}

func writes(t cache.Totals) string {
	if t.WritesReported == 0 {
		return "not reported"
	}
	return group(t.Writes)
}

// sharedSkip is why the calls not analysed were not, when two or more
// were and all for the one reason (an import without the system prompt
// and tools: every call of it), and how many: said once above the list,
// not on each call.
func sharedSkip(calls []*cache.Call) (string, int) {
	why, n := "", 0
	for _, c := range calls {
		switch {
		case c.Analyzed:
		case n == 0:
			why, n = c.Skipped, 1
		case c.Skipped != why:
			return "", 0
		default:
			n++
		}
	}
	if n < 2 {
		return "", 0
	}
	return why, n
}

// callLine is one call in the list; shared is the reason not to repeat
// on a call not analysed (sharedSkip).
func callLine(w *writer, c *cache.Call, shared string) string {
	n := c.Node
	head := fmt.Sprintf("%s @%s (%s)", w.bold(n.ID()), w.text(orDash(n.Agent)), w.text(convName(n)))
	if !c.Analyzed {
		if shared != "" && c.Skipped == shared {
			return fmt.Sprintf("%s: %s", head, reported(c))
		}
		return fmt.Sprintf("%s: not analysed: %s; %s", head, w.text(c.Skipped), reported(c))
	}
	s := fmt.Sprintf("%s: %s · %s · uncached ≈%s tokens", head, reusable(c), reported(c), group(c.Uncached()))
	if c.Fidelity == "reconstructed" {
		s += " · reconstructed request"
	}
	if b := breakText(w, c.Break); b != "" {
		s += " — " + b
	}
	if c.Mismatch != nil {
		s += " — " + c.Mismatch.Kind + ": " + w.text(c.Mismatch.Text())
	}
	return s
}

// causeNames say each break cause in a few words.
var causeNames = map[string]string{
	cache.CauseCold: "cold start (nothing earlier to reuse)", cache.CauseRepeat: "repeated prompt",
	cache.CauseHandoff: "new agent after a hand-off", cache.CauseBack: "hand-off back (the agent's own prefix reused)",
	cache.CauseBranch: "fork branch start (its assignment, or its agent's own prompt)", cache.CauseCompact: "tool call dropped by compact context",
	cache.CauseJoin: "parent after a join", cache.CauseEdited: "an earlier message changed",
	cache.CauseTools: "tool array changed within a conversation", cache.CauseSystem: "system prompt changed within a conversation",
	cache.CauseOther: "shared only with another conversation's request", cache.CauseCut: "history cut (a compaction)",
}

// CauseName says a break cause (a cache.Cause* constant) in a few words.
func CauseName(cause string) string {
	if n := causeNames[cause]; n != "" {
		return n
	}
	return cause
}

// missCauses sums the calls whose reuse broke before their conversation's
// new tail, by cause, with the input they sent uncached: where each miss
// came from and what it cost.
func missCauses(rep *cache.Report) []string {
	type sum struct {
		nodes    []string
		uncached int64
		money    float64
		priced   bool
		expected bool
	}
	var order []string
	by := map[string]*sum{}
	for _, c := range rep.Calls {
		if !c.Analyzed || c.Break.Cause == cache.CauseTail || c.Break.Cause == cache.CauseRepeat {
			continue
		}
		s := by[c.Break.Cause]
		if s == nil {
			s = &sum{expected: c.Break.Expected}
			by[c.Break.Cause] = s
			order = append(order, c.Break.Cause)
		}
		s.nodes = append(s.nodes, c.Node.ID())
		s.uncached += c.Uncached()
		if c.Money != nil {
			s.money += c.Money.Uncached
			s.priced = true
		}
	}
	var out []string
	for _, cause := range order {
		s := by[cause]
		name := causeNames[cause]
		if name == "" {
			name = cause
		}
		note := ""
		if !s.expected {
			note = " — not expected: something early changed"
		}
		nodes := strings.Join(s.nodes, ", ")
		if len(s.nodes) > 12 {
			nodes = strings.Join(s.nodes[:12], ", ") + fmt.Sprintf(", … (%d more)", len(s.nodes)-12)
		}
		cost := ""
		if s.priced {
			cost = ", ≈" + money.Format(s.money, rep.Currency) + " above the cache-read price"
		}
		out = append(out, fmt.Sprintf("%s: %s, ≈%s tokens sent uncached%s (%s)%s", name, plural(len(s.nodes), "call", "calls"), group(s.uncached), cost, nodes, note))
	}
	return out
}

// reusable is "reusable 94% (5,251 of 5,568 bytes, ≈1,312 tokens) from n2".
func reusable(c *cache.Call) string {
	s := fmt.Sprintf("predicted reusable %s (%s of %s bytes, ≈%s tokens)", percent(c.Share), group(int64(c.Reusable)), group(int64(c.Bytes)), group(c.Tokens))
	if c.Match != nil {
		s += " from " + c.Match.ID()
	}
	return s
}

func reported(c *cache.Call) string {
	r := c.Reported
	s := "cached not reported"
	if r.CachedReported {
		s = fmt.Sprintf("reported cached %s of %s", group(r.Cached), group(r.In))
	}
	if r.CacheWriteReported {
		s += fmt.Sprintf(", cache write %s", group(r.CacheWrite))
	}
	return s
}

// breakText says where reuse broke and why. Where (tools, system,
// message N) is the analysis' own word; What (the tool that moved, the
// line of the system prompt) is written as it is, as inspect show's
// Markdown, which ShowMarkdown is a section of, writes a node's tools and
// prompts.
func breakText(w *writer, b cache.Break) string {
	if b.Where == "" || b.Cause == cache.CauseTail {
		return w.text(b.Why)
	}
	s := "broke at " + b.Where
	if b.What != "" {
		s += " (" + b.What + ")"
	}
	s += ": " + w.text(b.Why)
	if !b.Expected {
		s += " [unexpected]"
	}
	return s
}

// callDetail is one call's analysis in full.
func callDetail(w *writer, rep *cache.Report, c *cache.Call) {
	n := c.Node
	w.item(fmt.Sprintf("node: %s @%s, %s, model %s", n.ID(), w.text(orDash(n.Agent)), w.text(convName(n)), w.text(n.LLM.Model)))
	if !c.Analyzed {
		w.item("not analysed: " + w.text(c.Skipped))
		w.item(reported(c))
		w.end()
		return
	}
	w.item(fmt.Sprintf("request: %s, %s bytes as the cache compares them (tools, system, messages)", c.Fidelity, group(int64(c.Bytes))))
	w.item(reusable(c) + " (predicted)")
	if c.Match != nil {
		w.item(fmt.Sprintf("the earlier request: %s (%s @%s), finished %s before this one started", c.Match.ID(), w.text(convName(c.Match)), w.text(orDash(c.Match.Agent)), graph.FormatDuration(c.Since)))
	}
	if c.Break.Where != "" {
		w.item("broke at: " + c.Break.Where + " — " + c.Break.What)
	}
	if c.Break.Location.Path != "" {
		w.item("prompt file: " + w.text(c.Break.Location.String()))
	}
	expected := "expected for this shape"
	if !c.Break.Expected {
		expected = "not expected: something early changed"
	}
	w.item(fmt.Sprintf("why: %s (%s, %s)", w.text(c.Break.Why), c.Break.Cause, expected))
	w.item(reported(c) + fmt.Sprintf(" · uncached ≈%s tokens", group(c.Uncached())))
	if m := c.Money; m != nil {
		w.item(fmt.Sprintf("money: cost %s · cache saved %s · uncached input ≈%s above the cache-read price",
			money.Format(m.Spent, rep.Currency), money.Format(m.Saved, rep.Currency), money.Format(m.Uncached, rep.Currency)))
	}
	if c.Mismatch != nil {
		w.item(fmt.Sprintf("mismatch (%s): %s", c.Mismatch.Kind, w.text(c.Mismatch.Text())))
	}
	if u := c.Unstable; u != nil {
		w.item(fmt.Sprintf("unstable prefix against %s: broke at %s (%s): %s; ≈%s tokens re-sent uncached", u.Previous.ID(), u.Break.Where, u.Break.What, w.text(u.Break.Why), group(u.Lost)))
	}
	w.end()
}

// Share is an llm node's label part for a graph: "reuse 94%" (predicted),
// with the reported share beside it when the provider reported one that
// differs; "" when the call was not analysed.
func Share(c *cache.Call) string {
	if c == nil || !c.Analyzed {
		return ""
	}
	return "reuse " + percent(c.Share)
}

// Notes are the chart's annotations of rep (chart.Notes, which mermaid's
// labels carry): each analysed llm node's Share and the "cache" header line
// (Header). A nil rep gives none.
func Notes(rep *cache.Report) chart.Notes {
	if rep == nil {
		return chart.Notes{}
	}
	return chart.Notes{
		Header: "cache " + Header(rep),
		Node:   func(n *graph.Node) string { return Share(rep.Call(n.Seq)) },
	}
}

// Header is the %% cache line of a Mermaid chart (without the %%).
func Header(rep *cache.Report) string {
	t := rep.Total
	reusable := percent(ratio(t.Predicted, t.In)) + " of input"
	if t.Analyzed == 0 {
		reusable = "not analysed" // as inspect cache says: no call's request could be analysed
	}
	s := fmt.Sprintf("reads %s (%s) · predicted reusable %s · hit ratio %s · weighted %s tokens",
		group(t.Reads), t.Basis(), reusable, percent(t.HitRatio()), group(int64(t.Weighted+0.5)))
	if t.Mismatches > 0 {
		s += fmt.Sprintf(" · %d reported unlike predicted", t.Mismatches)
	}
	return s
}

// ShowMarkdown writes llm node seq's prefix analysis for `inspect show`:
// a section of its Markdown.
func ShowMarkdown(w io.Writer, rep *cache.Report, seq int64) error {
	c := rep.Call(seq)
	if c == nil {
		return nil
	}
	wr := &writer{w: w, st: markdown}
	wr.heading(2, "Prompt cache")
	wr.printf("%s.\n\n", capitalize(Source(rep)))
	callDetail(wr, rep, c)
	return wr.err
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func percent(f float64) string { return fmt.Sprintf("%d%%", int(f*100+0.5)) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func convName(n *graph.Node) string {
	if n.Branch == "" {
		return "trunk"
	}
	return "branch " + n.Branch
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// group writes 4000 as 4,000.
func group(n int64) string { return graph.FormatCount(n) }

// Schema names the JSON format: within a version fields are only added.
const Schema = "inspect.cache/v1"

// JSON types: docs/cache-json.md documents them field by field.
type jsonReport struct {
	Schema          string      `json:"schema"`
	Run             string      `json:"run"`
	LifetimeMS      int64       `json:"lifetime_ms"`
	MinPrefixTokens int64       `json:"min_prefix_tokens"`
	Reported        string      `json:"reported_by"`
	Totals          jsonTotals  `json:"totals"`
	Conversations   []jsonGroup `json:"conversations"`
	Agents          []jsonGroup `json:"agents"`
	Calls           []jsonCall  `json:"calls"`
	Currency        *string     `json:"currency"`
	UnpricedModels  []string    `json:"unpriced_models"`
}

type jsonTotals struct {
	Calls          int        `json:"calls"`
	Analyzed       int        `json:"analyzed"`
	TokensIn       int64      `json:"tokens_in"`
	TokensOut      int64      `json:"tokens_out"`
	CacheReads     int64      `json:"cache_reads"`
	ReadsReported  int        `json:"cache_reads_reported_calls"`
	CacheWrites    int64      `json:"cache_writes"`
	WritesReported int        `json:"cache_writes_reported_calls"`
	Predicted      int64      `json:"predicted_reusable_tokens"`
	Uncached       int64      `json:"uncached_input"`
	HitRatio       float64    `json:"hit_ratio"`
	Weighted       float64    `json:"weighted_tokens"`
	Basis          string     `json:"basis"`
	Mismatches     int        `json:"mismatches"`
	Money          *jsonMoney `json:"money"`
}

type jsonMoney struct {
	Spent         float64 `json:"spent"`
	Saved         float64 `json:"saved"`
	UncachedExtra float64 `json:"uncached_extra"`
	Priced        *int    `json:"priced_calls,omitempty"`
	Unpriced      *int    `json:"unpriced_calls,omitempty"`
}

func toMoney(m *cache.Money, counts bool) *jsonMoney {
	if m == nil {
		return nil
	}
	j := &jsonMoney{Spent: money.Round(m.Spent), Saved: money.Round(m.Saved), UncachedExtra: money.Round(m.Uncached)}
	if counts {
		p, u := m.Priced, m.Unpriced
		j.Priced, j.Unpriced = &p, &u
	}
	return j
}

type jsonGroup struct {
	Conversation *string `json:"conversation,omitempty"`
	Agent        *string `json:"agent,omitempty"`
	jsonTotals
}

type jsonCall struct {
	Node          string        `json:"node"`
	Conversation  string        `json:"conversation"`
	Agent         string        `json:"agent"`
	Model         string        `json:"model"`
	Request       *string       `json:"request"`
	Analyzed      bool          `json:"analyzed"`
	Skipped       string        `json:"skipped,omitempty"`
	PromptBytes   int           `json:"prompt_bytes"`
	ReusableBytes int           `json:"reusable_bytes"`
	ReusableTok   int64         `json:"reusable_tokens"`
	ReusableShare float64       `json:"reusable_share"`
	Match         *string       `json:"match"`
	SinceMS       *int64        `json:"since_ms"`
	Break         *jsonBreak    `json:"break"`
	Reported      jsonReported  `json:"reported"`
	Uncached      int64         `json:"uncached_input"`
	Mismatch      *jsonMismatch `json:"mismatch"`
	Unstable      *jsonUnstable `json:"unstable"`
	Money         *jsonMoney    `json:"money"`
}

type jsonMismatch struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

type jsonBreak struct {
	Where    string        `json:"where"`
	Message  *int          `json:"message"`
	What     string        `json:"what"`
	Cause    string        `json:"cause"`
	Why      string        `json:"why"`
	Expected bool          `json:"expected"`
	Location *jsonLocation `json:"location"`
}

type jsonLocation struct {
	Path string `json:"path"`
	Line int    `json:"line"`
}

type jsonReported struct {
	TokensIn   int64  `json:"tokens_in"`
	TokensOut  int64  `json:"tokens_out"`
	Cached     *int64 `json:"cached"`
	CacheWrite *int64 `json:"cache_write"`
}

type jsonUnstable struct {
	Previous   string    `json:"previous"`
	Break      jsonBreak `json:"break"`
	LostTokens int64     `json:"lost_tokens"`
}

func toTotals(t cache.Totals) jsonTotals {
	return jsonTotals{Calls: t.Calls, Analyzed: t.Analyzed, TokensIn: t.In, TokensOut: t.Out, CacheReads: t.Reads, ReadsReported: t.ReadsReported,
		CacheWrites: t.Writes, WritesReported: t.WritesReported, Predicted: t.Predicted, Uncached: t.Uncached,
		HitRatio: round(t.HitRatio()), Weighted: t.Weighted, Basis: t.Basis(), Mismatches: t.Mismatches, Money: toMoney(t.Money, true)}
}

func round(f float64) float64 { return float64(int64(f*10000+0.5)) / 10000 }

func toBreak(b cache.Break) jsonBreak {
	jb := jsonBreak{Where: b.Where, What: b.What, Cause: b.Cause, Why: b.Why, Expected: b.Expected}
	if b.Message >= 0 {
		k := b.Message
		jb.Message = &k
	}
	if b.Location.Path != "" {
		jb.Location = &jsonLocation{b.Location.Path, b.Location.Line}
	}
	return jb
}

// WriteJSON writes rep as JSON (docs/cache-json.md); node > 0 keeps only
// that call in calls.
func WriteJSON(w io.Writer, rep *cache.Report, node int64) error {
	out := jsonReport{Schema: Schema, Run: rep.Run, LifetimeMS: rep.Lifetime.Milliseconds(), MinPrefixTokens: rep.MinPrefix, Reported: "provider",
		Totals: toTotals(rep.Total), Conversations: []jsonGroup{}, Agents: []jsonGroup{}, Calls: []jsonCall{}, UnpricedModels: []string{}}
	if rep.Currency != "" {
		c := rep.Currency
		out.Currency = &c
		out.UnpricedModels = append(out.UnpricedModels, rep.Unpriced...)
	}
	switch {
	case rep.Total.ReadsReported == 0:
		out.Reported = "none"
	case rep.Simulated:
		out.Reported = "scripted-simulation"
	}
	for _, g := range rep.Conversations {
		name := g.Name
		out.Conversations = append(out.Conversations, jsonGroup{Conversation: &name, jsonTotals: toTotals(g.Totals)})
	}
	for _, g := range rep.Agents {
		name := g.Name
		out.Agents = append(out.Agents, jsonGroup{Agent: &name, jsonTotals: toTotals(g.Totals)})
	}
	for _, c := range rep.Calls {
		if node > 0 && c.Node.Seq != node {
			continue
		}
		n := c.Node
		jc := jsonCall{Node: n.ID(), Conversation: n.Branch, Agent: n.Agent, Model: n.LLM.Model, Analyzed: c.Analyzed, Skipped: c.Skipped,
			PromptBytes: c.Bytes, ReusableBytes: c.Reusable, ReusableTok: c.Tokens, ReusableShare: round(c.Share),
			Reported: jsonReported{TokensIn: c.Reported.In, TokensOut: c.Reported.Out}, Uncached: c.Uncached(), Money: toMoney(c.Money, false)}
		if m := c.Mismatch; m != nil {
			jc.Mismatch = &jsonMismatch{Kind: m.Kind, Text: m.Text()}
		}
		if c.Fidelity != "" {
			f := string(c.Fidelity)
			jc.Request = &f
		}
		if c.Reported.CachedReported {
			v := c.Reported.Cached
			jc.Reported.Cached = &v
		}
		if c.Reported.CacheWriteReported {
			v := c.Reported.CacheWrite
			jc.Reported.CacheWrite = &v
		}
		if c.Analyzed {
			b := toBreak(c.Break)
			jc.Break = &b
			if c.Match != nil {
				id, ms := c.Match.ID(), c.Since.Milliseconds()
				jc.Match, jc.SinceMS = &id, &ms
			}
		}
		if u := c.Unstable; u != nil {
			jc.Unstable = &jsonUnstable{Previous: u.Previous.ID(), Break: toBreak(u.Break), LostTokens: u.Lost}
		}
		out.Calls = append(out.Calls, jc)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return group(int64(n)) + " " + many
}
