// Package cache is the prompt-cache analysis of a recorded run (DESIGN
// §15, `inspect cache`): for every llm node whose stored request holds its
// tools and system prompt (an exact request, or a reconstructed one that
// kept them, marked as such) it predicts the prefix a provider could reuse
// — the definition of package prefix, the one the scripted model's
// simulated cache uses — and names, by structure, where reuse broke:
// `tools` (which tool was added, removed, changed or moved), `system`
// (which prompt file, which line) or `messages[k]` (which message, and why:
// a new agent after a hand-off, a tool call dropped by compact, a branch's
// assignment, an edited earlier message, or just the new tail). Beside it
// stand the cached and cache-write tokens the provider reported, and each
// mismatch named (predicted reusable but reported 0: the minimum prefix
// length, the cache lifetime, routing). A hit or a miss is only ever called
// measured when the provider reported it; the rest is a prediction and
// says so. Totals per conversation, agent and run give reads, writes,
// uncached input, the hit ratio and the weighted tokens (uncached input,
// cache writes and output in full, cache reads at 25%, as zut's budget
// counts them).
//
// The analysis reads the stored requests as the store keeps them (a
// Source; *store.DB satisfies it), never rebuilding a body: a run's
// messages are read once (the bytes only of those that share their path
// with another; the full analysis then reads those of the messages its
// break names quote), interned in a prefix.Tree, and the
// requests are swept in start order through one prefix.Set per model that
// holds exactly the requests finished within the lifetime, so it costs
// O(n log n) in the run, not the sum of its request sizes.
//
// It knows no SQL and renders nothing: cmd/inspect prints a Report.
package cache

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/inspect-dev/inspect/cache/prefix"
	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/money"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/stack"
	"github.com/inspect-dev/inspect/store/layout"
)

// Source is where the analysis reads a run's stored requests, in the
// layout the store keeps them in (package store/layout, which links no
// SQL); *store.DB satisfies it (see store.DB.RequestParts and
// ScanMessages), and a test may read from anything else that does.
type Source interface {
	// RequestParts reads the requests of run (only seqs, when not nil):
	// the message links they reach, in id order, with their bytes or,
	// data false, only their sizes, and the requests' parts in seq order.
	RequestParts(ctx context.Context, run string, seqs []int64, data bool) (layout.Links, []layout.RequestParts, error)
	// ScanMessages reads links ids with their bytes.
	ScanMessages(ctx context.Context, ids []int64, link func(layout.MessageLink) error) error
}

// Options are the analysis' settings. The zero value (and nil) means the
// defaults.
type Options struct {
	// Lifetime is how long a finished request stays reusable
	// (cache-lifetime); 0 means prefix.DefaultLifetime.
	Lifetime time.Duration
	// MinPrefix is the shortest prefix, in tokens, a provider caches at
	// all (1,024 at OpenAI and for most Anthropic models); 0 means
	// DefaultMinPrefix. It only names mismatches.
	MinPrefix int64
	// Brief skips naming where each call's reuse broke (Call.Break stays
	// empty): prefixes, reported figures, mismatches, unstable prefixes
	// and totals only, as a graph's labels and the audit need them.
	Brief bool
	// Seqs, when not nil, limits the calls analysed to these llm nodes
	// (the earlier requests they may reuse are read all the same when the
	// graph holds them): `inspect show` analyses one node.
	Seqs []int64
	// Prices, when not nil, prices the calls: what each cost, what the
	// cache saved on it and what its uncached input would have cost less
	// as cache reads, summed per conversation, agent and run.
	Prices *money.Table
	// Stack is the profile of the stack the run came from: the parts of
	// its requests its provider leaves out of the prefix it compares
	// (stack.Profile.Unkeyed) are left out of the comparison, and a
	// history its compaction rewrote (Compacted) starts again. Read, which
	// has no graph, takes it from here (nil: none); Analyze, when it is
	// nil, from the graph's source.
	Stack *stack.Profile
}

func (o *Options) stack() *stack.Profile {
	if o == nil {
		return nil
	}
	return o.Stack
}

// DefaultMinPrefix is Options.MinPrefix's default.
const DefaultMinPrefix = 1024

func (o *Options) lifetime() time.Duration {
	if o == nil || o.Lifetime == 0 {
		return prefix.DefaultLifetime
	}
	return o.Lifetime
}

func (o *Options) minPrefix() int64 {
	if o == nil || o.MinPrefix <= 0 {
		return DefaultMinPrefix
	}
	return o.MinPrefix
}

// Report is the cache analysis of one run.
type Report struct {
	// Run is the run's id.
	Run string
	// Lifetime and MinPrefix are the settings in force.
	Lifetime  time.Duration
	MinPrefix int64
	// Simulated is set when the run's reported figures come from the
	// scripted model's simulated cache (the same definition as the
	// prediction), not from a provider.
	Simulated bool
	// Calls has one entry per llm node, in seq order.
	Calls []*Call
	// Total sums every call; Conversations and Agents group them (in the
	// graph's conversation order and in order of first appearance).
	Total         Totals
	Conversations []Group
	Agents        []Group
	// Currency is the price table's currency, "" without Options.Prices;
	// Unpriced lists the models the table does not price, "name (N
	// calls)".
	Currency string
	Unpriced []string
}

