package findings

import (
	"encoding/json"
	"io"
	"path"
	"strings"
)

// Threshold is one option that tunes a rule, with the value in force and
// its default (`inspect audit --explain`).
type Threshold struct {
	Name    string `json:"name"` // the key of --set NAME=VALUE
	Value   string `json:"value"`
	Default string `json:"default"`
	Doc     string `json:"doc"`
}

// Thresholds lists the options that tune rule r, valued from o (the options
// in force; nil = the defaults).
func Thresholds(r *Rule, o *Options) []Threshold {
	def := DefaultOptions()
	if o == nil {
		o = def
	}
	var out []Threshold
	for _, s := range OptionSpecs() {
		if !specTunes(s, r.ID) {
			continue
		}
		out = append(out, Threshold{Name: s.Name, Value: s.Get(o), Default: s.Get(def), Doc: s.Doc})
	}
	return out
}

// specTunes reports whether spec s tunes rule id: s.Rules is a list of ids
// or patterns (fanout.*), separated by commas.
func specTunes(s OptionSpec, id string) bool {
	for _, p := range strings.Split(s.Rules, ",") {
		if ok, _ := path.Match(strings.TrimSpace(p), id); ok {
			return true
		}
	}
	return false
}

// WriteExplain writes rule r's documentation as text, then the thresholds
// that tune it as o sets them.
func WriteExplain(w io.Writer, r *Rule, o *Options) error {
	ew := &errWriter{w: w}
	ew.printf("%s", r.Explain())
	if ts := Thresholds(r, o); len(ts) > 0 {
		ew.printf("\nThresholds (--set NAME=VALUE):\n")
		for _, t := range ts {
			note := ""
			if t.Value != t.Default {
				note = " (default " + t.Default + ")"
			}
			ew.printf("  %s = %s%s: %s\n", t.Name, t.Value, note, t.Doc)
		}
	}
	return ew.err
}

// RuleJSON is one rule's documentation in `inspect audit --explain ID
// --format json` and `--rules --format json` (docs/audit-json.md).
type RuleJSON struct {
	ID         string      `json:"id"`
	Name       string      `json:"name"`
	Area       string      `json:"area"`
	Severity   string      `json:"severity"`
	Detects    string      `json:"detects"`
	Price      string      `json:"price"`
	Fix        string      `json:"fix"`
	Next       string      `json:"next"`
	Thresholds []Threshold `json:"thresholds"`
}

func ruleJSON(r *Rule, o *Options) RuleJSON {
	ts := Thresholds(r, o)
	if ts == nil {
		ts = []Threshold{}
	}
	return RuleJSON{ID: r.ID, Name: r.Doc.Title, Area: string(r.Area), Severity: r.Severity.String(),
		Detects: r.Doc.Detect, Price: r.Doc.Price, Fix: r.Doc.Fix, Next: r.Doc.Next, Thresholds: ts}
}

// WriteExplainJSON writes rule r's documentation as one JSON object.
func WriteExplainJSON(w io.Writer, r *Rule, o *Options) error {
	return writeIndented(w, ruleJSON(r, o))
}

// WriteRulesJSON writes every rule's documentation as a JSON array.
func WriteRulesJSON(w io.Writer, rules []*Rule, o *Options) error {
	out := make([]RuleJSON, 0, len(rules))
	for _, r := range rules {
		out = append(out, ruleJSON(r, o))
	}
	return writeIndented(w, out)
}

func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
