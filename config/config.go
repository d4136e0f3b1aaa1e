// Package config reads a team's inspect policy from .inspect.yaml (DESIGN
// §17), so it lives in the repository next to the code: audit thresholds
// (the names of `inspect audit --set`), rules turned off, the tool-name
// patterns that count as research in imported runs, a price table (per
// model: input, cached input, cache write and output, per million tokens),
// the prompt-cache lifetime, and ignore entries that accept a finding with
// a reason until an optional expiry date.
//
// Find looks for the file from the working folder up to the repository
// root or the home folder, never above; Load reads and validates one,
// reporting every problem as FILE:LINE: KEY: message (the lines come from
// go.yaml.in/yaml/v3's nodes). The package only reads: the
// commands apply what it holds (flags win over the file) and say where each
// value in force came from.
package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/internal/regfile"
	"github.com/inspect-dev/inspect/money"
)

// FileName is the name Find looks for.
const FileName = ".inspect.yaml"

// maxSize bounds the file read: a policy is a few kilobytes.
const maxSize = 1 << 20

// Threshold is one entry of thresholds:, as written.
type Threshold struct {
	Name, Value string
	Line        int
}

// RuleSwitch is one entry of rules: (a rule turned off, or explicitly on).
type RuleSwitch struct {
	Rule string
	Off  bool
	Line int
}

// Config is one .inspect.yaml, validated. The zero value is no file: every
// default.
type Config struct {
	// Path is the file as found or given ("" = none); Name is how messages
	// name it (relative to the working folder when under it).
	Path, Name string
	// Thresholds in file order.
	Thresholds []Threshold
	// Rules in file order.
	Rules []RuleSwitch
	// Research are the tool-name patterns that count as research in
	// imported runs (nil = the importers' defaults); ResearchLine is where.
	Research     []string
	ResearchLine int
	// Prices is the price table; nil without a prices: section.
	Prices *money.Table
	// CacheLifetime is how long a prompt cache entry lives; zero when the
	// file does not say (CacheLifetimeLine 0).
	CacheLifetime     time.Duration
	CacheLifetimeLine int
	// Ignore are the ignore entries in file order.
	Ignore []findings.Ignore
}

