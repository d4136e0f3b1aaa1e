// Package findings is the rules engine of `inspect audit` (DESIGN §8): each
// Rule reads a recorded run graph and reports the topology mistakes it
// finds — a missed fan-out, a forked sequence, a hand-off loop… — as
// Findings that say what went wrong, what it cost (a Price computed from the
// recording), where the fix goes (a line of agents.yaml or of a prompt file,
// read from the run's stored project snapshot), what the next run should
// show, and, for some rules, which cheap causes were checked in the recorded
// request.
//
// This package is the engine: the vocabulary (Rule, Finding, Price, Fix…),
// Config.Audit, the thresholds (Options), the team's policy (ignore
// entries, a baseline), the grades and the expectation checks. The rules
// themselves are values in package findings/rules, in the style of
// go/analysis, and are passed to the engine (Config.Rules, NewOptions): a
// rule sees only a *Pass (the graph, the options, the parsed project
// snapshot and Report) and never prints or opens the store. Every rule
// leaves a Check, so a clean audit still says what it looked at. A rule
// declares its thresholds (Rule.Options) and carries the check of what its
// findings promise (Rule.Expect, run on a later run by Expect). Grades turn
// findings into one letter per Area; package findings/report writes a
// Report as text, Markdown, JSON, SARIF or JUnit.
//
// The package knows nothing of SQL or terminals: recorded request bodies come
// through the injected Config.Requests function.
package findings

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/money"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/stack"
)

// Area groups rules for grading.
type Area string

// The graded areas, in report order. Tools is what the calls themselves
// did (a failing call repeated, a conversation run out of steps on
// failures): no topology of forks, delegation, hand-offs or caching.
const (
	Forking    Area = "Forking"
	Delegation Area = "Delegation"
	Handoffs   Area = "Hand-offs"
	Caching    Area = "Caching"
	Tools      Area = "Tools"
)

// Areas lists the graded areas in report order.
func Areas() []Area { return []Area{Forking, Delegation, Handoffs, Caching, Tools} }

// Severity is how bad a finding is. It orders: Warning < Error.
type Severity int

// Severities.
const (
	// Warning is a mistake that costs time or tokens but leaves the answer right.
	Warning Severity = iota + 1
	// Error is a mistake that may make the answer wrong or incomplete
	// (a failed branch, a forked sequence, a hand-off loop).
	Error
)

// String is "warning" or "error".
func (s Severity) String() string {
	switch s {
	case Warning:
		return "warning"
	case Error:
		return "error"
	}
	return fmt.Sprintf("severity(%d)", int(s))
}

// MarshalText writes the severity as its name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads "warning" or "error".
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseSeverity reads "warning" or "error".
func ParseSeverity(s string) (Severity, error) {
	switch s {
	case "warning":
		return Warning, nil
	case "error":
		return Error, nil
	}
	return 0, fmt.Errorf("unknown severity %q (want warning or error)", s)
}

// Doc is a rule's documentation; --explain, --help, the README table and
// the SARIF rule descriptors all come from it.
type Doc struct {
	// Title is the finding's name, a short noun phrase ("missed fan-out").
	Title string
	// Detect says what the rule looks for in the recording. Each
	// threshold appears as {name}, a placeholder for the value in force:
	// read it through Rule.Detect, never directly.
	Detect string
	// Price says how the finding's price is computed.
	Price string
	// Fix says where the fix goes and what it is.
	Fix string
	// Next says what the next run should show once the fix is in.
	Next string
}

// Rule is one audit rule.
type Rule struct {
	// ID is stable and never reused ("fanout.missed").
	ID string
	// Area is the graded area the rule belongs to.
	Area Area
	// Severity is the severity of every finding the rule reports.
	Severity Severity
	// Doc documents the rule.
	Doc Doc
	// Options are the thresholds the rule reads (shared ones are the same
	// value in each rule that reads them); --set, --help and --explain
	// list them, and Doc.Detect names each as {name}.
	Options []Option
	// Run inspects pass.Graph, calls pass.Report for each finding, and
	// calls pass.Clear or pass.NotApplicable when it reports none. Each
	// finding's Promise holds the facts Expect reads.
	Run func(pass *Pass)
	// Expect checks, in a later run, what finding f of this rule said the
	// next run should show (f.Next), from the facts in f.Promise, with
	// this package's own definitions (what a call is, a join's window…).
	// `inspect diff` calls it for each fixed finding.
	Expect func(f Finding, next *graph.Run) Verdict
	// NoExpect says why the rule has no Expect; Validate refuses a rule
	// with neither.
	NoExpect string
	// Lane names the lane of the audit the rule runs in. The rules of a
	// lane run one after another, in rule order, and share what they
	// compute once per audit (Pass.Memo, the requests read); lanes run at
	// once, each with its own, when the process has more than one CPU.
	// Rules that share costly facts share a lane; "" is the lane of the
	// rest. The report is the same whatever ran at once.
	Lane string
}

