package report

import (
	"encoding/json"
	"io"

	"github.com/inspect-dev/inspect/findings"
)

// ThresholdJSON is one threshold that tunes a rule, with the value in force
// and its default.
type ThresholdJSON struct {
	Name    string `json:"name"` // the key of --set NAME=VALUE
	Value   string `json:"value"`
	Default string `json:"default"`
	// Source says where Value came from: "default", a config file's
	// "FILE:LINE", or "--set".
	Source string `json:"source"`
	Doc    string `json:"doc"`
}

// ruleThresholds lists the thresholds rule r declares, valued from o (the
// options in force; nil: the defaults).
func ruleThresholds(r *findings.Rule, o *findings.Options) []ThresholdJSON {
	out := []ThresholdJSON{}
	for _, opt := range r.Options {
		out = append(out, ThresholdJSON{Name: opt.Name(), Value: opt.Value(o), Default: opt.Default(), Source: o.Source(opt.Name()), Doc: opt.Doc()})
	}
	return out
}

// WriteExplain writes `inspect audit --explain ID`: rule r's documentation
// with the thresholds in force in o in its Detect text, then each threshold
// that tunes it, its value, where that value came from and, when
// something changed it, its default; and whether the rule is off.
func WriteExplain(w io.Writer, r *findings.Rule, o *findings.Options) error {
	ew := &errWriter{w: w}
	ew.printf("%s", r.Explain(o))
	if src, off := o.Off(r.ID); off {
		ew.printf("\nThis rule is off (%s): inspect audit does not run it.\n", src)
	}
	if ts := ruleThresholds(r, o); len(ts) > 0 {
		ew.printf("\nThresholds (--set NAME=VALUE, or thresholds: in .inspect.yaml):\n")
		for _, t := range ts {
			ew.printf("  %s = %s (%s): %s\n", t.Name, t.Value, thresholdOrigin(t), t.Doc)
		}
	}
	return ew.err
}

// thresholdOrigin is "default", or "--set; default 2".
func thresholdOrigin(t ThresholdJSON) string {
	if t.Source == findings.SourceDefault {
		return findings.SourceDefault
	}
	return t.Source + "; default " + t.Default
}

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
	// Off says where the rule was turned off ("FILE:LINE"); absent when
	// it is on.
	Off string `json:"off,omitempty"`
}

// WriteExplainJSON writes rule r's documentation as one JSON object, with
// the thresholds that tune it as o sets them (nil: the defaults).
func WriteExplainJSON(w io.Writer, r *findings.Rule, o *findings.Options) error {
	return writeIndented(w, ruleJSON(r, o))
}

// WriteRulesJSON writes every rule's documentation as a JSON array.
func WriteRulesJSON(w io.Writer, rules []*findings.Rule, o *findings.Options) error {
	out := make([]RuleJSON, 0, len(rules))
	for _, r := range rules {
		out = append(out, ruleJSON(r, o))
	}
	return writeIndented(w, out)
}

// ExplainJSON is rule r as WriteExplainJSON writes it.
func ExplainJSON(r *findings.Rule, o *findings.Options) RuleJSON { return ruleJSON(r, o) }

func ruleJSON(r *findings.Rule, o *findings.Options) RuleJSON {
	off, _ := o.Off(r.ID)
	return RuleJSON{ID: r.ID, Name: r.Doc.Title, Area: string(r.Area), Severity: r.Severity.String(),
		Detects: r.Detect(o), Price: r.Doc.Price, Fix: r.Doc.Fix, Next: r.Doc.Next, Thresholds: ruleThresholds(r, o), Off: off}
}

func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