// Error is one problem of a config file.
type Error struct {
	File string
	Line int
	Key  string // "thresholds.uneven-ratio", "ignore[2].reason"; "" for the file
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem Load found, in file order.
type Errors []*Error

func (es Errors) Error() string {
	if len(es) == 1 {
		return es[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s has %d problems:", es[0].File, len(es))
	for _, e := range es {
		b.WriteString("\n  " + e.Error())
	}
	return b.String()
}

// Find returns the path of the FileName nearest dir, looking in dir and
// the folders above it up to the repository root (the nearest folder
// holding .git) or the home folder, whichever comes first, and never
// above: a policy file in a shared folder above them (/tmp, a parent of
// every home) is not the team's. When dir is in neither a repository nor
// the home folder, only dir itself is looked in. "" when there is none.
func Find(dir string) (string, error) {
	home, _ := os.UserHomeDir()
	return find(dir, home)
}

func find(dir, home string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	folders := lookIn(abs, home)
	for _, d := range folders {
		p := filepath.Join(d, FileName)
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.Mode().IsRegular():
			return p, nil
		case err == nil:
			return "", fmt.Errorf("%s is not a regular file", p)
		case !errors.Is(err, fs.ErrNotExist):
			return "", err
		}
	}
	return "", nil
}

// lookIn lists the folders Find looks in, nearest first: abs and those
// above it up to the first that is a repository root or home; abs alone
// when none is.
func lookIn(abs, home string) []string {
	homes := map[string]bool{}
	if home != "" {
		homes[filepath.Clean(home)] = true
		if real, err := filepath.EvalSymlinks(home); err == nil {
			homes[real] = true
		}
	}
	var out []string
	for d := abs; ; {
		out = append(out, d)
		if homes[d] {
			return out
		}
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return out // a .git folder, or the .git file of a worktree
		}
		up := filepath.Dir(d)
		if up == d {
			return out[:1]
		}
		d = up
	}
}

// DisplayName is how messages name path: relative to wd when the file is
// under it or a few folders up, else as it is.
func DisplayName(path, wd string) string {
	if wd == "" {
		return path
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(wd, abs)
	if err != nil || strings.Count(rel, "..") > 3 {
		return path
	}
	return rel
}

// Load reads and validates the config at path; name is how messages name
// the file. A problem of any entry is an Errors listing every one found.
func Load(path, name string) (*Config, error) {
	f, err := regfile.Open(path) // a FIFO is refused, not waited on
	if errors.Is(err, regfile.ErrNotRegular) {
		return nil, &Error{File: name, Msg: "not a regular file"}
	}
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", name, err)
	}
	if len(data) > maxSize {
		return nil, &Error{File: name, Msg: fmt.Sprintf("larger than %d KiB; a config holds a policy, not data", maxSize>>10)}
	}
	c, err := Parse(data, name)
	if err != nil {
		return nil, err
	}
	c.Path = path
	return c, nil
}

// Parse validates a config file's bytes; name is how messages name it.
func Parse(data []byte, name string) (*Config, error) {
	c := &Config{Name: name}
	p := &parser{file: name}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, p.yamlError(err)
	}
	if len(doc.Content) == 0 { // an empty file (or only comments): every default
		return c, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.add(root, "", "the file must be a mapping of keys (thresholds:, rules:, research:, prices:, currency:, cache-lifetime:, ignore:)")
		return nil, p.errs
	}
	var currency string
	var currencyNode *yaml.Node
	p.mapping(root, "", func(key, val *yaml.Node) {
		if val.Tag == "!!null" { // a section with every entry commented out
			return
		}
		switch key.Value {
		case "thresholds":
			c.Thresholds = p.thresholds(val)
		case "rules":
			c.Rules = p.rules(val)
		case "research":
			c.Research, c.ResearchLine = p.research(val), key.Line
		case "prices":
			c.Prices = p.prices(val)
		case "currency":
			currency, currencyNode = p.currency(val), val
		case "cache-lifetime":
			c.CacheLifetime, c.CacheLifetimeLine = p.duration(val, "cache-lifetime"), key.Line
		case "ignore":
			c.Ignore = p.ignores(val)
		default:
			p.add(key, key.Value, "unknown key; the keys are thresholds, rules, research, prices, currency, cache-lifetime, ignore")
		}
	})
	if currency != "" {
		if c.Prices == nil {
			p.add(currencyNode, "currency", "currency without prices: says nothing; add a prices: table or drop it")
		} else {
			c.Prices.Currency = currency
		}
	}
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return c, nil
}

type parser struct {
	file string
	errs Errors
}

func (p *parser) add(n *yaml.Node, key, msg string) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Key: key, Msg: msg})
}

// yamlError turns yaml's "yaml: line 3: …" into FILE:3: ….
func (p *parser) yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, after, ok := strings.Cut(rest, ": "); ok {
			if n, err := strconv.Atoi(num); err == nil {
				line, msg = n, after
			}
		}
	}
	return Errors{{File: p.file, Line: line, Msg: "not valid YAML: " + msg}}
}

