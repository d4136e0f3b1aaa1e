package fleet

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/money"
)

var day = time.Date(2026, 5, 10, 0, 0, 0, 0, time.UTC)

func finding(rule, agent string, ms, tok int64, nodes ...string) findings.Finding {
	return findings.Finding{Rule: rule, Name: rule + " name", Severity: findings.Warning, Agent: agent, Nodes: nodes,
		Price: findings.Price{ElapsedMS: ms, TokensIn: tok}}
}

func audit(fs ...findings.Finding) *findings.Report { return &findings.Report{Findings: fs} }

// Rows per rule × agent × source: runs affected, share, total and median
// per affected run, examples; the previous window's share and the change.
func TestFleet_Rows(t *testing.T) {
	f := New(Window{From: day, Until: day.Add(24 * time.Hour)}, 2)
	if r := f.Range(); !r.From.Equal(day.Add(-24*time.Hour)) || !r.Until.Equal(day.Add(24*time.Hour)) {
		t.Fatalf("range %v", r)
	}
	at := func(h int) time.Time { return day.Add(time.Duration(h) * time.Hour) }
	// the window: 4 runs; fanout.missed in 3 of them (agent main), twice in one
	f.Add(Run{ID: "r1", Source: "otlp", Started: at(1)}, audit(finding("fanout.missed", "main", 1000, 10, "n2", "n3"), finding("fanout.missed", "main", 500, 5, "n7")))
	f.Add(Run{ID: "r2", Source: "otlp", Started: at(2)}, audit(finding("fanout.missed", "main", 4000, 40, "n2")))
	f.Add(Run{ID: "r3", Source: "otlp", Started: at(3)}, audit(finding("fanout.missed", "main", 2000, 20, "n4"), finding("handoff.loop", "triage", 300, 3, "n9")))
	sup := finding("handoff.loop", "triage", 1, 1)
	sup.Suppressed = &findings.Suppression{Reason: "known"}
	f.Add(Run{ID: "r4", Source: "inspect", Started: at(4)}, audit(sup))
	// the previous window: 2 runs, fanout.missed in both
	f.Add(Run{ID: "p1", Source: "otlp", Started: at(-5)}, audit(finding("fanout.missed", "main", 1, 1)))
	f.Add(Run{ID: "p2", Source: "otlp", Started: at(-6)}, audit(finding("fanout.missed", "main", 1, 1)))
	// outside both: not counted
	f.Add(Run{ID: "old", Source: "otlp", Started: at(-30)}, audit(finding("fanout.missed", "main", 1, 1)))
	f.Add(Run{ID: "new", Source: "otlp", Started: at(24)}, audit(finding("fanout.missed", "main", 1, 1)))

	rep := f.Report()
	if rep.Runs != 4 || rep.PreviousRuns == nil || *rep.PreviousRuns != 2 || rep.Sources["otlp"] != 3 || rep.Sources["inspect"] != 1 {
		t.Fatalf("runs %d previous %v sources %v", rep.Runs, rep.PreviousRuns, rep.Sources)
	}
	if len(rep.Rules) != 2 {
		t.Fatalf("%d rows, want 2 (the suppressed finding is not counted): %+v", len(rep.Rules), rep.Rules)
	}
	r := rep.Rules[0]
	if r.Rule != "fanout.missed" || r.Agent != "main" || r.Source != "otlp" || r.Runs != 3 || r.Findings != 4 || r.Share != 0.75 {
		t.Fatalf("row %+v", r)
	}
	// per run: 1500ms/15, 4000ms/40, 2000ms/20
	if r.Total.ElapsedMS != 7500 || r.Total.Tokens != 75 || r.Median.ElapsedMS != 2000 || r.Median.Tokens != 20 {
		t.Errorf("total %+v median %+v", r.Total, r.Median)
	}
	if len(r.Examples) != 2 || r.Examples[0].Run != "r1" || strings.Join(r.Examples[0].Nodes, ",") != "n2,n3,n7" {
		t.Errorf("examples %+v", r.Examples)
	}
	if r.Previous == nil || r.Previous.Runs != 2 || r.Previous.Share != 1 || r.Change == nil || *r.Change != -0.25 {
		t.Errorf("previous %+v change %v", r.Previous, r.Change)
	}
	if got := f.Rate("fanout.missed"); got != 0.75 {
		t.Errorf("rate %v", got)
	}
	if got := f.Rate("handoff.loop"); got != 0.25 {
		t.Errorf("handoff.loop rate %v (the suppressed one counts not)", got)
	}
	h := rep.Rules[1]
	if h.Rule != "handoff.loop" || h.Runs != 1 || h.Previous.Runs != 0 || *h.Change != 0.25 {
		t.Errorf("handoff row %+v", h)
	}
}

// Money: summed per run, the median of the runs priced.
func TestFleet_Money(t *testing.T) {
	f := New(Window{}, 0)
	for i, amt := range []float64{0.5, 2, 1} {
		fd := finding("cache.unstable-prefix", "main", 10, 100)
		fd.Money = &money.Spend{Currency: "USD", Amount: amt}
		f.Add(Run{ID: string(rune('a' + i)), Source: "otlp", Started: day}, audit(fd))
	}
	rep := f.Report()
	r := rep.Rules[0]
	if r.Total.Money == nil || r.Total.Money.Amount != 3.5 || r.Median.Money.Amount != 1 || r.Total.Money.Runs != 3 {
		t.Fatalf("money %+v %+v", r.Total.Money, r.Median.Money)
	}
	if rep.PreviousRuns != nil || r.Previous != nil || r.Change != nil {
		t.Errorf("no window, yet a previous one: %+v", r)
	}
}

// The JSON has the documented shape; text and Markdown name each row.
func TestFleet_Formats(t *testing.T) {
	f := New(Window{}, 0)
	f.Add(Run{ID: "r1", Source: "otlp", Started: day}, audit(finding("fanout.missed", "ma\x1b[2Jin", 1000, 10, "n2")))
	f.Fail("r9", bytes.ErrTooLarge)
	rep := f.Report()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs  int `json:"runs"`
		Rules []struct {
			Rule, Agent, Source string
			Runs                int
			Share               float64
			Total               struct {
				ElapsedMS int64 `json:"elapsed_ms"`
			}
			Examples []struct{ Run string }
		} `json:"rules"`
		Failed []Failed `json:"failed"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Runs != 1 || len(doc.Rules) != 1 || doc.Rules[0].Rule != "fanout.missed" || doc.Rules[0].Runs != 1 || doc.Rules[0].Share != 1 ||
		doc.Rules[0].Total.ElapsedMS != 1000 || doc.Rules[0].Examples[0].Run != "r1" || len(doc.Failed) != 1 {
		t.Fatalf("json:\n%s", buf.String())
	}
	for _, write := range []func(*bytes.Buffer) error{
		func(b *bytes.Buffer) error { return WriteText(b, rep) },
		func(b *bytes.Buffer) error { return WriteMarkdown(b, rep) },
	} {
		buf.Reset()
		if err := write(&buf); err != nil {
			t.Fatal(err)
		}
		s := buf.String()
		if !strings.Contains(s, "fanout.missed") || !strings.Contains(s, "100.0%") || !strings.Contains(s, "r1") || !strings.Contains(s, "r9") {
			t.Errorf("missing a part:\n%s", s)
		}
		if strings.Contains(s, "\x1b") {
			t.Errorf("a raw escape reached the output:\n%q", s)
		}
	}
}
