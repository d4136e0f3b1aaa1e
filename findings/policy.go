package findings

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// The kinds of Suppression.
const (
	// SuppressedIgnore is a finding an ignore entry of the team's config
	// accepted, with its reason.
	SuppressedIgnore = "ignored"
	// SuppressedBaseline is a finding an earlier audit (--baseline FILE)
	// already had.
	SuppressedBaseline = "baseline"
)

// Suppression says why a finding does not count for --fail-on. The
// finding is still listed, in every format, with it.
type Suppression struct {
	// Kind is SuppressedIgnore or SuppressedBaseline.
	Kind string `json:"kind"`
	// Reason is the ignore entry's reason, or what the baseline is.
	Reason string `json:"reason"`
	// Source says where: the ignore entry (".inspect.yaml:14") or the
	// baseline file.
	Source string `json:"source"`
	// Expires is the last day an ignore entry holds (YYYY-MM-DD); "" when
	// it does not expire.
	Expires string `json:"expires,omitempty"`
}

// String is the human form: "accepted: the APAC report is slow at its
// source (.inspect.yaml:14, until 2026-06-30)".
func (s *Suppression) String() string {
	if s.Kind == SuppressedBaseline {
		return fmt.Sprintf("in the baseline: %s", s.Reason)
	}
	where := s.Source
	if s.Expires != "" {
		where += ", until " + s.Expires
	}
	return fmt.Sprintf("accepted: %s (%s)", s.Reason, where)
}

// Ignore is one ignore entry of the config: the findings of Rule (of
// Agent, with Fingerprint, when those are set) are accepted for Reason
// until Expires.
type Ignore struct {
	// Rule is required; Agent and Fingerprint narrow the entry when set.
	Rule, Agent, Fingerprint string
	// Reason is why the team accepts the finding (required).
	Reason string
	// Expires is when the entry stops holding (the start of the day
	// after the last one); zero = never. ExpiresText is that last day as
	// written (YYYY-MM-DD).
	Expires     time.Time
	ExpiresText string
	// Source is where the entry is written (".inspect.yaml:14").
	Source string
}

// Matches reports whether the entry covers f.
func (ig *Ignore) Matches(f *Finding) bool {
	return ig.Rule == f.Rule && (ig.Agent == "" || ig.Agent == f.Agent) &&
		(ig.Fingerprint == "" || ig.Fingerprint == f.Fingerprint)
}

// expired reports whether the entry no longer holds at now.
func (ig *Ignore) expired(now time.Time) bool {
	return !ig.Expires.IsZero() && !now.Before(ig.Expires)
}

// describe names the entry: "ignore entry .inspect.yaml:14 (fork.uneven,
// agent researcher)".
func (ig *Ignore) describe() string {
	what := ig.Rule
	if ig.Agent != "" {
		what += ", agent " + ig.Agent
	}
	if ig.Fingerprint != "" {
		what += ", fingerprint " + ig.Fingerprint
	}
	return fmt.Sprintf("ignore entry %s (%s)", ig.Source, what)
}

// Baseline is an earlier audit's findings (`inspect audit --baseline
// FILE`): a finding with one of its fingerprints is known, not new.
type Baseline struct {
	// Source is the file as given.
	Source string
	// Run is the run the earlier audit was of, when the file says.
	Run string
	// Fingerprints are the earlier findings' fingerprints.
	Fingerprints map[string]bool
}

// ReadBaseline reads an earlier audit written by `inspect audit --format
// json` or `--format sarif` (the fingerprints under
// partialFingerprints["inspectFinding/v1"]). source names the file in
// messages.
func ReadBaseline(r io.Reader, source string) (*Baseline, error) {
	var doc struct {
		// audit JSON
		Run      *string `json:"run"`
		Findings []struct {
			Fingerprint string `json:"fingerprint"`
		} `json:"findings"`
		// SARIF
		Version string `json:"version"`
		Runs    []struct {
			Properties struct {
				Run string `json:"run"`
			} `json:"properties"`
			Results []struct {
				PartialFingerprints map[string]string `json:"partialFingerprints"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.NewDecoder(io.LimitReader(r, 256<<20)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("baseline %s is not JSON or SARIF written by inspect audit: %v", source, err)
	}
	b := &Baseline{Source: source, Fingerprints: map[string]bool{}}
	switch {
	case doc.Version != "" && doc.Runs != nil:
		for _, run := range doc.Runs {
			if b.Run == "" {
				b.Run = run.Properties.Run
			}
			for _, res := range run.Results {
				if fp := res.PartialFingerprints[FingerprintKey]; fp != "" {
					b.Fingerprints[fp] = true
				}
			}
		}
	case doc.Run != nil && doc.Findings != nil:
		b.Run = *doc.Run
		for _, f := range doc.Findings {
			if f.Fingerprint != "" {
				b.Fingerprints[f.Fingerprint] = true
			}
		}
	default:
		return nil, fmt.Errorf("baseline %s is neither `inspect audit --format json` nor `--format sarif` output; write one with `inspect audit RUN --format json > %s`", source, source)
	}
	return b, nil
}

// suppress marks the findings of rep that an ignore entry or the baseline
// covers, and warns of expired entries. An expired entry suppresses
// nothing.
func suppress(rep *Report, ignores []Ignore, base *Baseline, now time.Time) {
	counted := make([]int, len(ignores))
	for i := range rep.Findings {
		f := &rep.Findings[i]
		for k := range ignores {
			ig := &ignores[k]
			if !ig.Matches(f) {
				continue
			}
			counted[k]++
			if ig.expired(now) {
				continue
			}
			f.Suppressed = &Suppression{Kind: SuppressedIgnore, Reason: ig.Reason, Source: ig.Source, Expires: ig.ExpiresText}
			break
		}
		if f.Suppressed == nil && base != nil && base.Fingerprints[f.Fingerprint] {
			what := "the finding was already there in " + base.Source
			if base.Run != "" {
				what += " (run " + base.Run + ")"
			}
			f.Suppressed = &Suppression{Kind: SuppressedBaseline, Reason: what, Source: base.Source}
		}
	}
	for k := range ignores {
		ig := &ignores[k]
		if !ig.expired(now) {
			continue
		}
		w := fmt.Sprintf("%s expired after %s", ig.describe(), ig.ExpiresText)
		if counted[k] > 0 {
			w += fmt.Sprintf(": %s again", plural(counted[k], "finding counts", "findings count"))
		}
		rep.Warnings = append(rep.Warnings, w+"; fix it, or renew the entry with a new expires date")
	}
	if base != nil {
		rep.Baseline = base.Source
	}
}

// Active returns the findings that count (not suppressed), in order.
func (r *Report) Active() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Suppressed == nil {
			out = append(out, f)
		}
	}
	return out
}

// Suppressed returns the findings an ignore entry or the baseline
// covers, in order.
func (r *Report) Suppressed() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Suppressed != nil {
			out = append(out, f)
		}
	}
	return out
}