// mapping calls fn for each key of n (a mapping) in order, refusing a key
// given twice and a key that is not a plain string.
func (p *parser) mapping(n *yaml.Node, path string, fn func(key, val *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		p.add(n, path, "want a mapping of keys")
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		full := join(path, key.Value)
		if key.Kind != yaml.ScalarNode {
			p.add(key, path, "a key must be a plain name")
			continue
		}
		if first, dup := seen[key.Value]; dup {
			p.add(key, full, fmt.Sprintf("given twice (first at line %d); keep one", first))
			continue
		}
		seen[key.Value] = key.Line
		fn(key, val)
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (p *parser) scalar(n *yaml.Node, key, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.add(n, key, "want "+what)
		return "", false
	}
	return n.Value, true
}

func (p *parser) thresholds(n *yaml.Node) []Threshold {
	var out []Threshold
	p.mapping(n, "thresholds", func(key, val *yaml.Node) {
		k := "thresholds." + key.Value
		v, ok := p.scalar(val, k, "a value such as 3 or 10s")
		if !ok {
			return
		}
		o := findings.NewOptions(rules.All)
		if err := o.SetFrom(key.Value, v, p.file); err != nil {
			p.add(key, k, err.Error())
			return
		}
		if err := o.Validate(); err != nil {
			p.add(val, k, strings.TrimPrefix(err.Error(), p.file+": "))
			return
		}
		out = append(out, Threshold{Name: key.Value, Value: v, Line: key.Line})
	})
	return out
}

func (p *parser) rules(n *yaml.Node) []RuleSwitch {
	var out []RuleSwitch
	p.mapping(n, "rules", func(key, val *yaml.Node) {
		k := "rules." + key.Value
		if findings.Lookup(rules.All, key.Value) == nil {
			var ids []string
			for _, r := range rules.All {
				ids = append(ids, r.ID)
			}
			p.add(key, k, "no such rule; the rules are "+strings.Join(ids, ", "))
			return
		}
		v, ok := p.scalar(val, k, "off or on")
		if !ok {
			return
		}
		switch strings.ToLower(v) {
		case "off", "false":
			out = append(out, RuleSwitch{Rule: key.Value, Off: true, Line: key.Line})
		case "on", "true":
			out = append(out, RuleSwitch{Rule: key.Value, Line: key.Line})
		default:
			p.add(val, k, fmt.Sprintf("want off or on, got %q", v))
		}
	})
	return out
}

func (p *parser) research(n *yaml.Node) []string {
	if n.Kind != yaml.SequenceNode {
		p.add(n, "research", `want a list of tool-name patterns, e.g. ["read*", "search*", "lookup_order"]`)
		return nil
	}
	out := []string{}
	for i, item := range n.Content {
		k := fmt.Sprintf("research[%d]", i)
		v, ok := p.scalar(item, k, "a tool-name pattern")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch {
		case v == "" || v == "*":
			p.add(item, k, fmt.Sprintf("%q would count every tool as research; name the read-only tools", v))
		case strings.Contains(strings.TrimSuffix(v, "*"), "*"):
			p.add(item, k, fmt.Sprintf("%q: a pattern may only end in *", v))
		default:
			out = append(out, v)
		}
	}
	return out
}

// priceKeys are the keys of one model's rates.
var priceKeys = []string{"input", "cached_input", "cache_write", "output"}

func (p *parser) prices(n *yaml.Node) *money.Table {
	t := &money.Table{}
	p.mapping(n, "prices", func(key, val *yaml.Node) {
		k := "prices." + key.Value
		model := strings.TrimSpace(key.Value)
		if model == "" || strings.Contains(strings.TrimSuffix(model, "*"), "*") {
			p.add(key, k, "a model name, or a prefix ending in * (claude-sonnet-4*)")
			return
		}
		if val.Kind != yaml.MappingNode {
			p.add(val, k, "want the model's prices per million tokens: {input: 0.40, cached_input: 0.10, cache_write: 0.50, output: 1.60}")
			return
		}
		var r money.Rates
		have := map[string]bool{}
		p.mapping(val, k, func(rk, rv *yaml.Node) {
			kk := k + "." + rk.Value
			var dst *float64
			switch rk.Value {
			case "input":
				dst = &r.Input
			case "cached_input":
				dst, r.HasCachedInput = &r.CachedInput, true
			case "cache_write":
				dst, r.HasCacheWrite = &r.CacheWrite, true
			case "output":
				dst = &r.Output
			default:
				p.add(rk, kk, "unknown key; a model's prices are "+strings.Join(priceKeys, ", ")+", each per million tokens")
				return
			}
			have[rk.Value] = true // given, even when wrong: no "missing" for it
			s, ok := p.scalar(rv, kk, "a price per million tokens, such as 0.40")
			if !ok {
				return
			}
			f, err := strconv.ParseFloat(s, 64)
			if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
				p.add(rv, kk, fmt.Sprintf("want a price per million tokens (a number, 0 or more), got %q", s))
				return
			}
			*dst = f
		})
		var missing []string
		for _, need := range []string{"input", "output"} {
			if !have[need] {
				missing = append(missing, need)
			}
		}
		if len(missing) > 0 {
			p.add(key, k, "missing "+strings.Join(missing, " and ")+": every model needs its input and output price (cached_input and cache_write default to input)")
			return
		}
		t.Prices = append(t.Prices, money.Price{Model: model, Rates: r, Source: fmt.Sprintf("%s:%d", p.file, key.Line)})
	})
	return t
}