// Explain renders the rule's documentation as plain text paragraphs, with
// the thresholds in force in o (nil: the defaults).
func (r *Rule) Explain(o *Options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s (%s, %s)\n\n", r.ID, r.Doc.Title, r.Area, r.Severity)
	fmt.Fprintf(&b, "Detects: %s\n\nPrice: %s\n\nFix: %s\n\nNext run should show: %s\n", r.Detect(o), r.Doc.Price, r.Doc.Fix, r.Doc.Next)
	return b.String()
}

// Validate checks a rule list: unique non-empty ids, a known area and
// severity, a title and the other doc fields, a non-nil Run, an Expect or
// the reason it has none, and thresholds that are declared once, work at
// their defaults and appear in a Detect text (see validateOptions).
func Validate(rules []*Rule) error {
	seen := map[string]bool{}
	for i, r := range rules {
		switch {
		case r == nil:
			return fmt.Errorf("rule %d is nil", i)
		case r.ID == "":
			return fmt.Errorf("rule %d has no id", i)
		case seen[r.ID]:
			return fmt.Errorf("rule %s is listed twice", r.ID)
		case r.Run == nil:
			return fmt.Errorf("rule %s has no Run", r.ID)
		case r.Doc.Title == "" || r.Doc.Detect == "" || r.Doc.Price == "" || r.Doc.Fix == "" || r.Doc.Next == "":
			return fmt.Errorf("rule %s has an incomplete Doc", r.ID)
		case r.Area != Forking && r.Area != Delegation && r.Area != Handoffs && r.Area != Caching && r.Area != Tools:
			return fmt.Errorf("rule %s has unknown area %q", r.ID, r.Area)
		case r.Severity != Warning && r.Severity != Error:
			return fmt.Errorf("rule %s has no severity", r.ID)
		case r.Expect == nil && strings.TrimSpace(r.NoExpect) == "":
			return fmt.Errorf("rule %s has no Expect: check what its findings say the next run should show, or say in NoExpect why it cannot", r.ID)
		case r.Expect != nil && r.NoExpect != "":
			return fmt.Errorf("rule %s has both an Expect and a NoExpect reason", r.ID)
		}
		seen[r.ID] = true
	}
	return validateOptions(rules)
}

