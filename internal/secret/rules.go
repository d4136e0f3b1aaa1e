package secret

import (
	_ "embed"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
)

// The rule set: gitleaks' default configuration (gitleaks/gitleaks.toml,
// MIT, see gitleaks/README.md for its version and how to update it), read
// as data and compiled with Go's regexp — the engine gitleaks itself uses
// in its default build — next to the few shapes of our own that it has no
// rule for (ownRules). gitleaks' detector is not linked: its package
// brings viper, zerolog, archive readers and a WebAssembly regexp engine,
// where the rules alone are what a redactor needs.
//
//go:embed gitleaks/gitleaks.toml
var gitleaksTOML []byte

// rule is one detector: a regexp that matches a secret in its context,
// the group that is the secret, and what rules a match out.
type rule struct {
	id       string
	src      string
	keywords []string // lower case; a text holding none is not scanned (none: always)
	group    int      // the secret's group; 0 = the first non-empty one, else the match
	entropy  float64  // a secret of this Shannon entropy or less is no secret (0: no check)
	allow    []allowlist

	once sync.Once
	re   *regexp.Regexp // compiled on first use; nil when it does not compile
	// Where the regexp looks (set with re): a match holds one of the
	// keywords, so it lies within width runes of one (an unbounded repeat
	// counted as openRepeat runes, or closedRepeat when the match cannot
	// be cut short inside it), and the regexp runs on those stretches of
	// the text, joined up to chunk bytes (what Go's backtracker takes).
	width     int
	unbounded bool
	chunk     int
	// precheck, when set, rules a keyword found at s[from:to] out
	// cheaply: a necessary condition of the regexp matching there.
	precheck func(s string, from, to int) bool
	// anchored, when set, is the regexp anchored at its start: every
	// match of this rule begins with one of its keywords, so it is tried
	// at each keyword found and nowhere else (wordStart: where a word
	// begins, the rule's leading \b).
	anchored  *regexp.Regexp
	wordStart bool
	// lead, when not 0, is how many runes of leadClass may come before
	// the keyword (gitleaks' "[\w.-]{0,50}?" before a name): the anchored
	// regexp is tried from the furthest of them.
	lead      int
	leadClass []rune // ranges, as syntax.Regexp.Rune
	// local: every match holds one of the keywords, so the regexp need
	// run near them only; a rule whose keyword is context elsewhere in
	// the text ("airtable", then a token of its shape) runs on it all.
	local bool
}

// allowlist is one of gitleaks' allowlists: a match it covers is not a
// secret.
type allowlist struct {
	target    string // what the regexes look at: "secret" (default), "match" or "line"
	and       bool   // every listed check must hold (gitleaks' condition = "AND")
	never     bool   // it also needs a file path or commit, which text has not: it never holds
	src       []string
	regexes   []*regexp.Regexp
	stopwords []string // lower case; a secret holding one is allowed
}

// ruleSet is every rule with the keyword prefilter over them.
type ruleSet struct {
	rules  []*rule
	global []allowlist
	always []int    // rules without keywords
	kw     *matcher // keyword → the rules it selects
	err    error    // the embedded file did not read (a test fails on it)
}

var (
	loadOnce sync.Once
	loaded   *ruleSet
)

// rules returns the rule set, read and indexed once; a rule's regexp is
// compiled the first time a text holds one of its keywords, so a command
// that redacts nothing pays nothing.
func rules() *ruleSet {
	loadOnce.Do(func() { loaded = loadRules(gitleaksTOML) })
	return loaded
}

type tomlAllowlist struct {
	Condition   string   `toml:"condition"`
	RegexTarget string   `toml:"regexTarget"`
	Regexes     []string `toml:"regexes"`
	StopWords   []string `toml:"stopwords"`
	Paths       []string `toml:"paths"`
	Commits     []string `toml:"commits"`
}

