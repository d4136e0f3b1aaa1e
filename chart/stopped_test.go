package chart

import (
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// TestHeader_StoppedInTheSourcesTerms: the header of an imported run that
// stopped says how, after its agent line, in its source's terms (a session
// file that ends, a trace that ends, a recorded stop); a run of our runtime
// keeps the header it had (its status says it all), and so does a run that
// finished.
func TestHeader_StoppedInTheSourcesTerms(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		format string
		status record.Status
		want   string // the third header line, "" for no line of its own
	}{
		{"claude-code", record.StatusInterrupted, "interrupted: the session file ends before this conversation finished"},
		{"codex", record.StatusCancelled, "cancelled: the session file records that it was stopped before it finished"},
		{"otlp", record.StatusInterrupted, "interrupted: the trace ends before this conversation finished"},
		{"claude-code", record.StatusOK, ""},
		{"inspect", record.StatusInterrupted, ""},
		{"", record.StatusCancelled, ""},
	} {
		g, err := graph.Build(&record.Run{ID: "r", Started: t0, Status: tt.status, Source: record.Source{Format: tt.format}},
			[]*record.Node{{Seq: 1, Kind: record.KindUser, Agent: "main", Started: t0, Ended: t0, Status: record.StatusOK, Text: "go"}})
		if err != nil {
			t.Fatal(err)
		}
		h := Lay(g, Options{}).Chart(Labels{}).Header()
		got := h[2]
		if strings.HasPrefix(got, "tokens ") {
			got = ""
		}
		if got != tt.want || !strings.HasPrefix(h[1], "agent ") {
			t.Errorf("%s %s: header %q, want %q after the agent line", tt.format, tt.status, h, tt.want)
		}
	}
}