// Call is one llm node's analysis.
type Call struct {
	Node *graph.Node
	// Fidelity is the stored request's: exact or reconstructed; "" when
	// none was stored.
	Fidelity record.Fidelity
	// Analyzed is set when the request could be compared; else Skipped
	// says why ("no request was recorded", "the reconstructed request
	// lacks the system prompt").
	Analyzed bool
	Skipped  string
	// Bytes is the length of the request's prompt (tools, system,
	// messages) as the cache compares it.
	Bytes int
	// Reusable is the predicted reusable prefix in bytes, Tokens the same
	// in tokens (bytes/4, or in the provider's tokens scaled by the call's
	// reported input when a provider reported it), Share = Reusable/Bytes.
	Reusable int
	Tokens   int64
	Share    float64
	// Match is the earlier request the prefix is shared with (nil when
	// none shares anything), Since how long before this call started it
	// had finished.
	Match *graph.Node
	Since time.Duration
	// Break is where reuse stopped.
	Break Break
	// Reported are the provider's figures.
	Reported Reported
	// Mismatch names how the reported cached tokens differ from the
	// prediction; nil when they agree or nothing was reported.
	Mismatch *Mismatch
	// Unstable is set when, against the previous request of the same
	// conversation and agent (Previous), the prefix broke before that
	// request's last message: something early changed (cache.unstable-prefix).
	Unstable *Unstable
	// Unkeyed is set when, against Previous, the prefix holds only because
	// the part that changed is one the provider leaves out of it (Claude
	// Code's billing block): an endpoint that compares it breaks there.
	Unkeyed *UnkeyedChange
	// Previous is the llm node before this one in its conversation, or nil.
	Previous *graph.Node
	// Money is the call in money; nil without a price table or when the
	// table does not price its model.
	Money *Money

	cold string // why nothing was reusable, when Match is nil
}

// Uncached is the input c sent uncached: its input minus its cache reads
// (reported where the provider reported them, else predicted) and its
// reported cache writes.
func (c *Call) Uncached() int64 {
	r := c.Reported
	reads := int64(0)
	switch {
	case r.CachedReported:
		reads = r.Cached
	case c.Analyzed:
		reads = min(c.Tokens, r.In)
	}
	w := int64(0)
	if r.CacheWriteReported {
		w = r.CacheWrite
	}
	return max(r.In-reads-w, 0)
}

// Reported are the cache figures a provider gave for one call.
type Reported struct {
	In, Out            int64
	Cached             int64
	CachedReported     bool
	CacheWrite         int64
	CacheWriteReported bool
}

// Break kinds: what broke reuse (Break.Cause).
const (
	CauseCold    = "cold"         // nothing earlier to reuse: the first request of its model, or none within the lifetime
	CauseRepeat  = "repeat"       // the same prompt as an earlier request
	CauseTail    = "tail"         // the earlier request of its conversation reused whole; only the new tail is new
	CauseHandoff = "handoff"      // a new agent after a hand-off: its tools and system prompt are new
	CauseBack    = "handoff-back" // the agent's own prefix from before it handed off reused
	CauseJoin    = "join"         // the parent after a join: its prefix up to the fork call, the join's result new
	CauseBranch  = "branch"       // a fork branch's assignment (or its agent's other prompt)
	CauseCompact = "compact"      // a tool call dropped by compact context
	CauseEdited  = "edited"       // an earlier message of the conversation changed
	CauseTools   = "tools"        // the tool array changed within the conversation and agent
	CauseSystem  = "system"       // the system prompt changed within the conversation and agent
	CauseOther   = "other"        // an earlier request of another conversation, parting where noted
	CauseCut     = "cut"          // the conversation's history was cut (a compaction): it starts again
)

// Break is where a call's reusable prefix stopped, by structure.
type Break struct {
	// Where is "tools", "system" or "messages[k]" (k indexes the
	// request's messages array, system message included); "" when
	// nothing broke (CauseRepeat) or nothing was there (CauseCold).
	Where string
	// Message is, in the messages, k; -1 otherwise.
	Message int
	// What names the element: "tool fork added", "agents/analyst.md:3",
	// "a tool result (call_1)".
	What string
	// Tool is, in the tools, the tool What names ("" when it names none).
	Tool string
	// Cause is one of the Cause constants; Why says it in words, with the
	// evidence ("new agent billing after the hand-off at n9").
	Cause string
	Why   string
	// Expected is set when the break is the shape's known cost (DESIGN
	// §15, seed §4's table): a new tail, a hand-off, a branch's start.
	Expected bool
	// Location is the prompt file and line of a system break, when the
	// changed text is in a file of the run's project; Path "" otherwise.
	Location Location
}

// Location is a file of the run's project and a line (1-based).
type Location struct {
	Path string
	Line int
}

// String is path:line.
func (l Location) String() string {
	if l.Line > 0 {
		return fmt.Sprintf("%s:%d", l.Path, l.Line)
	}
	return l.Path
}

// Mismatch kinds.
const (
	MismatchMinimum  = "minimum"  // predicted reusable, reported 0: shorter than the provider's minimum prefix
	MismatchLifetime = "lifetime" // predicted reusable, reported 0: the earlier request may have left the cache
	MismatchRouting  = "routing"  // predicted reusable, reported 0: the request may have reached a server without it
	MismatchFewer    = "fewer"    // reported fewer than predicted
	MismatchMore     = "more"     // reported more than predicted
)