type tomlRule struct {
	ID          string          `toml:"id"`
	Regex       string          `toml:"regex"`
	Path        string          `toml:"path"`
	SecretGroup int             `toml:"secretGroup"`
	Entropy     float64         `toml:"entropy"`
	Keywords    []string        `toml:"keywords"`
	SkipReport  bool            `toml:"skipReport"`
	Required    []any           `toml:"required"`
	Allowlist   *tomlAllowlist  `toml:"allowlist"`
	Allowlists  []tomlAllowlist `toml:"allowlists"`
}

type tomlConfig struct {
	Allowlist  *tomlAllowlist  `toml:"allowlist"`
	Allowlists []tomlAllowlist `toml:"allowlists"`
	Rules      []tomlRule      `toml:"rules"`
}

// loadRules reads a gitleaks configuration and adds our own rules. Rules
// gitleaks applies to some files only (a path), rules that need another
// rule's match beside them (required) and rules only such a rule uses
// (skipReport) are left out: a text has no path, and half a composite
// rule is not a secret.
func loadRules(data []byte) *ruleSet {
	rs := &ruleSet{}
	var cfg tomlConfig
	if err := toml.Unmarshal(data, &cfg); err != nil {
		rs.err = fmt.Errorf("read the gitleaks rules: %w", err)
	}
	globals := cfg.Allowlists
	if cfg.Allowlist != nil {
		globals = append(globals, *cfg.Allowlist)
	}
	for _, a := range globals {
		al := newAllowlist(a)
		al.compile()
		rs.global = append(rs.global, al)
	}
	for _, tr := range cfg.Rules {
		if tr.Regex == "" || tr.Path != "" || len(tr.Required) > 0 || tr.SkipReport {
			continue
		}
		r := &rule{id: tr.ID, src: tr.Regex, group: tr.SecretGroup, entropy: tr.Entropy}
		for _, k := range tr.Keywords {
			r.keywords = append(r.keywords, strings.ToLower(k))
		}
		lists := tr.Allowlists
		if tr.Allowlist != nil {
			lists = append(lists, *tr.Allowlist)
		}
		for _, a := range lists {
			r.allow = append(r.allow, newAllowlist(a))
		}
		rs.rules = append(rs.rules, r)
	}
	rs.rules = append(rs.rules, ownRules()...)
	var words []string
	var owners [][]int
	index := map[string]int{}
	for i, r := range rs.rules {
		if len(r.keywords) == 0 {
			rs.always = append(rs.always, i)
		}
		for _, k := range r.keywords {
			j, ok := index[k]
			if !ok {
				j = len(words)
				index[k] = j
				words = append(words, k)
				owners = append(owners, nil)
			}
			owners[j] = append(owners[j], i)
		}
	}
	rs.kw = newMatcher(words, owners, len(rs.rules))
	return rs
}

func newAllowlist(a tomlAllowlist) allowlist {
	al := allowlist{target: a.RegexTarget, and: strings.EqualFold(a.Condition, "AND"), src: a.Regexes}
	for _, w := range a.StopWords {
		al.stopwords = append(al.stopwords, strings.ToLower(w))
	}
	switch {
	case al.and && (len(a.Paths) > 0 || len(a.Commits) > 0):
		al.never = true // a path or commit check that text cannot pass
	case !al.and && len(a.Regexes) == 0 && len(a.StopWords) == 0:
		al.never = true // paths or commits only
	}
	return al
}

func (a *allowlist) compile() {
	for _, src := range a.src {
		if re, err := regexp.Compile(src); err == nil {
			a.regexes = append(a.regexes, re)
		}
	}
}

// allows reports whether the allowlist covers a finding: its secret, its
// whole match and the line holding it.
func (a *allowlist) allows(secret, match, line string) bool {
	if a.never {
		return false
	}
	target := secret
	switch a.target {
	case "match":
		target = match
	case "line":
		target = line
	}
	regex := false
	for _, re := range a.regexes {
		if re.MatchString(target) {
			regex = true
			break
		}
	}
	stop := false
	if len(a.stopwords) > 0 {
		low := strings.ToLower(secret)
		for _, w := range a.stopwords {
			if strings.Contains(low, w) {
				stop = true
				break
			}
		}
	}
	if a.and {
		return (len(a.regexes) == 0 || regex) && (len(a.stopwords) == 0 || stop)
	}
	return regex || stop
}