// Lookup returns the rule with id among rules, or nil.
func Lookup(rules []*Rule, id string) *Rule {
	for _, r := range rules {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// Location is where a fix goes: a file of the project snapshot and a line.
type Location struct {
	// Path is slash-separated and relative to the project folder
	// ("agents.yaml", "agents/analyst.md"); "" when the fix goes to
	// instructions no file of the snapshot holds (Label says which).
	Path string `json:"path"`
	// Line is 1-based; 0 when the file as a whole is meant.
	Line int `json:"line"`
	// Label names the place when Path is empty: "the instructions of agent
	// X" of an imported run whose source has no file for them.
	Label string `json:"label,omitempty"`
	// Source is, with Label, the file the run was imported from: SARIF's
	// location for the finding.
	Source string `json:"source,omitempty"`
}

// String is path:line, or the label.
func (l Location) String() string {
	if l.Path == "" && l.Label != "" {
		return l.Label
	}
	if l.Line > 0 {
		return fmt.Sprintf("%s:%d", l.Path, l.Line)
	}
	return l.Path
}

// Fix is where a finding's fix goes and what it is.
type Fix struct {
	// Location is the file and line to change.
	Location Location `json:"location"`
	// Also lists other places the same fix touches (both prompts of a loop).
	Also []Location `json:"also,omitempty"`
	// Text is a verb phrase: what to change.
	Text string `json:"text"`
}

// Said is the fix's text for a line that names its location first: a
// text that opens by naming it again ("In CLAUDE.md, tell …" at
// CLAUDE.md) starts after that ("Tell …"), so "CLAUDE.md: Tell …" does
// not say the file twice. JSON and SARIF keep Text whole.
func (x Fix) Said() string {
	for _, w := range []string{x.Location.String(), x.Location.Path, x.Location.Label} {
		if w == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(x.Text, "In "+w+", "); ok && rest != "" {
			r, size := utf8.DecodeRuneInString(rest)
			return string(unicode.ToUpper(r)) + rest[size:]
		}
	}
	return x.Text
}

// Line is the fix as one line: its location, then what to change there.
func (x Fix) Line() string { return x.Location.String() + ": " + x.Said() }

// Price is what a finding cost, computed from the recording. Zero fields did
// not apply. A missed fan-out costs time, not tokens; tokens are only counted
// when the recording shows them spent.
type Price struct {
	// ElapsedMS is wall time lost, in milliseconds.
	ElapsedMS int64 `json:"elapsed_ms"`
	// TokensIn and TokensOut are tokens spent on the mistake.
	TokensIn  int64 `json:"tokens_in"`
	TokensOut int64 `json:"tokens_out"`
	// ConversationStarts counts conversation starts (a new system prompt
	// and tool array the provider had not seen: expected cache misses).
	ConversationStarts int `json:"conversation_starts"`
	// Calls counts tool calls spent on the mistake; LLMCalls model calls.
	Calls    int `json:"calls"`
	LLMCalls int `json:"llm_calls"`
	// CachedTokens is the cached input the provider reported on the priced
	// calls; meaningful only when CachedReported. Without it, cache effects
	// are expectations from the request's structure, never measurements.
	CachedTokens   int64 `json:"cached_tokens"`
	CachedReported bool  `json:"cached_reported"`
	// Basis says how the price was computed, with the numbers.
	Basis string `json:"basis"`
}

// Elapsed is ElapsedMS as a duration.
func (p Price) Elapsed() time.Duration { return time.Duration(p.ElapsedMS) * time.Millisecond }

// Summary is a one-line human form: "9.0s · 1,402 tokens in · 1 conversation start".
func (p Price) Summary() string {
	var parts []string
	if p.ElapsedMS > 0 {
		parts = append(parts, graph.FormatDuration(p.Elapsed()))
	}
	if p.TokensIn > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens in", p.TokensIn))
	}
	if p.TokensOut > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens out", p.TokensOut))
	}
	if p.ConversationStarts > 0 {
		parts = append(parts, plural(p.ConversationStarts, "conversation start", "conversation starts"))
	}
	if p.Calls > 0 {
		parts = append(parts, plural(p.Calls, "tool call", "tool calls"))
	}
	if p.CachedReported {
		parts = append(parts, fmt.Sprintf("%d cached (reported)", p.CachedTokens))
	}
	if len(parts) == 0 {
		return "nothing measurable"
	}
	return strings.Join(parts, " · ")
}

// Cause is one cheap cause a rule checked in the recorded request.
type Cause struct {
	// Check names what was checked ("fork in tools").
	Check string `json:"check"`
	// Result is "yes", "no" or "unknown" (the request could not be read).
	Result string `json:"result"`
	// Detail says what was seen and, when it is the cause, what it means.
	Detail string `json:"detail"`
}

// The causes of a failure (Finding.Cause, DESIGN §18).
const (
	// CausePrompt: the agent was not told what it needed; the only cause
	// a prompt fixes.
	CausePrompt = "prompt"
	// CauseTool: a tool call failed and the conversation ended on it.
	CauseTool = "tool"
	// CauseProvider: the model provider failed (an HTTP error such as
	// 500, 529 or 429, overloaded, a timeout): retry or fall back.
	CauseProvider = "provider"
	// CauseRejected: the call was refused before any work (an unknown or
	// disallowed sub-agent type, a denied permission).
	CauseRejected = "rejected"
	// CauseLimit: a step, turn or token limit ended it.
	CauseLimit = "limit"
)