// Mismatch is how a call's reported cached tokens differ from the prediction.
type Mismatch struct {
	Kind string
	// Predicted and Reported are the call's cached tokens, predicted and
	// reported; Match is the earlier request the prediction reuses (nil:
	// none) and Since how long before the call it had finished.
	Predicted, Reported int64
	Match               *graph.Node
	Since               time.Duration
	// MinPrefix and Lifetime are the settings in force; Simulated is set
	// when the scripted model reported.
	MinPrefix int64
	Lifetime  time.Duration
	Simulated bool
}

// Text says it, with the numbers (made when asked: a run of many calls
// has as many mismatches, and a graph's labels only count them).
func (m *Mismatch) Text() string {
	from := ""
	if m.Match != nil {
		from = " from " + m.Match.ID()
	}
	p, got := m.Predicted, m.Reported
	switch {
	case m.Simulated:
		return fmt.Sprintf("the scripted model reported %d cached, the analysis predicts %d%s (does the script set usage cached?)", got, p, from)
	case m.Kind == MismatchMinimum:
		return fmt.Sprintf("predicted ≈%d tokens reusable%s, reported 0: shorter than the %d-token minimum prefix a provider caches", p, from, m.MinPrefix)
	case m.Kind == MismatchLifetime:
		return fmt.Sprintf("predicted ≈%d tokens reusable%s, reported 0: %s had finished %s before; a provider may drop a prefix sooner than the %s lifetime assumed", p, from, m.Match.ID(), graph.FormatDuration(m.Since), graph.FormatDuration(m.Lifetime))
	case m.Kind == MismatchRouting:
		return fmt.Sprintf("predicted ≈%d tokens reusable%s, reported 0: the request may have reached a server that had not seen the prefix (providers route by its first tokens; a prompt_cache_key per conversation keeps it on one)", p, from)
	case m.Kind == MismatchFewer:
		return fmt.Sprintf("reported %d cached of the ≈%d predicted%s: providers reuse whole blocks (128 tokens at OpenAI) of what they still hold", got, p, from)
	}
	return fmt.Sprintf("reported %d cached, more than the ≈%d predicted: a prefix from outside this run (an earlier run or session), or one this recording does not hold", got, p)
}

// Unstable is a prefix that broke early against the previous request of
// the same conversation and agent.
type Unstable struct {
	// Previous is that request.
	Previous *graph.Node
	// Break is where the two part.
	Break Break
	// Lost is the tokens re-sent uncached: the previous request's prompt
	// up to its last message that this call did not share.
	Lost int64
}

// UnkeyedChange is a part the provider leaves out of the compared prefix
// (stack.Unkeyed) that changed against the previous request of the same
// conversation and agent while the rest of the prefix held.
type UnkeyedChange struct {
	// Previous is that request; Part the part, What how it changed
	// (`"…cf6; cc_entrypoint=cli;", was "…780; cc_entrypoint=cli;"`).
	Previous *graph.Node
	Part     *stack.Unkeyed
	What     string
	// Kept is the tokens of the prefix the call shares with Previous
	// without the part: what the provider can reuse. Lost is those after
	// the part: what an endpoint that compares it sends uncached.
	Kept, Lost int64
	// Fresh is set when Previous had finished within the cache lifetime
	// before the call started (so a low reported read is not its age).
	Fresh bool
}

// Totals sum calls.
type Totals struct {
	// Calls counts llm calls; Analyzed those with a prediction.
	Calls, Analyzed int
	// In and Out are the input and output tokens (In counts every input
	// token, cached and cache-written ones included).
	In, Out int64
	// Reads are cache reads: reported where the provider reported them,
	// else predicted; ReadsReported counts the calls that reported.
	Reads         int64
	ReadsReported int
	// Predicted sums the predicted reusable tokens of the analysed calls.
	Predicted int64
	// Writes are the reported cache writes; WritesReported counts the
	// calls that reported them.
	Writes         int64
	WritesReported int
	// Uncached is In minus reads and writes.
	Uncached int64
	// Weighted is uncached input, cache writes and output in full, cache
	// reads at 25%.
	Weighted float64
	// Mismatches counts calls whose report differs from the prediction.
	Mismatches int
	// Money sums the priced calls' Money; nil without a price table.
	Money *Money
}

// Money is model calls priced with a price table (package money).
type Money struct {
	// Spent is what the calls cost, from their reported usage (cache
	// reads and writes at their rates where the source reported them).
	Spent float64
	// Saved is what the cache saved on them, from the reported figures
	// (money.Rates.Saved); negative when writes cost more than reads saved.
	Saved float64
	// Uncached is what their uncached input (Call.Uncached) would have
	// cost less read from the cache: the price of the misses.
	Uncached float64
	// Priced and Unpriced count the calls whose model the table prices
	// and does not.
	Priced, Unpriced int
}

func (m *Money) add(x *Money) {
	if x == nil {
		m.Unpriced++
		return
	}
	m.Priced++
	m.Spent += x.Spent
	m.Saved += x.Saved
	m.Uncached += x.Uncached
}

// price sets c.Money at rates r (nil: the model has no price).
func (c *Call) price(r *money.Rates) {
	if r == nil {
		return
	}
	u := c.Node.LLM.Usage
	c.Money = &Money{Spent: r.Cost(u), Saved: r.Saved(u), Uncached: r.Discount(c.Uncached())}
}

// HitRatio is Reads/In (0 with no input).
func (t Totals) HitRatio() float64 {
	if t.In == 0 {
		return 0
	}
	return float64(t.Reads) / float64(t.In)
}