// compiled returns the rule's regexp (nil when it does not compile),
// compiling it and its allowlists' the first time.
func (r *rule) compiled() *regexp.Regexp {
	r.once.Do(func() {
		re, err := regexp.Compile(r.src)
		if err != nil {
			return
		}
		r.re = re
		for i := range r.allow {
			r.allow[i].compile()
		}
		r.width, r.unbounded, r.chunk = reach(r.src)
		if r.id == "generic-api-key" {
			r.precheck = assignmentFollows
		}
		r.local = holdsKeyword(r.src, r.keywords)
		if wb, lead, class, ok := startsAtKeyword(r.src, r.keywords); ok && r.local {
			if a, err := regexp.Compile(`^(?:` + r.src + `)`); err == nil {
				r.anchored, r.wordStart, r.lead, r.leadClass = a, wb, lead, class
			}
		}
	})
	return r.re
}

// The ids of our own rules, as the import summary names them; every other
// id is a gitleaks rule's.
const (
	RuleKnown  = "known-key"    // a key inspect was given (New)
	RuleHeader = "auth-header"  // an Authorization, Proxy-Authorization, api-key or x-api-key value
	RuleURL    = "url-password" // scheme://user:password@
	RuleSKKey  = "sk-api-key"   // an sk-… key of any provider
)

// maxMatches bounds the findings of one rule in one text.
const maxMatches = 10000

// ownRules are the shapes gitleaks has no rule for: header values of 8
// characters or more (gitleaks' generic rule wants 10 and skips
// "Bearer"), a
// URL's user:password (its only URL rule is for curl -u), and an sk- key
// of a provider gitleaks does not list (its OpenAI and Anthropic rules
// want the full, current shape).
func ownRules() []*rule {
	return []*rule{
		// header names as HTTP writes them: api_key, apiKey and APIKey
		// are code's names, left to gitleaks' generic rule and its checks
		{id: RuleHeader, keywords: []string{"proxy-authorization", "authorization", "x-api-key", "api-key"},
			src:     `(?i)(?:proxy-authorization|authorization|x-api-key|api-key)\\?["']?[ \t]{0,8}[:=][ \t]{0,8}\\?["']?[ \t]{0,8}(?:(?:bearer|basic|token)[ \t]{1,8})?([^\s"'\\,;<>&]{8,1000})`,
			group:   1,
			entropy: 2},
		{id: RuleURL, keywords: []string{"://"},
			src:   `[a-zA-Z][a-zA-Z0-9+.-]{0,31}://([^/\s@"'<>]{1,256}:[^/\s@"'<>]{0,256})@`,
			group: 1},
		{id: RuleSKKey, keywords: []string{"sk-"},
			src:     `\b(sk-[A-Za-z0-9][A-Za-z0-9_-]{19,})`,
			group:   1,
			entropy: 3},
	}
}

// shannon is gitleaks' entropy of a secret: over its runes, divided by
// its length in bytes.
func shannon(s string) float64 {
	if s == "" {
		return 0
	}
	counts := map[rune]int{}
	for _, c := range s {
		counts[c]++
	}
	inv := 1.0 / float64(len(s))
	e := 0.0
	for _, n := range counts {
		f := float64(n) * inv
		e -= f * math.Log2(f)
	}
	return e
}

// span is one secret found in a text: its bytes and the rule that found it.
type span struct {
	from, to int
	rule     string
}

// find returns the secrets the rules find in s, in no order.
func (rs *ruleSet) find(s string) []span {
	var out []span
	occ := rs.kw.match(s, nil)
	for _, i := range rs.always {
		if re := rs.rules[i].compiled(); re != nil {
			out = rs.scan(rs.rules[i], s, 0, len(s), out)
		}
	}
	for i, r := range rs.rules {
		if len(occ[i]) == 0 || r.compiled() == nil {
			continue
		}
		out = rs.near(r, s, occ[i], out)
	}
	return out
}