func (p *parser) currency(n *yaml.Node) string {
	v, ok := p.scalar(n, "currency", "an ISO currency code such as USD or EUR")
	if !ok {
		return ""
	}
	if len(v) != 3 || strings.Trim(strings.ToUpper(v), "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		p.add(n, "currency", fmt.Sprintf("want a three-letter ISO code such as USD or EUR, got %q", v))
		return ""
	}
	return strings.ToUpper(v)
}

func (p *parser) duration(n *yaml.Node, key string) time.Duration {
	v, ok := p.scalar(n, key, "a duration such as 5m or 1h")
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		p.add(n, key, fmt.Sprintf("want a duration above zero such as 5m or 1h, got %q", v))
		return 0
	}
	return d
}

// ignoreKeys are the keys of an ignore entry.
var ignoreKeys = []string{"rule", "agent", "fingerprint", "reason", "expires"}

func (p *parser) ignores(n *yaml.Node) []findings.Ignore {
	if n.Kind != yaml.SequenceNode {
		p.add(n, "ignore", "want a list of entries, each with rule and reason (agent, fingerprint and expires optional)")
		return nil
	}
	var out []findings.Ignore
	for i, item := range n.Content {
		k := fmt.Sprintf("ignore[%d]", i)
		ig := findings.Ignore{Source: fmt.Sprintf("%s:%d", p.file, item.Line)}
		ok := true
		p.mapping(item, k, func(key, val *yaml.Node) {
			kk := k + "." + key.Value
			v, good := p.scalar(val, kk, "a value")
			if !good {
				ok = false
				return
			}
			v = strings.TrimSpace(v)
			switch key.Value {
			case "rule":
				if findings.Lookup(rules.All, v) == nil {
					p.add(val, kk, fmt.Sprintf("no rule %q; `inspect audit --rules` lists them", v))
					ok = false
				}
				ig.Rule = v
			case "agent":
				ig.Agent = v
			case "fingerprint":
				if len(v) != 16 || strings.Trim(v, "0123456789abcdef") != "" {
					p.add(val, kk, fmt.Sprintf("want the 16 hex digits of a finding's id (`inspect audit` prints it as id:), got %q", v))
					ok = false
				}
				ig.Fingerprint = v
			case "reason":
				ig.Reason = v
			case "expires":
				t, err := parseExpiry(v)
				if err != nil {
					p.add(val, kk, err.Error())
					ok = false
				}
				ig.Expires, ig.ExpiresText = t, v
			default:
				p.add(key, kk, "unknown key; an ignore entry has "+strings.Join(ignoreKeys, ", "))
				ok = false
			}
		})
		if item.Kind != yaml.MappingNode {
			continue
		}
		if ig.Rule == "" && ok {
			p.add(item, k, "missing rule: name the rule whose findings the entry accepts")
			ok = false
		}
		if ig.Reason == "" && ok {
			p.add(item, k+".reason", "missing reason: say why the team accepts the finding (the audit shows it)")
			ok = false
		}
		if ok {
			out = append(out, ig)
		}
	}
	return out
}

// parseExpiry reads the last day an entry holds (YYYY-MM-DD) and returns
// the moment it stops holding: the start of the next day, UTC.
func parseExpiry(v string) (time.Time, error) {
	d, err := time.Parse("2006-01-02", v)
	if err != nil {
		return time.Time{}, fmt.Errorf("want the last day the entry holds as YYYY-MM-DD, got %q", v)
	}
	return d.AddDate(0, 0, 1), nil
}

