package findings

import (
	"fmt"
	"github.com/inspect-dev/inspect/graph"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Option is one threshold a rule declares in Rule.Options: the name of
// `--set NAME=VALUE`, what it means, its default, and the smallest value
// that works. The only implementation is *Threshold; a rule reads the
// value in force with Threshold.Get(pass.Options).
type Option interface {
	// Name is the key of --set NAME=VALUE ("uneven-ratio").
	Name() string
	// Doc says what the threshold means, lower-case.
	Doc() string
	// Default is the default value, as --set takes it ("5s").
	Default() string
	// Value is the value in force in o, as --set takes it.
	Value(o *Options) string
	// prose is the value in force as a rule's Detect text shows it
	// ("4,000", "5s", "2").
	prose(o *Options) string
	parse(v string) (any, error)
	check(o *Options) error
}

// number is what a Threshold can hold.
type number interface {
	int | int64 | float64 | time.Duration
}

// Threshold is an Option holding a number of type T. Declare one as a
// package value next to the rule that reads it, list it in the rule's
// Options, and name it as {Name} in the rule's Doc.Detect.
type Threshold[T number] struct {
	// Key is the option's name (Option.Name).
	Key string
	// Text is what it means (Option.Doc).
	Text string
	// Def is the default, DESIGN §8's value.
	Def T
	// Min is the smallest value that works.
	Min T
}

// Name implements Option.
func (t *Threshold[T]) Name() string { return t.Key }

// Doc implements Option.
func (t *Threshold[T]) Doc() string { return t.Text }

// Default implements Option.
func (t *Threshold[T]) Default() string { return format(t.Def) }

// Value implements Option.
func (t *Threshold[T]) Value(o *Options) string { return format(t.Get(o)) }

// Get returns the value in force in o (nil: the default).
func (t *Threshold[T]) Get(o *Options) T {
	if o != nil {
		if v, ok := o.values[t.Key]; ok {
			return v.(T)
		}
	}
	return t.Def
}

func (t *Threshold[T]) prose(o *Options) string {
	v := t.Get(o)
	switch x := any(v).(type) {
	case int:
		return graph.FormatCount(int64(x))
	case int64:
		return graph.FormatCount(x)
	}
	return format(v)
}

func (t *Threshold[T]) parse(v string) (any, error) {
	var zero T
	switch any(zero).(type) {
	case int:
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("%s wants a whole number, got %q", t.Key, v)
		}
		return any(n).(T), nil
	case int64:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s wants a whole number, got %q", t.Key, v)
		}
		return any(n).(T), nil
	case float64:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("%s wants a number, got %q", t.Key, v)
		}
		return any(f).(T), nil
	case time.Duration:
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("%s wants a duration such as 5s, got %q", t.Key, v)
		}
		return any(d).(T), nil
	}
	panic(fmt.Sprintf("internal error: threshold %s of unhandled type %T", t.Key, zero))
}

func (t *Threshold[T]) check(o *Options) error {
	if v := t.Get(o); v < t.Min {
		return fmt.Errorf("%s must be at least %s, got %s", t.Key, format(t.Min), format(v))
	}
	return nil
}

// format writes a threshold value as --set takes it.
func format[T number](v T) string {
	switch x := any(v).(type) {
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case time.Duration:
		return x.String()
	}
	panic(fmt.Sprintf("internal error: threshold value of unhandled type %T", v))
}

// Options are the audit policy in force for a set of rules (NewOptions):
// the thresholds (each rule's declared default unless Set changed it) and
// the rules turned off, each with where it came from (SourceDefault, a
// config file's "FILE:LINE", "--set"). Nil means every default, every rule
// on.
type Options struct {
	rules   []*Rule // the rules whose thresholds Set knows
	values  map[string]any
	sources map[string]string // threshold name -> where its value came from
	off     map[string]string // rule id -> where it was turned off
}

// SourceDefault is the source of a threshold nothing set.
const SourceDefault = "default"

// SourceFlag is the source of a value --set gave.
const SourceFlag = "--set"

// NewOptions returns options for rules with every threshold at its
// default and every rule on.
func NewOptions(rules []*Rule) *Options { return &Options{rules: rules} }

// Rules are the rules o was made for (nil for nil).
func (o *Options) Rules() []*Rule {
	if o == nil {
		return nil
	}
	return o.rules
}

// Set applies "name=value" (a threshold of one of o's rules) to o, as
// --set does; its source reads SourceFlag.
func (o *Options) Set(kv string) error {
	name, value, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("%q is not NAME=VALUE", kv)
	}
	return o.SetFrom(name, value, SourceFlag)
}

// SetFrom sets threshold name to value, recording source as where it came
// from (a config file's "FILE:LINE"); a later SetFrom of the same name
// wins, as a flag wins over the file.
func (o *Options) SetFrom(name, value, source string) error {
	opt := LookupOption(o.rules, name)
	if opt == nil {
		var names []string
		for _, s := range OptionSpecs(o.rules) {
			names = append(names, s.Name)
		}
		return fmt.Errorf("unknown threshold %q; known: %s", name, strings.Join(names, ", "))
	}
	v, err := opt.parse(value)
	if err != nil {
		return err
	}
	if o.values == nil {
		o.values, o.sources = map[string]any{}, map[string]string{}
	}
	o.values[name] = v
	o.sources[name] = source
	return nil
}

// Source says where threshold name's value in force came from:
// SourceDefault when nothing set it.
func (o *Options) Source(name string) string {
	if o != nil {
		if s, ok := o.sources[name]; ok {
			return s
		}
	}
	return SourceDefault
}