// Basis says where Reads come from: "reported", "predicted", or
// "reported on N of M calls, predicted for the rest".
func (t Totals) Basis() string {
	switch {
	case t.Calls == 0:
		return "no calls"
	case t.ReadsReported == t.Calls:
		return "reported"
	case t.ReadsReported == 0:
		return "predicted"
	}
	return fmt.Sprintf("reported on %d of %d calls, predicted for the rest", t.ReadsReported, t.Calls)
}

func (t *Totals) add(c *Call) {
	t.Calls++
	r := c.Reported
	t.In += r.In
	t.Out += r.Out
	reads := int64(0)
	switch {
	case r.CachedReported:
		reads = r.Cached
		t.ReadsReported++
	case c.Analyzed:
		reads = min(c.Tokens, r.In)
	}
	if c.Analyzed {
		t.Analyzed++
		t.Predicted += c.Tokens
	}
	writes := int64(0)
	if r.CacheWriteReported {
		writes = r.CacheWrite
		t.WritesReported++
	}
	t.Reads += reads
	t.Writes += writes
	t.Uncached += max(r.In-reads-writes, 0)
	t.Weighted += record.WeightedTokens(r.In, reads, writes, r.Out)
	if c.Mismatch != nil {
		t.Mismatches++
	}
	if t.Money != nil {
		t.Money.add(c.Money)
	}
}

// Group is the totals of one conversation or one agent.
type Group struct {
	// Name is the branch path ("" for the trunk) or the agent.
	Name string
	Totals
}

// Call returns the analysis of llm node seq, or nil.
func (r *Report) Call(seq int64) *Call {
	i := sort.Search(len(r.Calls), func(i int) bool { return r.Calls[i].Node.Seq >= seq })
	if i < len(r.Calls) && r.Calls[i].Node.Seq == seq {
		return r.Calls[i]
	}
	return nil
}

// prompt is one request as read: its prompt in the tree and what the
// break names need.
type prompt struct {
	p     prefix.Prompt
	frame *frame
	// inArray is set when the system prompt is the messages array's first
	// element (Chat Completions), so message k of the prompt is messages[k]
	// of the request, not messages[k-1].
	inArray bool
	// inChain is set when the request was recorded with its system
	// prompt in its chain (an older file): its frame is then not body.
	inChain bool
	// ok is false when the request lacks what the cache compares (lack).
	ok   bool
	lack string
}

// frame is what a distinct head/system/tail triple holds: the tools and
// the system prompt, read through chat once per triple.
type frame struct {
	tools  []byte        // the tools array's JSON, "null" when none
	system []byte        // the system part: the leading system message, or the top-level system/instructions
	req    *chat.Request // the frame read (tools, system text); nil when unreadable
	body   []byte        // head, system and tail joined: the store's RequestFrame
	// left holds, per entry of the stack's Unkeyed, the elements left out of
	// tools and system (their JSON, joined); nil when none was.
	left [][]byte
}

type frameKey struct{ head, system, tail int64 }

// Analyze runs the analysis of run g, reading its stored requests from src.
func Analyze(ctx context.Context, g *graph.Run, src Source, o *Options) (*Report, error) {
	if o.stack() == nil {
		with := Options{}
		if o != nil {
			with = *o
		}
		with.Stack = stack.For(g.Source)
		o = &with
	}
	reqs, err := Read(ctx, src, g.ID, readSet(g, o), o)
	if err != nil {
		return nil, err
	}
	return AnalyzeRequests(ctx, g, reqs, o)
}