// Finding is one mistake a rule found in a run.
type Finding struct {
	// Rule is the rule id; Name the rule's title; Area and Severity the rule's.
	Rule     string   `json:"rule"`
	Name     string   `json:"name"`
	Area     Area     `json:"area"`
	Severity Severity `json:"severity"`
	// Agent is the agent whose configuration or prompt the fix changes.
	Agent string `json:"agent"`
	// Message states the facts with their evidence, lower-case.
	Message string `json:"message"`
	// Nodes are the evidence nodes, "n4", in sequence order.
	Nodes []string `json:"nodes"`
	// Fix is where the fix goes and what it is.
	Fix Fix `json:"fix"`
	// Next is what the next run should show.
	Next string `json:"next"`
	// Price is what the mistake cost.
	Price Price `json:"price"`
	// Causes are the cheap causes checked, when the rule checks them.
	Causes []Cause `json:"causes,omitempty"`
	// Cause is what made a failure fail, for the rules that tell it
	// (branch.failed, tool.failure-loop): one of the Cause* values. Only
	// a prompt cause gets prompt advice. "" for the other rules.
	Cause string `json:"cause,omitempty"`
	// Shape describes the evidence without node numbers or times; with Rule
	// and Agent it makes the Fingerprint.
	Shape string `json:"shape"`
	// Fingerprint is stable across runs of the same mistake: SARIF
	// partialFingerprints and `inspect diff` match findings by it.
	Fingerprint string `json:"fingerprint"`
	// Money is Price in money at the rates of the model that spent it,
	// when the audit had a price table and the price counts tokens; nil
	// otherwise (time alone is not money, and nothing is guessed).
	Money *money.Spend `json:"money,omitempty"`
	// Suppressed says why the finding does not count for --fail-on (an
	// ignore entry accepted it, or the baseline had it); nil when it
	// counts.
	Suppressed *Suppression `json:"suppressed,omitempty"`
	// Promise holds the facts the rule's Expect reads to check Next in a
	// later run (the items' tools, the branch, the two agents…), of a type
	// the rule defines. It is not written to JSON: a finding read back
	// from a file is NotChecked.
	Promise any `json:"-"`
}

// FingerprintKey is the partialFingerprints key inspect writes in SARIF
// (and ReadBaseline reads).
const FingerprintKey = "inspectFinding/v1"

// Fingerprint hashes rule, agent and evidence shape into a stable id.
func Fingerprint(rule, agent, shape string) string {
	h := sha256.Sum256([]byte(rule + "\x00" + agent + "\x00" + shape))
	return hex.EncodeToString(h[:8])
}

// CheckStatus is the outcome of one rule on one run.
type CheckStatus string

// Check statuses.
const (
	StatusFound         CheckStatus = "found"
	StatusClear         CheckStatus = "clear"
	StatusNotApplicable CheckStatus = "not applicable"
	// StatusOff is a rule the team's policy turned off: it did not run.
	StatusOff CheckStatus = "off"
)

// Check is what one rule did on the run, reported even when it found nothing.
type Check struct {
	Rule     string      `json:"rule"`
	Status   CheckStatus `json:"status"`
	Detail   string      `json:"detail"`
	Findings int         `json:"findings"`
	// Examined says whether the rule looked at anything of what it
	// judges (a finding, or a clear check the rule did not mark
	// Pass.Unexamined): an area none of whose checks examined anything
	// is graded n/a (Grade).
	Examined bool `json:"-"`
}

// String is "fanout.missed: clear (2 serial runs examined, longest 2 calls)".
func (c Check) String() string {
	if c.Detail == "" {
		return fmt.Sprintf("%s: %s", c.Rule, c.Status)
	}
	return fmt.Sprintf("%s: %s (%s)", c.Rule, c.Status, c.Detail)
}

// Report is the audit of one run.
type Report struct {
	// Run is the run id; Project the project's name; Status the run's status.
	Run     string `json:"run"`
	Project string `json:"project"`
	Status  string `json:"status"`
	// Notice is said before everything else when the run did not finish
	// (cancelled, interrupted or still running): what was cut off is not a
	// prompt mistake, and its open forks were not audited. "" otherwise.
	Notice string `json:"notice,omitempty"`
	// ElapsedMS, TokensIn, TokensOut and LLMCalls are the run's totals,
	// the scale the grades weigh prices against.
	ElapsedMS int64 `json:"elapsed_ms"`
	TokensIn  int64 `json:"tokens_in"`
	TokensOut int64 `json:"tokens_out"`
	LLMCalls  int   `json:"llm_calls"`
	// Grades has one letter per area.
	Grades map[Area]string `json:"grades"`
	// Scores are the points behind each grade (100 = nothing found).
	Scores map[Area]int `json:"scores"`
	// Findings are ordered by area, then rule order, then first evidence node.
	Findings []Finding `json:"findings"`
	// Checks has one entry per rule, in rule order (a rule turned off
	// reads StatusOff).
	Checks []Check `json:"checks"`
	// Money is what the run's model calls cost, overall, per agent and per
	// model, when the audit had a price table; nil without one.
	Money *money.RunCost `json:"money,omitempty"`
	// Warnings are problems of the audit policy the team should act on:
	// an ignore entry that expired.
	Warnings []string `json:"warnings,omitempty"`
	// Policy is the policy file the audit applied (.inspect.yaml as found,
	// or --config FILE), as messages name it; "" for none.
	Policy string `json:"policy,omitempty"`
	// Baseline is the --baseline file findings were compared with; "" for
	// none.
	Baseline string `json:"baseline,omitempty"`
	// Options are the thresholds the audit ran with (SARIF's rule
	// descriptors show them); not in JSON.
	Options *Options `json:"-"`
	// Rules are the rules the audit ran, in order (SARIF's rule
	// descriptors, and Expect on the findings in a later run); not in JSON.
	Rules []*Rule `json:"-"`
}

