package findings

import (
	"strings"
	"testing"
	"time"
)

func TestSuppress(t *testing.T) {
	day := func(s string) time.Time { d, _ := time.Parse("2006-01-02", s); return d }
	rep := &Report{Findings: []Finding{
		{Rule: "fork.uneven", Agent: "analyst", Fingerprint: "aaaaaaaaaaaaaaaa", Severity: Warning},
		{Rule: "fork.uneven", Agent: "planner", Fingerprint: "bbbbbbbbbbbbbbbb", Severity: Warning},
		{Rule: "handoff.loop", Agent: "analyst", Fingerprint: "cccccccccccccccc", Severity: Error},
		{Rule: "branch.failed", Agent: "analyst", Fingerprint: "dddddddddddddddd", Severity: Error},
		{Rule: "join.repeat", Agent: "analyst", Fingerprint: "eeeeeeeeeeeeeeee", Severity: Warning},
	}}
	ignores := []Ignore{
		{Rule: "fork.uneven", Agent: "analyst", Reason: "slow source", Source: "c.yaml:2"},
		// ends after 2026-06-30: still holds on that day
		{Rule: "handoff.loop", Fingerprint: "cccccccccccccccc", Reason: "accepted", Expires: day("2026-07-01"), ExpiresText: "2026-06-30", Source: "c.yaml:5"},
		// expired: suppresses nothing, and says so
		{Rule: "branch.failed", Reason: "old", Expires: day("2020-01-02"), ExpiresText: "2020-01-01", Source: "c.yaml:9"},
		{Rule: "join.repeat", Fingerprint: "ffffffffffffffff", Reason: "another finding", Source: "c.yaml:12"},
	}
	base := &Baseline{Source: "base.json", Run: "r0", Fingerprints: map[string]bool{"dddddddddddddddd": true, "bbbbbbbbbbbbbbbb": true}}
	suppress(rep, ignores, base, time.Date(2026, 6, 30, 23, 59, 0, 0, time.UTC))

	want := []string{"ignored c.yaml:2", "baseline base.json", "ignored c.yaml:5", "baseline base.json", ""}
	for i, f := range rep.Findings {
		got := ""
		if f.Suppressed != nil {
			got = f.Suppressed.Kind + " " + f.Suppressed.Source
		}
		if got != want[i] {
			t.Errorf("finding %d (%s/%s) suppressed = %q, want %q", i, f.Rule, f.Agent, got, want[i])
		}
	}
	if rep.Count(Warning) != 1 || rep.Count(Error) != 0 {
		t.Errorf("Count = %d warnings+, %d errors; want only join.repeat counted", rep.Count(Warning), rep.Count(Error))
	}
	if len(rep.Warnings) != 1 || !strings.HasPrefix(rep.Warnings[0], "ignore entry c.yaml:9 (branch.failed) expired after 2020-01-01: 1 finding counts again") {
		t.Errorf("Warnings = %q", rep.Warnings)
	}
	if rep.Baseline != "base.json" || !strings.Contains(rep.Findings[1].Suppressed.Reason, "base.json (run r0)") {
		t.Errorf("baseline = %q, reason %q", rep.Baseline, rep.Findings[1].Suppressed.Reason)
	}
	// the next day the dated entry no longer holds
	rep2 := &Report{Findings: []Finding{{Rule: "handoff.loop", Fingerprint: "cccccccccccccccc"}}}
	suppress(rep2, ignores, nil, time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC))
	if rep2.Findings[0].Suppressed != nil || len(rep2.Warnings) != 2 {
		t.Errorf("after expiry: %+v, warnings %q", rep2.Findings[0].Suppressed, rep2.Warnings)
	}
}

func TestReadBaseline_Bad(t *testing.T) {
	for _, s := range []string{"", "[1,2]", `{"run": "x"}`, `{"version": "2.1.0"}`, "not json"} {
		if b, err := ReadBaseline(strings.NewReader(s), "b.json"); err == nil {
			t.Errorf("ReadBaseline(%q) = %+v, want an error", s, b)
		}
	}
}