// near runs rule r's regexp on the stretches of s around its keywords
// (packed as the matcher gives them), adding the secrets found to out.
func (rs *ruleSet) near(r *rule, s string, kws []int, out []span) []span {
	if !r.local {
		return rs.scan(r, s, 0, len(s), out)
	}
	if r.anchored != nil {
		return rs.at(r, s, kws, out)
	}
	before, after := 2*r.width+1, r.width+1 // the margin before: see scan
	cs, ce := -1, -1
	for _, v := range kws {
		at, n := v/kwUnit, v%kwUnit
		if r.precheck != nil && !r.precheck(s, at, at+n) {
			continue
		}
		ws, we := max(0, at-before), min(len(s), at+n+after)
		switch {
		case cs < 0:
			cs, ce = ws, we
		case ws <= ce && we-cs <= max(r.chunk, we-ws):
			ce = max(ce, we)
		default:
			out = rs.scan(r, s, cs, ce, out)
			cs, ce = ws, we
		}
	}
	if cs >= 0 {
		out = rs.scan(r, s, cs, ce, out)
	}
	return out
}

// at tries rule r's anchored regexp at each of its keywords in s (from
// the furthest lead character before it, when the rule has a lead).
// Matches do not overlap, as FindAll's do not.
func (rs *ruleSet) at(r *rule, s string, kws []int, out []span) []span {
	end := 0 // where the last match ended
	for _, v := range kws {
		at, n := v/kwUnit, v%kwUnit
		if at < end || (r.wordStart && at > 0 && isWord(s[at-1]) == isWord(s[at])) {
			continue
		}
		if r.precheck != nil && !r.precheck(s, at, at+n) {
			continue
		}
		from := at
		for k := 0; k < r.lead && from > end; k++ {
			c, size := utf8.DecodeLastRuneInString(s[:from])
			if !inClass(r.leadClass, c) {
				break
			}
			from -= size
		}
		to := min(len(s), at+r.width+1)
		for {
			m := r.anchored.FindStringSubmatchIndex(s[from:to])
			if m == nil {
				break
			}
			if m[1] == to-from && to < len(s) {
				if r.unbounded {
					to = min(len(s), from+4*(to-from)) // it may go on: look further
					continue
				}
				break // a bounded match cannot reach this far: "$" at the cut
			}
			for k := range m {
				if m[k] >= 0 {
					m[k] += from
				}
			}
			end = m[1]
			if sp, ok := rs.secret(r, s, m); ok {
				out = append(out, sp)
			}
			break
		}
	}
	return out
}

// inClass reports whether c is in ranges (pairs, as syntax.Regexp.Rune).
func inClass(ranges []rune, c rune) bool {
	for i := 0; i+1 < len(ranges); i += 2 {
		if ranges[i] <= c && c <= ranges[i+1] {
			return true
		}
	}
	return false
}