// AnalyzeRequests runs the analysis of run g on its requests read by Read;
// a full one (not Options.Brief) reads from Read's Source the bytes of the
// messages its break names quote that Read did not. The same Requests
// serve any number of analyses, brief and full, at once.
func AnalyzeRequests(ctx context.Context, g *graph.Run, reqs *Requests, o *Options) (*Report, error) {
	if reqs.run != g.ID {
		return nil, fmt.Errorf("internal error: the requests of run %s given for run %s", reqs.run, g.ID)
	}
	if p := stack.For(g.Source); !slices.Equal(reqs.stack.Unkeyed(), p.Unkeyed()) {
		return nil, fmt.Errorf("internal error: the requests of run %s were read for another stack than %s", g.ID, p.Name)
	}
	a := &analysis{Requests: reqs, g: g, o: o}
	a.context()
	rep := &Report{Run: g.ID, Lifetime: o.lifetime(), MinPrefix: o.minPrefix(), Simulated: strings.HasPrefix(g.BaseURL, "scripted:")}
	only := map[int64]bool{}
	for _, s := range o.seqsOrNil() {
		only[s] = true
	}
	llm := 0
	for _, n := range g.Nodes {
		if n.Kind == record.KindLLM && n.LLM != nil {
			llm++
		}
	}
	all := make([]Call, 0, llm) // one allocation for every call
	calls := make([]*Call, 0, llm)
	for _, n := range g.Nodes {
		if n.Kind != record.KindLLM || n.LLM == nil {
			continue
		}
		all = append(all, Call{Node: n, Previous: a.prev.get(n.Seq), Break: Break{Message: -1}})
		c := &all[len(all)-1]
		u := n.LLM.Usage
		c.Reported = Reported{In: u.In, Out: u.Out, Cached: u.Cached, CachedReported: u.CachedReported, CacheWrite: u.CacheWrite, CacheWriteReported: u.CacheWriteReported}
		p := a.prompts.get(n.Seq)
		switch {
		case p == nil:
			c.Skipped = "no request was recorded"
		case !p.ok && !n.LLM.Exact():
			c.Fidelity = record.FidelityReconstructed
			c.Skipped = "the reconstructed request lacks " + p.lack
		default:
			c.Fidelity = record.FidelityExact
			if !n.LLM.Exact() {
				c.Fidelity = record.FidelityReconstructed
			}
			c.Analyzed = true
			c.Bytes = a.tree.Len(p.p)
		}
		calls = append(calls, c)
	}
	a.sweep(calls, rep)
	for _, c := range calls {
		if len(only) == 0 || only[c.Node.Seq] {
			rep.Calls = append(rep.Calls, c)
		}
	}
	if o == nil || !o.Brief {
		if err := a.readQuoted(ctx, rep.Calls); err != nil {
			return nil, err
		}
	}
	// Each call's naming reads only the analysis, so the two halves of a
	// long run are named at once.
	name := func(calls []*Call) {
		for _, c := range calls {
			switch {
			case !c.Analyzed:
			case o != nil && o.Brief:
				c.Mismatch = a.mismatch(c, rep)
				a.unstable(c, rep)
			default:
				a.explain(c, rep)
			}
		}
	}
	if half := len(rep.Calls) / 2; half >= 512 && runtime.GOMAXPROCS(0) > 1 {
		var wg sync.WaitGroup
		wg.Go(func() { name(rep.Calls[half:]) })
		name(rep.Calls[:half])
		wg.Wait()
	} else {
		name(rep.Calls)
	}
	if o != nil && o.Prices != nil {
		rep.Currency = o.Prices.CurrencyCode()
		rates := map[string]*money.Rates{} // each model looked up in the table once
		unpriced := map[string]int{}
		var models []string
		for _, c := range rep.Calls {
			model := c.Node.LLM.Model
			r, seen := rates[model]
			if !seen {
				if p, ok := o.Prices.Lookup(model); ok {
					r = &p.Rates
				}
				rates[model] = r
			}
			if c.price(r); c.Money == nil {
				if unpriced[model] == 0 {
					models = append(models, model)
				}
				unpriced[model]++
			}
		}
		sort.Strings(models)
		for _, m := range models {
			rep.Unpriced = append(rep.Unpriced, money.UnpricedModel(m, unpriced[m]))
		}
	}
	rep.group(g, o != nil && o.Prices != nil)
	return rep, nil
}

func (o *Options) seqsOrNil() []int64 {
	if o == nil {
		return nil
	}
	return o.Seqs
}

// Requests are a run's stored requests as the analysis reads them (Read):
// each one's prompt interned in one prefix.Tree. Analyses only read them.
type Requests struct {
	run      string
	src      Source         // what they were read from: a full analysis reads the bytes it quotes there
	stack    *stack.Profile // its parts left out of each request's prompt (Options.Stack)
	tree     *prefix.Tree
	frames   map[frameKey]*frame
	links    layout.Links              // the links read, in id order
	msgs     []prefix.Msg              // links[i]'s tree node
	unread   []int32                   // per tree node: 1 + the link it was made Unread for, 0 when its bytes were read
	rerooted map[prefix.Msg]prefix.Msg // an older file's path -> the same path without its system message
	prompts  seqMap[*prompt]
	// sweptIn and swept are the sweep of the requests as their rows say,
	// with sweptLifetime (see sweepOf).
	sweptIn       []sweepIn
	swept         []sweepOut
	sweptLifetime time.Duration
}

// Read reads the stored requests of run from src (only those of seqs,
// when seqs is not nil) for AnalyzeRequests, brief or full. It needs no
// graph, so a caller may read while it loads the graph; it even finds
// each request's reusable prefix with o's lifetime from what the
// requests' rows say of their nodes, and AnalyzeRequests keeps it when
// the graph agrees.
//
// It reads the bytes of only the messages the comparisons need: a message
// needs none when it is the only one after its path in the run's tree of
// messages (a conversation's own next message), since nothing differs
// from it there — its length places every later byte. The bytes of
// messages that share their path with others are read (to tell them apart
// and order them), and all of them in an older file whose chains may
// begin with the system prompt. A full analysis reads the few more its
// break names quote (the message where a call's reuse stopped).
func Read(ctx context.Context, src Source, run string, seqs []int64, o *Options) (*Requests, error) {
	return read(ctx, src, run, seqs, o, false)
}

// read is Read; every reads the bytes of every message (the tests'
// reference).
func read(ctx context.Context, src Source, run string, seqs []int64, o *Options, every bool) (*Requests, error) {
	r := &Requests{run: run, src: src, frames: map[frameKey]*frame{},
		rerooted: map[prefix.Msg]prefix.Msg{}, stack: o.stack()}
	links, reqs, err := src.RequestParts(ctx, run, seqs, every)
	if err != nil {
		return nil, err
	}
	r.links = links
	inChain := false
	for _, rp := range reqs {
		inChain = inChain || rp.SystemInChain
	}
	read := make([]bool, len(r.links)) // bytes read
	for i := range read {
		read[i] = every
	}
	if inChain {
		if err := r.readMessages(ctx, src, read, nil); err != nil {
			return nil, err
		}
	} else if !every {
		if err := r.readMessages(ctx, src, read, r.crowded()); err != nil {
			return nil, err
		}
	}
	for {
		want := r.messages(read)
		if len(want) == 0 {
			break
		}
		if err := r.readMessages(ctx, src, read, want); err != nil {
			return nil, err
		}
	}
	if len(reqs) > 0 {
		r.prompts.reserve(reqs[0].Seq, reqs[len(reqs)-1].Seq) // in seq order
	}
	for _, rp := range reqs {
		r.prompts.set(rp.Seq, r.prompt(rp))
	}
	r.tree.Order()
	r.sweptLifetime = o.lifetime()
	r.sweptIn = r.rowInputs(reqs)
	r.swept = sweepOf(r.tree, r.sweptIn, r.sweptLifetime)
	return r, nil
}