// Worst returns the highest severity among the findings, or 0.
func (r *Report) Worst() Severity {
	var w Severity
	for _, f := range r.Findings {
		if f.Severity > w {
			w = f.Severity
		}
	}
	return w
}

// Count returns how many findings that count (not suppressed) have at
// least severity s: what --fail-on compares.
func (r *Report) Count(s Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity >= s && f.Suppressed == nil {
			n++
		}
	}
	return n
}

// CostLine is the run's cost with each agent's when there are several:
// "$0.0292 · analyst $0.0010 · researcher $0.0282"; "" without a price
// table. The text formats and the web pages show it.
func (r *Report) CostLine() string {
	if r.Money == nil {
		return ""
	}
	parts := []string{r.Money.Summary()}
	if len(r.Money.Agents) > 1 {
		for _, a := range r.Money.Agents {
			parts = append(parts, fmt.Sprintf("%s %s", orDash(a.Agent), r.Money.Format(a.Amount.Amount)))
		}
	}
	return strings.Join(parts, " · ")
}

// CostSummary is a finding's price with its money: "1.2s · 1402 tokens
// in · $0.0007 at gpt-4.1-mini's rates".
func (f *Finding) CostSummary() string {
	s := f.Price.Summary()
	if f.Money != nil {
		s += fmt.Sprintf(" · %s at %s's rates", f.Money.Format(), f.Money.Model)
	}
	return s
}

// Config is how an audit runs: the rules, their thresholds, and what the
// audit may read besides the graph. Without Requests and Frames the cause
// checks read "unknown".
type Config struct {
	// Rules to run (rules.All for inspect audit's); nil means the rules
	// Options was made for (NewOptions). An audit without rules is an error.
	Rules []*Rule
	// Options are the thresholds and the rules turned off; nil means every
	// default of Rules.
	Options *Options
	// Requests returns the exact recorded request body of llm node seq
	// (store.DB.Request bound to the run). Nil: causes read "unknown".
	Requests func(seq int64) ([]byte, error)
	// Frames, if set, returns the request of llm node seq without its
	// conversation: model, tools, options and system prompt
	// (store.DB.RequestFrame bound to the run), all the cause checks read;
	// it costs what a call offered, not the conversation. Nil: Requests.
	Frames func(seq int64) ([]byte, error)
	// Cache, if set, returns the run's prompt-cache analysis (cache.Analyze
	// over the run's stored requests), which cache.unstable-prefix reads;
	// called at most once per audit. Nil: that rule is not applicable.
	Cache func() (*cache.Report, error)
	// Prices, when set, puts the run's cost and each finding's price in
	// money (Report.Money, Finding.Money); nil: no money anywhere.
	Prices *money.Table
	// Ignore are the config's ignore entries: the findings they cover are
	// listed as accepted and do not count.
	Ignore []Ignore
	// Baseline, when set, marks the findings an earlier audit had.
	Baseline *Baseline
	// Policy names the policy file Options, Prices and Ignore came from
	// (Report.Policy); "" when none applied.
	Policy string
	// Now is the time ignore entries expire against; nil: time.Now.
	Now func() time.Time
	// Profile is the terms of the stack the run came from (package
	// stack: how it fans out, delegates and hands off, where its
	// instructions live), which rules and fix texts consult through
	// Pass.Profile; nil means the profile of the run's source
	// (stack.For: our runtime's, stack.Inspect, for a run of ours).
	Profile *stack.Profile
}