func isWord(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// scan runs rule r's regexp on s[from:to], adding the secrets found to
// out. A match that reaches a cut of the stretch (not the text's own
// start or end) is one the cut may have changed: for a rule of bounded
// width it is no match (the stretch around a keyword leaves room for any
// match holding it, and twice that before it so such a match does not
// hide one), for an unbounded rule the stretch is widened and scanned
// again.
func (rs *ruleSet) scan(r *rule, s string, from, to int, out []span) []span {
	for {
		found := len(out)
		widen := false
		for _, m := range r.re.FindAllStringSubmatchIndex(s[from:to], maxMatches) {
			for k := range m {
				if m[k] >= 0 {
					m[k] += from
				}
			}
			if (m[0] == from && from > 0) || (m[1] == to && to < len(s)) {
				if r.unbounded {
					widen = true
					break
				}
				continue
			}
			if sp, ok := rs.secret(r, s, m); ok {
				out = append(out, sp)
			}
		}
		if !widen {
			return out
		}
		out = out[:found]
		w := to - from
		from, to = max(0, from-4*w), min(len(s), to+4*w)
	}
}

// secret turns one match of rule r in s into the secret's span, or false
// when its entropy or an allowlist says it is none.
func (rs *ruleSet) secret(r *rule, s string, m []int) (span, bool) {
	from, to := m[0], m[1]
	// gitleaks trims newlines off the match
	for from < to && s[from] == '\n' {
		from++
	}
	for to > from && s[to-1] == '\n' {
		to--
	}
	match := s[from:to]
	sf, st := from, to
	switch {
	case r.group > 0:
		if 2*r.group+1 >= len(m) || m[2*r.group] < 0 {
			return span{}, false
		}
		sf, st = m[2*r.group], m[2*r.group+1]
	default:
		for g := 1; 2*g+1 < len(m); g++ {
			if m[2*g] >= 0 && m[2*g+1] > m[2*g] {
				sf, st = m[2*g], m[2*g+1]
				break
			}
		}
	}
	sec := s[sf:st]
	if sec == "" || strings.HasPrefix(sec, Mark) {
		return span{}, false // already redacted
	}
	if r.entropy != 0 && shannon(sec) <= r.entropy {
		return span{}, false
	}
	line := lineOf(s, from, to)
	for i := range rs.global {
		if rs.global[i].allows(sec, match, line) {
			return span{}, false
		}
	}
	for i := range r.allow {
		if r.allow[i].allows(sec, match, line) {
			return span{}, false
		}
	}
	return span{sf, st, r.id}, true
}

// lineOf is the line of s that holds s[from:to] (all the lines it spans).
func lineOf(s string, from, to int) string {
	a := strings.LastIndexByte(s[:from], '\n') + 1
	b := strings.IndexByte(s[to:], '\n')
	if b < 0 {
		return s[a:]
	}
	return s[a : to+b]
}

// assignmentFollows is gitleaks' generic-api-key rule's structure after
// its keyword, as a cheap necessary condition: within 20 name characters
// ([ \t\w.-]) and 3 quotes or spaces, an assignment ('=', '>', ':', '|',
// '?' or ','), then, past at most 8 more of those and quotes and
// spaces, a value of [\w.=+/-] long enough (10 with what was skipped)
// that ends at a quote, a space, ';', a backslash or the end. Most of a
// session's "key", "token" and "api" are prose and code with none of it,
// and the rule's regexp is too long for Go's backtracker.
func assignmentFollows(s string, _, to int) bool {
	i := to
	for ; ; i++ {
		if i >= len(s) || i > to+23 {
			return false
		}
		c := s[i]
		if isAssign(c) {
			break
		}
		switch {
		case c == ' ' || c == '\t' || c == '.' || c == '-' || c == '\'' || c == '"' || isSpace(c) || isWord(c):
		case c >= 0x80: // \w under (?i) holds the Kelvin sign and the long s
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != '\u212a' && r != '\u017f' {
				return false
			}
			i += size - 1
		default:
			return false
		}
	}
	j := i + 1
	for k := 0; j < len(s) && k < 8 && (isAssign(s[j]) || s[j] == '`' || s[j] == '\'' || s[j] == '"' || isSpace(s[j])); k++ {
		j++
	}
	v := j
	for v < len(s) && (isWord(s[v]) || s[v] == '.' || s[v] == '=' || s[v] == '+' || s[v] == '/' || s[v] == '-') {
		v++
	}
	if (v-j)+(j-i-1) < 10 {
		return false
	}
	return v == len(s) || s[v] == '`' || s[v] == '\'' || s[v] == '"' || s[v] == ';' || s[v] == '\\' || isSpace(s[v])
}

func isAssign(c byte) bool {
	return c == '=' || c == '>' || c == ':' || c == '|' || c == '?' || c == ','
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
