package findings_test

import (
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/record"
)

// TestAudit_StoppedNoticeFitsTheSource: the notice of a stopped run says
// what its source shows. Our runtime's interrupted run lost its process
// and its cancelled one was stopped by Ctrl-C; an imported session whose
// file ends mid-turn says so, a trace that ends says the trace does, a
// session that records a cancellation says that — none of them that a
// process died or that someone pressed Ctrl-C.
func TestAudit_StoppedNoticeFitsTheSource(t *testing.T) {
	for _, tt := range []struct {
		format string
		status record.Status
		want   string
	}{
		{"", record.StatusInterrupted, "this run was interrupted: the process recording it died (killed, crashed, its terminal closed) before it finished. "},
		{"inspect", record.StatusCancelled, "this run was cancelled (Ctrl-C) before it finished. "},
		{"claude-code", record.StatusInterrupted, "this run was interrupted: the session file ends before this conversation finished. "},
		{"kimi-cli", record.StatusCancelled, "this run was cancelled: the session file records that it was stopped before it finished. "},
		{"otlp", record.StatusInterrupted, "this run was interrupted: the trace ends before this conversation finished. "},
		{"openai-agents", record.StatusCancelled, "this run was cancelled: the trace records that it was stopped before it finished. "},
	} {
		g := stoppedRun(t, tt.status, tt.status == record.StatusCancelled)
		g.Source = record.Source{Format: tt.format}
		rep, err := (&findings.Config{Rules: rules.All}).Audit(g)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(rep.Notice, tt.want) {
			t.Errorf("%s %s: notice %q, want it to start %q", tt.format, tt.status, rep.Notice, tt.want)
		}
		if !g.Source.IsInspect() && (strings.Contains(rep.Notice, "process") || strings.Contains(rep.Notice, "Ctrl-C") || strings.Contains(rep.Notice, "died")) {
			t.Errorf("%s %s: the notice of an imported run speaks of a process or a key: %q", tt.format, tt.status, rep.Notice)
		}
	}
}
