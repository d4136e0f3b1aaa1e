// Package when reads the points in time and ages that run filters take
// (inspect runs --since, inspect prune --older-than, the MCP list_runs
// tool): a date, an RFC 3339 time, or an age such as 7d or 36h.
package when

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseAge reads a duration that also takes days: 90m, 36h, 7d, 2w.
func ParseAge(s string) (time.Duration, error) {
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			if k, err := strconv.ParseFloat(n, 64); err == nil && k >= 0 {
				return time.Duration(k * float64(unit)), nil
			}
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration such as 36h, 7d or 2w", s)
	}
	return d, nil
}

// Parse reads a point in time: a date (2025-05-01, local midnight), a
// date and time (RFC 3339), or an age before now (7d, 36h).
func Parse(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	if d, err := ParseAge(s); err == nil {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither a date (2025-05-01), a time (2025-05-01T14:00:00Z) nor an age (7d, 36h)", s)
}
