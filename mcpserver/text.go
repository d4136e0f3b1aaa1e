package mcpserver

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/inspect-dev/inspect/graph"
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
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTARTED\tSTATUS\tAGENTS\tELAPSED\tTOKENS IN/OUT\tTASK")
	for _, r := range l.Runs {
		started := r.Started
		if t, err := time.Parse(time.RFC3339Nano, r.Started); err == nil {
			started = t.Local().Format("2006-01-02 15:04:05")
		}
		task := ""
		if len(r.Tasks) > 0 {
			task = truncate(r.Tasks[0], 40)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n", r.ID, started, r.Status, strings.Join(r.Agents, ","),
			graph.FormatDuration(time.Duration(r.ElapsedMS)*time.Millisecond), r.TokensIn, r.TokensOut, task)
	}
	tw.Flush()
	return b.String()
}

// truncate shortens s to n runes with an ellipsis, on one line.
func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
