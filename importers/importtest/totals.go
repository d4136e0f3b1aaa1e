package importtest

import (
	"time"

	"github.com/inspect-dev/inspect/importers"
)

// Totals are the figures an importer test compares with the same figures
// counted independently from the raw files.
type Totals struct {
	LLM        int // model responses
	Tools      int // tool calls (delegation calls are branches, not tools)
	Research   int // tool calls marked research
	Forks      int
	Branches   int // sub-agents
	In, Out    int64
	Cached     int64
	CacheWrite int64
	// Overlaps counts the pairs of sibling branches whose windows
	// [Conv.Started, Conv.Ended) overlap (an unfinished branch runs on).
	Overlaps int
	// Statuses counts the branches by their conversation's status.
	Statuses map[string]int
}

// Count walks the session's tree.
func Count(s *importers.Session) Totals {
	t := Totals{Statuses: map[string]int{}}
	var conv func(c *importers.Conversation)
	conv = func(c *importers.Conversation) {
		if c == nil {
			return
		}
		for _, st := range c.Steps {
			switch {
			case st.LLM != nil:
				t.LLM++
				u := st.LLM.Usage
				t.In += u.In
				t.Out += u.Out
				t.Cached += u.Cached
				t.CacheWrite += u.CacheWrite
			case st.Tool != nil:
				t.Tools++
				if st.Tool.Research {
					t.Research++
				}
			case st.Fork != nil:
				t.Forks++
				bs := st.Fork.Branches
				t.Branches += len(bs)
				for i, b := range bs {
					if b.Conv != nil {
						t.Statuses[string(b.Conv.Status)]++
					}
					for _, o := range bs[i+1:] {
						if b.Conv != nil && o.Conv != nil && Overlap(b.Conv.Started, b.Conv.Ended, o.Conv.Started, o.Conv.Ended) {
							t.Overlaps++
						}
					}
					conv(b.Conv)
				}
			}
		}
	}
	conv(s.Trunk)
	return t
}

// Overlap reports whether [a0, a1) and [b0, b1) overlap; a zero end is open.
func Overlap(a0, a1, b0, b1 time.Time) bool {
	aEndsAfterB := a1.IsZero() || a1.After(b0)
	bEndsAfterA := b1.IsZero() || b1.After(a0)
	return aEndsAfterB && bEndsAfterA
}