// Options returns the audit options in force: the file's thresholds and
// rules, each with its FILE:LINE as source. The commands apply their flags
// after it, so flags win.
func (c *Config) Options() (*findings.Options, error) {
	o := findings.NewOptions(rules.All)
	if c == nil {
		return o, nil
	}
	for _, t := range c.Thresholds {
		if err := o.SetFrom(t.Name, t.Value, c.at(t.Line)); err != nil {
			return nil, err
		}
	}
	for _, r := range c.Rules {
		var err error
		if r.Off {
			err = o.TurnOff(r.Rule, c.at(r.Line))
		} else {
			err = o.TurnOn(r.Rule)
		}
		if err != nil {
			return nil, err
		}
	}
	return o, nil
}

// at is "FILE:LINE" of this file.
func (c *Config) at(line int) string { return fmt.Sprintf("%s:%d", c.Name, line) }

// Lifetime returns the cache lifetime the file sets and its FILE:LINE;
// false when it sets none. It is the default of inspect cache
// --cache-lifetime and the lifetime the audit's prompt-cache analysis
// (cache.unstable-prefix) and the graph's cache labels use.
func (c *Config) Lifetime() (time.Duration, string, bool) {
	if c == nil || c.CacheLifetimeLine == 0 {
		return 0, "", false
	}
	return c.CacheLifetime, c.at(c.CacheLifetimeLine), true
}

// ResearchPatterns returns the file's research patterns, or nil when it
// sets none (the importers' defaults apply).
func (c *Config) ResearchPatterns() []string {
	if c == nil {
		return nil
	}
	return c.Research
}

// Template is the commented .inspect.yaml `inspect init` (no folder) writes:
// every threshold at its default (commented out), and an example of each
// other section. research are the importers' default patterns.
func Template(research []string) string {
	var b strings.Builder
	b.WriteString(`# .inspect.yaml: this repository's inspect policy.
#
# inspect reads the nearest .inspect.yaml from the working folder up to the
# repository root or the home folder, never above (or the file --config
# names). A flag such as --set wins over this file;
# inspect audit --rules and --explain RULE show each value in force and
# where it came from. A mistake here is reported as FILE:LINE: KEY.

# Audit thresholds, by the names of inspect audit --set NAME=VALUE. The
# values shown are the defaults; uncomment a line to change one.
# thresholds:
`)
	for _, s := range findings.OptionSpecs(rules.All) {
		fmt.Fprintf(&b, "#   %s: %s", s.Name, s.Default())
		fmt.Fprintf(&b, "%s# %s (%s)\n", strings.Repeat(" ", max(1, 30-len(s.Name)-len(s.Default()))), s.Doc, s.Rules)
	}
	b.WriteString(`
# Rules turned off: the audit does not run them and says so.
# rules:
#   fork.uneven: off

# Tool names that count as research in imported runs when the source's own
# list does not say: a trailing * matches any rest; case does not matter.
# research: [`)
	for i, r := range research {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", r)
	}
	b.WriteString(`]

# Money: per model (or a name prefix ending in *), prices per million
# tokens. cached_input (cache reads) and cache_write default to input.
# With a table, audit and diff show what a run cost, per agent and per
# finding; without one they show no money. The figures below only show
# the form: copy your provider's current prices.
# currency: USD
# prices:
#   gpt-4.1-mini: {input: 0.40, cached_input: 0.10, output: 1.60}
#   claude-sonnet-4*: {input: 3.00, cached_input: 0.30, cache_write: 3.75, output: 15.00}

# How long a provider keeps a prompt prefix cached (inspect cache).
# cache-lifetime: 5m

# Findings the team accepts. A finding an entry covers is listed as
# accepted, with the reason, and not counted for --fail-on. rule and reason
# are required; agent and fingerprint (the id: inspect audit prints)
# narrow the entry; from the day after expires the entry no longer holds
# and the audit says so.
# ignore:
#   - rule: fork.uneven
#     agent: researcher
#     fingerprint: 0123456789abcdef
#     reason: the APAC source answers slowly; nothing to fix on our side
#     expires: 2026-12-31
`)
	return b.String()
}