// TurnOff turns rule id off (it is not run; the audit says so), recording
// source as where that was said.
func (o *Options) TurnOff(id, source string) error {
	if Lookup(o.rules, id) == nil {
		return fmt.Errorf("unknown rule %q; the rules are: %s", id, strings.Join(ruleIDs(o.rules), ", "))
	}
	if o.off == nil {
		o.off = map[string]string{}
	}
	o.off[id] = source
	return nil
}

// TurnOn turns rule id back on (a flag over a config file's off).
func (o *Options) TurnOn(id string) error {
	if Lookup(o.rules, id) == nil {
		return fmt.Errorf("unknown rule %q; the rules are: %s", id, strings.Join(ruleIDs(o.rules), ", "))
	}
	delete(o.off, id)
	return nil
}

// Off reports whether rule id is turned off in o, and where it was.
func (o *Options) Off(id string) (source string, off bool) {
	if o == nil {
		return "", false
	}
	source, off = o.off[id]
	return source, off
}

func ruleIDs(rules []*Rule) []string {
	ids := make([]string, len(rules))
	for i, r := range rules {
		ids[i] = r.ID
	}
	return ids
}

// Validate rejects thresholds of o's rules that cannot work; the error
// names where the value came from when something set it.
func (o *Options) Validate() error { return o.validate(o.Rules()) }

// validate is Validate for the thresholds of rules.
func (o *Options) validate(rules []*Rule) error {
	for _, s := range OptionSpecs(rules) {
		if err := s.Option.check(o); err != nil {
			if src := o.Source(s.Name); src != SourceDefault {
				return fmt.Errorf("%s: %w", src, err)
			}
			return err
		}
	}
	return nil
}

// OptionSpec is one threshold with the rules that declare it: the CLI's
// --set help and --explain come from OptionSpecs.
type OptionSpec struct {
	Option
	// Name is Option.Name(), Doc Option.Doc().
	Name, Doc string
	// Rules are the ids of the rules that declare it, comma-separated.
	Rules string
}

// Get returns the value in force in o as text.
func (s OptionSpec) Get(o *Options) string { return s.Option.Value(o) }

// OptionSpecs lists every threshold of rules, in rule order.
func OptionSpecs(rules []*Rule) []OptionSpec {
	var out []OptionSpec
	index := map[string]int{}
	for _, r := range rules {
		for _, opt := range r.Options {
			i, ok := index[opt.Name()]
			if !ok {
				i = len(out)
				index[opt.Name()] = i
				out = append(out, OptionSpec{Option: opt, Name: opt.Name(), Doc: opt.Doc()})
			}
			if out[i].Rules != "" {
				out[i].Rules += ", "
			}
			out[i].Rules += r.ID
		}
	}
	return out
}

// LookupOption returns the threshold called name among rules, or nil.
func LookupOption(rules []*Rule, name string) Option {
	for _, r := range rules {
		for _, opt := range r.Options {
			if opt.Name() == name {
				return opt
			}
		}
	}
	return nil
}

// placeholderRe finds the {option-name} placeholders of a Detect text.
var placeholderRe = regexp.MustCompile(`\{([a-z][a-z0-9-]*)\}`)

// Detect is the rule's Doc.Detect with each {option} placeholder replaced
// by the value in force in o (nil: the defaults), so --explain, --rules,
// --help and SARIF show the thresholds that applied.
func (r *Rule) Detect(o *Options) string {
	return placeholderRe.ReplaceAllStringFunc(r.Doc.Detect, func(m string) string {
		name := m[1 : len(m)-1]
		for _, opt := range r.Options {
			if opt.Name() == name {
				return opt.prose(o)
			}
		}
		return m // Validate refuses this
	})
}

// validateOptions checks the thresholds of a rule list: each declared
// once per name (the same Option value wherever two rules share it), a
// default that works, named in the Detect of a rule that declares it; and
// every placeholder of a Detect text a threshold of that rule.
func validateOptions(rules []*Rule) error {
	byName := map[string]Option{}
	shown := map[string]bool{}
	var names []string
	for _, r := range rules {
		mine := map[string]bool{}
		for _, opt := range r.Options {
			switch prev, ok := byName[opt.Name()]; {
			case opt.Name() == "" || !placeholderRe.MatchString("{"+opt.Name()+"}"):
				return fmt.Errorf("rule %s has a threshold with a bad name %q (lower-case words joined by -)", r.ID, opt.Name())
			case opt.Doc() == "":
				return fmt.Errorf("threshold %s of rule %s has no Doc", opt.Name(), r.ID)
			case ok && prev != opt:
				return fmt.Errorf("threshold %s is declared twice with different values (rule %s); share one value", opt.Name(), r.ID)
			case !ok:
				byName[opt.Name()] = opt
				names = append(names, opt.Name())
				if err := opt.check(nil); err != nil {
					return fmt.Errorf("threshold %s: default: %v", opt.Name(), err)
				}
			}
			mine[opt.Name()] = true
		}
		for _, m := range placeholderRe.FindAllStringSubmatch(r.Doc.Detect, -1) {
			if !mine[m[1]] {
				return fmt.Errorf("rule %s: Detect names {%s}, which is not one of its Options", r.ID, m[1])
			}
			shown[m[1]] = true
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if !shown[n] {
			return fmt.Errorf("threshold %s appears in the Detect text of none of its rules; write {%s} where the text gives its value", n, n)
		}
	}
	return nil
}
