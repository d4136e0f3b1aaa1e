package mcpserver

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/analysis"
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

// mcpError is err's message in this server's terms: what an agent calls
// next is a tool of this server, not a command line. A database without
// runs says the user records one first and list_runs shows it then
// (before: "record a run first (`inspect demo`, …), or point --db,
// INSPECT_DB or FILE.db:RUN at an existing file", flags a client cannot
// give).
func mcpError(err error) string {
	if errors.Is(err, analysis.ErrNoRuns) {
		return "no runs recorded yet in the database inspect mcp reads: a run must be recorded first (the user runs inspect demo, inspect run PROJECT or inspect import FILE); then call list_runs to see it"
	}
	return err.Error()
}
