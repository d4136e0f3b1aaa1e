package importerstest

import "github.com/inspect-dev/inspect/importers"

// Details are the counts Totals leaves out: cache writes, research calls,
// forks, and the sub-agents by their conversation's status.
type Details struct {
	CacheWrite int64
	Research   int
	Forks      int
	Statuses   map[string]int
}

// Detail counts s's Details.
func Detail(s *importers.Session) Details {
	d := Details{Statuses: map[string]int{}}
	var walk func(c *importers.Conversation)
	walk = func(c *importers.Conversation) {
		if c == nil {
			return
		}
		for _, st := range c.Steps {
			switch {
			case st.LLM != nil:
				d.CacheWrite += st.LLM.Usage.CacheWrite
			case st.Tool != nil:
				if st.Tool.Research {
					d.Research++
				}
			case st.Fork != nil:
				d.Forks++
				for _, b := range st.Fork.Branches {
					if b.Conv != nil {
						d.Statuses[string(b.Conv.Status)]++
					}
					walk(b.Conv)
				}
			}
		}
	}
	walk(s.Trunk)
	return d
}
