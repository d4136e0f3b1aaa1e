package graph

import (
	"fmt"
	"time"
)

// FormatDuration prints a duration the way every inspect output does
// (graph, audit, diff, runs): 950ms, 1.2s, 2m03s; a negative one as 0ms.
func FormatDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0ms"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		m := int(d / time.Minute)
		s := int((d % time.Minute) / time.Second)
		return fmt.Sprintf("%dm%02ds", m, s)
	}
}
