package timeline_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/timeline"
)

// TestFprint_FailedLegend: the legend says what its × cells are by their
// lanes' status — a cancelled lane's "cancelled", not "failed" (before:
// always "failed").
func TestFprint_FailedLegend(t *testing.T) {
	at := func(s int) time.Time { return graphtest.Start.Add(time.Duration(s) * time.Second) }
	lane := func(id string, st record.Status) *timeline.Lane {
		return &timeline.Lane{ID: id, Title: id, Name: id, Status: st, Start: at(0), End: at(4),
			Bars: []timeline.Bar{{Kind: timeline.BarModel, Box: "n1", Start: at(0), End: at(4), Failed: true, Nodes: 1}}}
	}
	for _, tt := range []struct {
		lanes []*timeline.Lane
		want  string
	}{
		{[]*timeline.Lane{lane("b1", record.StatusCancelled)}, "× cancelled"},
		{[]*timeline.Lane{lane("b1", record.StatusError)}, "× failed"},
		{[]*timeline.Lane{lane("b1", record.StatusInterrupted), lane("b2", record.StatusError)}, "× failed or interrupted"},
		{[]*timeline.Lane{lane("b1", record.StatusOK)}, "× failed"},
	} {
		tl := &timeline.Timeline{Run: &graph.Run{Run: &record.Run{ID: "r1", Status: record.StatusError}}, Start: at(0), End: at(4), Lanes: tt.lanes}
		var out bytes.Buffer
		if err := timeline.Fprint(&out, tl, timeline.Options{Width: 100}); err != nil {
			t.Fatal(err)
		}
		legend := strings.TrimSpace(regexp.MustCompile(`× [a-z ]+`).FindString(out.String()))
		if legend != tt.want {
			t.Errorf("lanes %s: legend %q, want %q\n%s", tt.lanes[0].Status, legend, tt.want, out.String())
		}
	}
}
