package web

import (
	"strings"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/cache/report"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/money"
)

// cacheView is the run page's prompt-cache section: the analysis of
// package cache (DESIGN §15) as tables.
type cacheView struct {
	// Err says why the analysis is missing; the rest is then empty.
	Err string
	// Source says where the reported figures come from; Header sums the run.
	Source, Header string
	Total          cacheRow
	Agents         []cacheRow
	Conversations  []cacheRow
	// MoreConversations counts conversations not listed (a large run).
	MoreConversations int
	Breaks            []breakRow
	Unstable          []*cache.Call
	Mismatches        []*cache.Call
	// Priced is set with a price table: the rows then carry money.
	Priced bool
}

type cacheRow struct {
	Name string
	cache.Totals
	Hit string
	// Cost and Saved are the row's money ("" without a price table).
	Cost, Saved string
}

type breakRow struct {
	Cause    string
	Calls    int
	Nodes    []string
	More     int
	Uncached int64
	Expected bool
}

// maxCacheRows bounds the conversations and break nodes listed.
const (
	maxCacheConversations = 24
	maxBreakNodes         = 12
)

func cacheOf(rep *cache.Report, err error) cacheView {
	if err != nil || rep == nil {
		msg := "the analysis did not run"
		if err != nil {
			msg = err.Error()
		}
		return cacheView{Err: msg}
	}
	row := func(name string, t cache.Totals) cacheRow {
		r := cacheRow{Name: name, Totals: t, Hit: pctf(t.HitRatio())}
		if m := t.Money; m != nil && m.Priced > 0 {
			r.Cost, r.Saved = money.Format(m.Spent, rep.Currency), money.Format(m.Saved, rep.Currency)
		}
		return r
	}
	v := cacheView{Source: capitalize(report.Source(rep)), Header: report.Header(rep), Total: row("whole run", rep.Total), Priced: rep.Currency != ""}
	for _, g := range rep.Agents {
		v.Agents = append(v.Agents, row(orDash(g.Name), g.Totals))
	}
	for i, g := range rep.Conversations {
		if i == maxCacheConversations {
			v.MoreConversations = len(rep.Conversations) - i
			break
		}
		name := "trunk"
		if g.Name != "" {
			name = g.Name
		}
		v.Conversations = append(v.Conversations, row(name, g.Totals))
	}
	by := map[string]*breakRow{}
	var order []string // causes in order of first appearance
	for _, c := range rep.Calls {
		if c.Unstable != nil {
			v.Unstable = append(v.Unstable, c)
		}
		if c.Mismatch != nil {
			v.Mismatches = append(v.Mismatches, c)
		}
		if !c.Analyzed || c.Break.Cause == cache.CauseTail || c.Break.Cause == cache.CauseRepeat {
			continue
		}
		b := by[c.Break.Cause]
		if b == nil {
			b = &breakRow{Cause: report.CauseName(c.Break.Cause), Expected: c.Break.Expected}
			by[c.Break.Cause] = b
			order = append(order, c.Break.Cause)
		}
		b.Calls++
		if len(b.Nodes) < maxBreakNodes {
			b.Nodes = append(b.Nodes, c.Node.ID())
		} else {
			b.More++
		}
		b.Uncached += c.Uncached()
		b.Expected = b.Expected && c.Break.Expected
	}
	for _, cause := range order {
		v.Breaks = append(v.Breaks, *by[cause])
	}
	if len(v.Unstable) > maxBreakNodes {
		v.Unstable = v.Unstable[:maxBreakNodes]
	}
	if len(v.Mismatches) > maxBreakNodes {
		v.Mismatches = v.Mismatches[:maxBreakNodes]
	}
	return v
}

// callCache is a node page's cache figures.
type callCache struct {
	*cache.Call
	Share    string
	Uncached int64
	Source   string
	Lifetime string
}

func callCacheOf(c *cache.Call, rep *cache.Report) *callCache {
	if c == nil {
		return nil
	}
	return &callCache{Call: c, Share: pctf(c.Share), Uncached: c.Uncached(), Source: capitalize(report.Source(rep)), Lifetime: graph.FormatDuration(rep.Lifetime)}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