// Audit runs the configured rules over run and grades the result.
func (c *Config) Audit(run *graph.Run) (*Report, error) {
	rules := c.Rules
	if rules == nil {
		rules = c.Options.Rules()
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("findings: the audit has no rules (set Config.Rules, e.g. to rules.All)")
	}
	if err := Validate(rules); err != nil {
		return nil, err
	}
	opts := c.Options
	if opts == nil {
		opts = NewOptions(rules)
	}
	if err := opts.validate(rules); err != nil {
		return nil, err
	}
	proj := ParseProject(run.Project)
	proj.imported(run.Run)
	if rt := run.Options.Runtime; rt != nil {
		proj.MaxForkDepth = rt.MaxForkDepth // the depth that applied to this run
	}
	profile := c.Profile
	if profile == nil {
		profile = stack.For(run.Source)
	}
	tok := run.Tokens()
	rep := &Report{
		Run: run.ID, Project: run.Project.Name, Status: string(run.Status),
		ElapsedMS: run.Elapsed().Milliseconds(), TokensIn: tok.In, TokensOut: tok.Out, LLMCalls: tok.Calls,
		Findings: []Finding{}, Checks: []Check{}, Options: opts, Rules: rules, Policy: c.Policy,
	}
	rep.Notice = notice(run)
	ran := make([]ruleResult, len(rules))
	all := &whole{}
	pass := func(r *Rule, shared *audit) *Pass {
		return &Pass{Rule: r, Graph: run, Options: opts, Project: proj, Profile: profile, requests: c.Requests, frames: c.Frames, shared: shared, whole: all, cache: c.Cache}
	}
	var lanes sync.WaitGroup
	for _, lane := range ruleLanes(rules) {
		work := func() {
			shared := &audit{}
			for _, i := range lane {
				ran[i] = runRule(pass(rules[i], shared), opts, run)
			}
		}
		if runtime.GOMAXPROCS(0) == 1 {
			work()
			continue
		}
		lanes.Go(work)
	}
	lanes.Wait()
	found := 0
	for _, rr := range ran {
		found += len(rr.found)
	}
	rep.Findings = make([]Finding, 0, found)
	for _, rr := range ran {
		rep.Checks = append(rep.Checks, rr.check)
		rep.Findings = append(rep.Findings, rr.found...)
	}
	order := map[string]int{}
	for i, r := range rules {
		order[r.ID] = i
	}
	areaOrder := map[Area]int{Forking: 0, Delegation: 1, Handoffs: 2, Caching: 3, Tools: 4}
	sort.SliceStable(rep.Findings, func(i, j int) bool {
		a, b := rep.Findings[i], rep.Findings[j]
		if areaOrder[a.Area] != areaOrder[b.Area] {
			return areaOrder[a.Area] < areaOrder[b.Area]
		}
		return order[a.Rule] < order[b.Rule]
	})
	uniqueIDs(rep.Findings)
	rep.Grades, rep.Scores = Grade(rep)
	if c.Prices != nil {
		rep.Money = money.Run(c.Prices, run)
		for i := range rep.Findings {
			rep.Findings[i].Money = priceFinding(&rep.Findings[i], run, c.Prices)
		}
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	suppress(rep, c.Ignore, c.Baseline, now())
	return rep, nil
}

// uniqueIDs makes the fingerprints of one report's findings unique: two
// findings of one rule, agent and shape (two serial runs of reads by the
// same agent) are two mistakes, so the second is id#2, the third id#3, in
// report order. The first keeps the bare fingerprint a later run of the
// same mistake has.
func uniqueIDs(fs []Finding) {
	seen := map[string]int{}
	for i := range fs {
		id := fs[i].Fingerprint
		seen[id]++
		if n := seen[id]; n > 1 {
			fs[i].Fingerprint = fmt.Sprintf("%s#%d", id, n)
		}
	}
}

// Pass is what a rule sees while it runs on one run.
type Pass struct {
	// Rule is the rule being run.
	Rule *Rule
	// Graph is the run.
	Graph *graph.Run
	// Options are the thresholds.
	Options *Options
	// Project is the run's project snapshot, parsed.
	Project *Project
	// Profile is the terms of the stack the run came from; never nil
	// (Config.Profile, else stack.For of the run's source).
	Profile *stack.Profile

	requests      func(seq int64) ([]byte, error)
	cache         func() (*cache.Report, error)
	frames        func(seq int64) ([]byte, error)
	shared        *audit
	whole         *whole
	open          int // open forks the rule left out (Pass.forks)
	found         []Finding
	detail        string
	notApplicable bool
	unexamined    bool
}

// Report records a finding. Rule, Name, Area, Severity and Fingerprint are
// filled from the rule; nodes are sorted.
func (p *Pass) Report(f Finding) {
	f.Rule, f.Name, f.Area, f.Severity = p.Rule.ID, p.Rule.Doc.Title, p.Rule.Area, p.Rule.Severity
	sortNodeIDs(f.Nodes)
	if f.Nodes == nil {
		f.Nodes = []string{}
	}
	if f.Fix.Location.Path == "" && f.Fix.Location.Label == "" {
		f.Fix.Location = p.Owner(f.Agent).Entry()
		if !p.Project.Imported {
			f.Fix.Location = Location{Path: AgentsFile, Line: p.Project.AgentLine(f.Agent)}
		}
	}
	f.Fingerprint = Fingerprint(f.Rule, f.Agent, f.Shape)
	p.found = append(p.found, f)
}

// Clear records what the rule examined when it found nothing (or the
// context of what it found): "2 serial runs examined, longest 2 calls".
func (p *Pass) Clear(format string, args ...any) {
	p.detail = fmt.Sprintf(format, args...)
}

// NotApplicable records that the run has nothing the rule looks at:
// "no fork in this run".
func (p *Pass) NotApplicable(format string, args ...any) {
	p.detail = fmt.Sprintf(format, args...)
	p.notApplicable = true
}

// Unexamined records that the rule, though something of the run was
// there for it to read, judged nothing (research calls, but none in a
// series a fan-out would replace): its check stays clear, and counts
// for its area's grade as examining nothing (Grade).
func (p *Pass) Unexamined() { p.unexamined = true }

// audit holds what the passes of one audit share: what the engine reads
// once per audit, and the rules' own facts (Pass.Memo).
type audit struct {
	closed   []*graph.Fork         // the forks that closed (Pass.Forks)
	requests map[int64]readRequest // by llm node seq
	frames   map[string]readRequest

	cache     *cache.Report // the prompt-cache analysis (Pass.Cache)
	cacheErr  error
	cacheDone bool

	memo map[any]any // Pass.Memo
}

// whole holds what every lane of an audit shares (Pass.Shared).
type whole struct {
	mu   sync.Mutex
	memo map[any]any
}

// Shared is Memo for facts every lane of the audit reads, made once per
// audit whatever the lanes, by the first rule that asks, while the others
// wait (make runs under a lock, so it must not call Shared): the value
// must be safe for concurrent use (a table of parsed calls, each made
// once). Outside an audit each Pass has its own.
func (p *Pass) Shared(key any, make func() any) any {
	if p.whole == nil {
		p.whole = &whole{}
	}
	w := p.whole
	w.mu.Lock()
	defer w.mu.Unlock()
	if v, ok := w.memo[key]; ok {
		return v
	}
	if w.memo == nil {
		w.memo = map[any]any{}
	}
	v := make()
	w.memo[key] = v
	return v
}

// Memo returns the value held under key in this audit, made by make on
// the first call: facts several rules compute once per audit (the calls'
// parsed arguments, the serial runs…). A rule package keys its facts with
// a value of an unexported type, so no two packages share a key. Outside
// an audit (a Pass made by hand for an expectation check) each Pass has
// its own.
func (p *Pass) Memo(key any, make func() any) any {
	if p.shared == nil {
		p.shared = &audit{}
	}
	if v, ok := p.shared.memo[key]; ok {
		return v
	}
	if p.shared.memo == nil {
		p.shared.memo = map[any]any{}
	}
	v := make()
	p.shared.memo[key] = v
	return v
}

// Cache is the run's prompt-cache analysis (nil when the audit was
// given none), computed once per audit.
func (p *Pass) Cache() (*cache.Report, error) {
	if p.cache == nil {
		return nil, nil
	}
	if p.shared == nil {
		p.shared = &audit{}
	}
	if !p.shared.cacheDone {
		p.shared.cacheDone = true
		p.shared.cache, p.shared.cacheErr = p.cache()
	}
	return p.shared.cache, p.shared.cacheErr
}

// Request returns the recorded request body of llm node seq, or an error
// when none is available.
func (p *Pass) Request(seq int64) ([]byte, error) {
	if p.requests == nil {
		return nil, fmt.Errorf("recorded requests are not available to this audit")
	}
	return p.requests(seq)
}

// Forks returns the forks a fork rule audits: every fork of the run but the
// open ones (graph.Fork.Open: never joined, or a branch was cancelled or
// interrupted). A branch cut off (cancelled, or its run interrupted) says
// nothing about the prompts, so its fork is "not applicable (run
// interrupted)"; the rule's check counts what was left out.
func (p *Pass) Forks() []*graph.Fork {
	if p.shared == nil {
		p.shared = &audit{}
	}
	if p.shared.closed == nil {
		p.shared.closed = make([]*graph.Fork, 0, len(p.Graph.Forks))
		for _, f := range p.Graph.Forks {
			if !f.Open() {
				p.shared.closed = append(p.shared.closed, f)
			}
		}
	}
	p.open = len(p.Graph.Forks) - len(p.shared.closed)
	return p.shared.closed
}

// OpenReason says why a run's forks are open: "run interrupted", "run
// cancelled", "run still running", or, in a run that finished, "a branch
// stopped" (an imported run whose sub-agent was cancelled).
func OpenReason(g *graph.Run) string {
	switch g.Status {
	case record.StatusInterrupted:
		return "run interrupted"
	case record.StatusCancelled:
		return "run cancelled"
	case record.StatusRunning:
		return "run still running"
	}
	return "a branch stopped"
}

// notice is Report.Notice for run g.
func notice(g *graph.Run) string {
	var why string
	switch g.Status {
	case record.StatusInterrupted, record.StatusCancelled:
		// in the source's words: an imported session never lost a process
		why = "this run was " + stack.Stopped(g.Source, g.Status)
	case record.StatusRunning:
		why = "this run is still running; the audit covers what it has recorded so far"
	default:
		return ""
	}
	open := 0
	for _, f := range g.Forks {
		if f.Open() {
			open++
		}
	}
	s := why + ". What was cut off is not a prompt mistake: a branch it stopped is not a failed branch and is never the slowest"
	if open > 0 {
		s += fmt.Sprintf(", and its %s not audited", plural(open, "open fork is", "open forks are"))
	}
	return s + "."
}

func sortNodeIDs(ids []string) {
	if len(ids) < 2 {
		return
	}
	type keyed struct {
		seq int64
		id  string
	}
	ks := make([]keyed, len(ids))
	for i, id := range ids {
		ks[i] = keyed{nodeSeq(id), id}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return cmp.Compare(a.seq, b.seq) })
	for i, k := range ks {
		ids[i] = k.id
	}
}