// crowded lists the links messages will want read: those that follow a
// link (or start a chain) with others, and those whose separator is not
// known without their bytes. (Copies of one message that differ only in
// their separator become one tree node, and their followers are found
// crowded only then: messages wants them.)
func (r *Requests) crowded() []int {
	after := make([]int32, len(r.links)+1) // links after each link (the last: after none)
	prev := make([]int, len(r.links))
	for i, l := range r.links {
		prev[i] = len(r.links)
		if j, ok := r.links.Index(l.Prev); ok && l.Prev != 0 {
			prev[i] = j
		}
		after[prev[i]]++
	}
	var want []int
	for i, l := range r.links {
		if after[prev[i]] > 1 || l.Sep < 0 {
			want = append(want, i)
		}
	}
	return want
}

// messages interns the links in a new tree, in id order (a link's path
// before it). A link whose bytes were not read becomes a prefix.Unread
// message when it is the first after its path; one that has company
// there needs its bytes, and so does the first: want lists them (the
// tree is built again once they are read).
func (r *Requests) messages(read []bool) (want []int) {
	r.tree = prefix.NewTree()
	r.tree.Grow(len(r.links))
	r.msgs = make([]prefix.Msg, len(r.links))
	r.unread = make([]int32, len(r.links)+1)  // a tree has at most a node per link, and Root
	first := make([]int32, 1, len(r.links)+1) // per tree node: 1 + the first link after it, 0 none
	for i, l := range r.links {
		at := prefix.Root
		if l.Prev != 0 {
			if j, ok := r.links.Index(l.Prev); ok {
				at = r.msgs[j]
			}
		}
		f := int(first[at]) - 1
		var m prefix.Msg
		switch {
		case read[i] && (f < 0 || read[f]):
			m = r.tree.Message(at, element(r.links[i].Data))
		case f < 0 && l.Sep >= 0:
			m = r.tree.Unread(at, int(l.Size)-l.Sep)
			r.unread[m] = int32(i + 1)
		default:
			if !read[i] {
				want = append(want, i)
			}
			if f >= 0 && !read[f] {
				want = append(want, f)
			}
			m = r.tree.Unread(at, int(l.Size)) // a stand-in: the tree is built again
		}
		if f < 0 {
			first[at] = int32(i + 1)
		}
		for len(first) <= int(m) {
			first = append(first, 0)
		}
		r.msgs[i] = m
	}
	return want
}

// readMessages reads the bytes of links want (every link not read, when
// want is nil).
func (r *Requests) readMessages(ctx context.Context, src Source, read []bool, want []int) error {
	var ids []int64
	for i := range r.links {
		if want == nil && !read[i] {
			ids = append(ids, r.links[i].ID)
		}
	}
	for _, i := range want {
		if !read[i] {
			read[i] = true // once, however often wanted
			ids = append(ids, r.links[i].ID)
		}
	}
	got := 0
	err := src.ScanMessages(ctx, ids, func(l layout.MessageLink) error {
		i, ok := r.links.Index(l.ID)
		if !ok || l.Size != r.links[i].Size {
			return fmt.Errorf("load the requests of run %s: message %d changed while it was read", r.run, l.ID)
		}
		r.links[i].Data = l.Data
		read[i] = true
		got++
		return nil
	})
	if err == nil && got != len(ids) {
		err = fmt.Errorf("load the requests of run %s: %d of its messages were deleted while it was read", r.run, len(ids)-got)
	}
	return err
}

// analysis is the state of one Analyze.
type analysis struct {
	*Requests
	g       *graph.Run
	o       *Options
	prev    seqMap[*graph.Node]   // llm node -> the llm node before it in its conversation
	handoff seqMap[*graph.Node]   // llm node -> the latest hand-off before it in its conversation
	quoted  map[prefix.Msg][]byte // the bytes of the Unread messages the break names quote (readQuoted)
}

// data is the JSON of the last message of path m: the tree's, or the bytes
// readQuoted read of a message Read did not.
func (a *analysis) data(m prefix.Msg) []byte {
	if b, ok := a.quoted[m]; ok {
		return b
	}
	return a.tree.Data(m)
}

// quotes are the messages the break named for call c against its match
// quotes (describe's messageWhat): the request's message where the two
// part and the match's, where each has one; Root for none.
func (a *analysis) quotes(c *Call) (q, m prefix.Msg) {
	if !c.Analyzed || c.Match == nil {
		return prefix.Root, prefix.Root
	}
	qp, mp := a.prompts.get(c.Node.Seq).p, a.prompts.get(c.Match.Seq).p
	br := a.tree.Break(qp, mp)
	if br.Where != prefix.InMessages {
		return prefix.Root, prefix.Root
	}
	k := br.Index
	q, m = prefix.Root, prefix.Root
	if a.tree.Depth(qp.Last) >= k {
		q = a.tree.Ancestor(qp.Last, k)
	}
	if a.tree.Depth(mp.Last) >= k {
		m = a.tree.Ancestor(mp.Last, k)
	}
	return q, m
}

