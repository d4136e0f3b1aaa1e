package findings

import (
	"encoding/json"
	"io"
	"path"
	"strings"
)

// RuleJSON is one rule's documentation in `inspect audit --explain ID
// --format json` and `--rules --format json` (docs/audit-json.md).
type RuleJSON struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Area       string          `json:"area"`
	Severity   string          `json:"severity"`
	Detects    string          `json:"detects"`
	Price      string          `json:"price"`
	Fix        string          `json:"fix"`
	Next       string          `json:"next"`
	Thresholds []ThresholdJSON `json:"thresholds"`
}

// ThresholdJSON is one threshold that tunes a rule, with the value in force
// and its default.
type ThresholdJSON struct {
	Name    string `json:"name"` // the key of --set NAME=VALUE
	Value   string `json:"value"`
	Default string `json:"default"`
	Doc     string `json:"doc"`
}

// WriteExplainJSON writes rule r's documentation as one JSON object, with
// the thresholds that tune it as o sets them (nil: the defaults).
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

func ruleJSON(r *Rule, o *Options) RuleJSON {
	return RuleJSON{ID: r.ID, Name: r.Doc.Title, Area: string(r.Area), Severity: r.Severity.String(),
		Detects: r.Doc.Detect, Price: r.Doc.Price, Fix: r.Doc.Fix, Next: r.Doc.Next, Thresholds: ruleThresholds(r, o)}
}

// ruleThresholds lists the options that tune rule r, valued from o.
func ruleThresholds(r *Rule, o *Options) []ThresholdJSON {
	def := DefaultOptions()
	if o == nil {
		o = def
	}
	out := []ThresholdJSON{}
	for _, s := range OptionSpecs() {
		for _, p := range strings.Split(s.Rules, ",") { // ids or patterns (fanout.*)
			if ok, _ := path.Match(strings.TrimSpace(p), r.ID); ok {
				out = append(out, ThresholdJSON{Name: s.Name, Value: s.Get(o), Default: s.Get(def), Doc: s.Doc})
				break
			}
		}
	}
	return out
}

func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