// nodeSeq is the seq of display id n<seq>, read as fmt.Sscanf(id, "n%d")
// reads it (0 when it is none), parsed once per id rather than per
// comparison of a sort.
func nodeSeq(id string) int64 {
	if len(id) > 1 && len(id) < 20 && id[0] == 'n' && strings.Trim(id[1:], "0123456789") == "" {
		v, _ := strconv.ParseInt(id[1:], 10, 64)
		return v
	}
	var v int64
	fmt.Sscanf(id, "n%d", &v)
	return v
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// ruleResult is what one rule of an audit gave: its check and findings.
type ruleResult struct {
	check Check
	found []Finding
}

// runRule runs p's rule (unless opts turn it off) and returns its check
// and findings.
func runRule(p *Pass, opts *Options, run *graph.Run) ruleResult {
	r := p.Rule
	if src, off := opts.Off(r.ID); off {
		return ruleResult{check: Check{Rule: r.ID, Status: StatusOff, Detail: "turned off in " + src}}
	}
	r.Run(p)
	if p.open > 0 && !p.notApplicable {
		note := fmt.Sprintf("%s not applicable (%s)", plural(p.open, "open fork", "open forks"), OpenReason(run))
		if p.detail == "" {
			p.detail = note
		} else {
			p.detail += "; " + note
		}
	}
	check := Check{Rule: r.ID, Findings: len(p.found)}
	switch {
	case len(p.found) > 0:
		check.Status, check.Examined = StatusFound, true
		check.Detail = plural(len(p.found), "finding", "findings")
		if p.detail != "" {
			check.Detail += "; " + p.detail
		}
	case p.notApplicable:
		check.Status, check.Detail = StatusNotApplicable, p.detail
	default:
		check.Status, check.Detail, check.Examined = StatusClear, p.detail, !p.unexamined
	}
	return ruleResult{check: check, found: p.found}
}

// ruleLanes groups the indexes of rules by Rule.Lane, in rule order, the
// lanes in the order of their first rule.
func ruleLanes(rules []*Rule) [][]int {
	var lanes [][]int
	at := map[string]int{}
	for i, r := range rules {
		k, ok := at[r.Lane]
		if !ok {
			k = len(lanes)
			at[r.Lane] = k
			lanes = append(lanes, nil)
		}
		lanes[k] = append(lanes[k], i)
	}
	return lanes
}