// unreadLink is the link message m was made Unread for, -1 when its bytes
// were read (m is Root, or it was added after the links, re-rooted).
func (r *Requests) unreadLink(m prefix.Msg) int {
	if int(m) >= len(r.unread) {
		return -1
	}
	return int(r.unread[m]) - 1
}

// readQuoted reads the bytes of the messages the break names of calls
// quote that Read left unread (most: a conversation's next message is the
// only one after its path), so that a full analysis reads a message or two
// per call, not every message of the run. (An unstable prefix's break
// parts between two messages after one path, whose bytes Read read.)
func (a *analysis) readQuoted(ctx context.Context, calls []*Call) error {
	var ids []int64
	at := map[int64]prefix.Msg{}
	for _, c := range calls {
		q, m := a.quotes(c)
		for _, x := range []prefix.Msg{q, m} {
			i := a.unreadLink(x)
			if i < 0 {
				continue
			}
			id := a.links[i].ID
			if _, ok := at[id]; !ok {
				at[id] = x
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	a.quoted = make(map[prefix.Msg][]byte, len(ids))
	err := a.src.ScanMessages(ctx, ids, func(l layout.MessageLink) error {
		x, ok := at[l.ID]
		if !ok || l.Size != a.links[a.unreadLink(x)].Size {
			return fmt.Errorf("load the requests of run %s: message %d changed while it was read", a.run, l.ID)
		}
		a.quoted[x] = element(l.Data)
		return nil
	})
	if err == nil && len(a.quoted) != len(ids) {
		err = fmt.Errorf("load the requests of run %s: %d of its messages were deleted while it was read", a.run, len(ids)-len(a.quoted))
	}
	return err
}

// lastSeq is the seq of g's last node (its nodes are in seq order).
func lastSeq(g *graph.Run) int64 {
	if len(g.Nodes) == 0 {
		return 0
	}
	return g.Nodes[len(g.Nodes)-1].Seq
}

// firstSeq is the seq of g's first node: a run read from a node on (one
// node's window, `inspect show`) starts past 1.
func firstSeq(g *graph.Run) int64 {
	if len(g.Nodes) == 0 {
		return 0
	}
	return g.Nodes[0].Seq
}

// seqMap maps the seqs of a run's nodes (dense, from the first one read)
// to values: a slice from the first seq reserved, with a map for a seq
// far beyond the run's size (a damaged file) or before that first one.
type seqMap[T any] struct {
	base int64 // the seq of s[0]
	s    []T
	far  map[int64]T
}

func (m *seqMap[T]) get(seq int64) T {
	if i := seq - m.base; i >= 0 && i < int64(len(m.s)) {
		return m.s[i]
	}
	return m.far[seq]
}

// reserve makes room for the seqs from first to last (a run's first and
// last nodes, or those of the part of it read): a map that holds nothing
// yet starts at first, so a window late in a long run costs its own size.
func (m *seqMap[T]) reserve(first, last int64) {
	if len(m.s) == 0 && len(m.far) == 0 && first > 0 {
		m.base = first
	}
	n := last - m.base
	if n >= int64(len(m.s)) && n <= 1<<24+4*int64(len(m.s)) {
		m.s = slices.Grow(m.s, int(n)+1-len(m.s))
	}
}

func (m *seqMap[T]) set(seq int64, v T) {
	i := seq - m.base
	if i < 0 || i > 1<<24+4*int64(len(m.s)) {
		if m.far == nil {
			m.far = map[int64]T{}
		}
		m.far[seq] = v
		return
	}
	if i >= int64(len(m.s)) {
		m.s = slices.Grow(m.s, max(int(i)+1-len(m.s), len(m.s)))[:i+1] // doubling
	}
	m.s[i] = v
}

// tokens turns n prompt bytes of call c into tokens: bytes/4 (the scripted
// model's count), or, when a provider reported the call's input, the same
// share of its reported input tokens.
func (a *analysis) tokens(c *Call, n int, rep *Report) int64 {
	if rep.Simulated || c.Reported.In <= 0 || c.Bytes == 0 {
		return prefix.Tokens(n)
	}
	return int64(float64(n)/float64(c.Bytes)*float64(c.Reported.In) + 0.5)
}

// readSet is the requests Options.Seqs needs read: those calls, every
// earlier call that had finished within the lifetime before one of them
// started, and each one's previous call in its conversation; nil (all)
// without Seqs.
func readSet(g *graph.Run, o *Options) []int64 {
	seqs := o.seqsOrNil()
	if seqs == nil {
		return nil
	}
	a := &analysis{g: g, o: o}
	a.context()
	lifetime := o.lifetime()
	want := map[int64]bool{}
	var targets []*graph.Node
	for _, s := range seqs {
		if n := a.g.Node(s); n != nil && n.Kind == record.KindLLM {
			want[s] = true
			targets = append(targets, n)
			if p := a.prev.get(n.Seq); p != nil {
				want[p.Seq] = true
			}
		}
	}
	for _, n := range a.g.Nodes {
		if n.Kind != record.KindLLM || n.Ended.IsZero() {
			continue
		}
		for _, q := range targets {
			if n.Seq < q.Seq && prefix.Reusable(n.Ended, q.Started, lifetime) {
				want[n.Seq] = true
			}
		}
	}
	out := make([]int64, 0, len(want))
	for s := range want {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// element strips a message piece's separator (a comma and spaces).
func element(piece []byte) []byte { return bytes.TrimLeft(piece, " \t\r\n,") }

func isSystemMessage(data []byte) bool {
	if len(data) == 0 || data[0] != '{' || !bytes.Contains(data, []byte(`"system"`)) {
		return false
	}
	var m struct {
		Role string `json:"role"`
	}
	return json.Unmarshal(data, &m) == nil && m.Role == "system"
}

// prompt builds one request's prompt.
func (a *Requests) prompt(rp layout.RequestParts) *prompt {
	k := frameKey{rp.HeadID, rp.SystemID, rp.TailID}
	f := a.frames[k]
	if f == nil {
		f = readFrame(rp, a.stack.Unkeyed())
		a.frames[k] = f
	}
	p := &prompt{frame: f, ok: true, inArray: len(rp.System) > 0, inChain: rp.SystemInChain}
	system, last := f.system, prefix.Root
	if i, ok := a.links.Index(rp.Last); ok && rp.Last != 0 {
		last = a.msgs[i]
	}
	if rp.SystemInChain && rp.Last != 0 {
		// An older file: the system message may be the chain's first link;
		// the path after it, re-rooted (each path once).
		if first := a.tree.Ancestor(last, 1); isSystemMessage(a.tree.Data(first)) {
			system, p.inArray = a.tree.Data(first), true
			last = a.reroot(last, first)
		}
	}
	p.p = prefix.Prompt{Tools: a.tree.Part(f.tools), System: a.tree.Part(system), Last: last}
	var lack []string
	if len(system) == 0 {
		lack = append(lack, "the system prompt")
	}
	if string(f.tools) == "null" {
		lack = append(lack, "the tool definitions")
	}
	if len(lack) > 0 {
		p.ok, p.lack = false, strings.Join(lack, " and ")
	}
	return p
}

// reroot returns path m, which starts with first, without first.
func (a *Requests) reroot(m, first prefix.Msg) prefix.Msg {
	if m == first {
		return prefix.Root
	}
	if r, ok := a.rerooted[m]; ok {
		return r
	}
	r := a.tree.Message(a.reroot(a.tree.Parent(m), first), a.tree.Data(m))
	a.rerooted[m] = r
	return r
}

// readFrame reads the tools and system prompt of a request from its head,
// system message and tail, which join into a JSON body whose messages
// array holds only the system message. The parts unkeyed names are left
// out of the top-level tools and system (and kept in frame.left).
func readFrame(rp layout.RequestParts, unkeyed []stack.Unkeyed) *frame {
	body := make([]byte, 0, len(rp.Head)+len(rp.System)+len(rp.Tail))
	body = append(append(append(body, rp.Head...), rp.System...), rp.Tail...)
	f := &frame{tools: []byte("null"), system: rp.System, body: body}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) == nil {
		t := top["tools"]
		has := len(t) > 0 && string(t) != "null" && string(t) != "[]"
		if len(unkeyed) > 0 && leaveOut(top, unkeyed, f) {
			if b, err := json.Marshal(top); err == nil {
				body = b
			}
		}
		if has {
			f.tools = top["tools"] // "[]" when every tool was left out
		}
		if len(f.system) == 0 { // Anthropic's system, Responses' instructions
			for _, key := range []string{"system", "instructions"} {
				if s := top[key]; len(s) > 0 && string(s) != "null" {
					f.system = s
					break
				}
			}
		}
	}
	if req, err := chat.ReadRequest(body, ""); err == nil {
		f.req = req
	}
	return f
}

// leaveOut takes the parts unkeyed names out of top's tools and system
// arrays into f.left, reporting whether it took any.
func leaveOut(top map[string]json.RawMessage, unkeyed []stack.Unkeyed, f *frame) bool {
	took := false
	for _, key := range []string{"system", "tools"} {
		var elems []json.RawMessage
		if v := top[key]; len(v) == 0 || v[0] != '[' || json.Unmarshal(v, &elems) != nil {
			continue
		}
		keep := elems[:0:0]
		for _, e := range elems {
			i := slices.IndexFunc(unkeyed, func(u stack.Unkeyed) bool { return marks(u, key, e) })
			if i < 0 {
				keep = append(keep, e)
				continue
			}
			if f.left == nil {
				f.left = make([][]byte, len(unkeyed))
			}
			if len(f.left[i]) > 0 {
				f.left[i] = append(f.left[i], ',')
			}
			f.left[i] = append(f.left[i], e...)
			took = true
		}
		if len(keep) < len(elems) {
			b := []byte{'['}
			for j, e := range keep {
				if j > 0 {
					b = append(b, ',')
				}
				b = append(b, e...)
			}
			top[key] = append(b, ']')
		}
	}
	return took
}

// marks reports whether element e of the request's key array ("system",
// "tools") is the part u names.
func marks(u stack.Unkeyed, key string, e json.RawMessage) bool {
	switch {
	case key == "system" && u.SystemText != "":
		var b struct{ Type, Text string }
		return json.Unmarshal(e, &b) == nil && b.Type == "text" && strings.HasPrefix(b.Text, u.SystemText)
	case key == "tools" && u.ToolFlag != "":
		var t map[string]json.RawMessage
		return json.Unmarshal(e, &t) == nil && string(t[u.ToolFlag]) == "true"
	}
	return false
}
