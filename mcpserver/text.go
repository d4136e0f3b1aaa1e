package mcpserver

import (
	"fmt"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/internal/termtable"
)

// runsText is list_runs' text: the table `inspect runs` prints.
func runsText(l *RunList) string {
	switch {
	case len(l.Runs) == 0 && l.Filtered:
		return "No run matches; list_runs without filters lists them all.\n"
	case len(l.Runs) == 0:
		return "No runs recorded yet.\n"
	}
	var b strings.Builder
	tab := termtable.New("ID", "STARTED", "STATUS", "AGENTS", "ELAPSED", "TOKENS IN/OUT", "TASK")
	for _, r := range l.Runs {
		started := r.Started
		if t, err := time.Parse(time.RFC3339Nano, r.Started); err == nil {
			started = t.Local().Format("2006-01-02 15:04:05")
		}
		task := ""
		if len(r.Tasks) > 0 {
			task = termtable.Truncate(r.Tasks[0], 40)
		}
		tab.Row(r.ID, started, r.Status, strings.Join(r.Agents, ","),
			graph.FormatDuration(time.Duration(r.ElapsedMS)*time.Millisecond), fmt.Sprintf("%d/%d", r.TokensIn, r.TokensOut), task)
	}
	tab.Fprint(&b)
	return b.String()
}
