package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/fleet"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/internal/when"
	"github.com/inspect-dev/inspect/money"
	"github.com/inspect-dev/inspect/record"
)

// fleetPage is the audit of many runs (`inspect fleet`): one row per
// rule × agent × source.
type fleetPage struct {
	pageData
	Fleet    *fleet.Report
	Window   string
	Rows     []fleetRow
	Sources  []string // every source in the database, for the control
	Agents   []string
	Statuses []string
	// The filters in force, as given.
	Status, Source, Agent, Since, Until, Q, Tag, Limit, Examples string
	// JSON is this page's query as the JSON of inspect fleet --format json.
	JSON string
	// Command is the inspect fleet command line giving the same audit.
	Command string
	// Counted lists the window's runs by source: "otlp 120, inspect 3".
	Counted string
	// Prev is how many runs the previous window held ("" without one).
	Prev string
}

// fleetRow is a row as the page shows it.
type fleetRow struct {
	fleet.Row
	SharePct, Change, PrevShare string
	Total, Median               string
	Examples                    []fleetExample
}

type fleetExample struct {
	Run   string
	Nodes []string
}

// fleetParams are the query parameters of /fleet, the run filters of
// inspect fleet: status (comma-separated or repeated), source, agent,
// since, until, q (the --grep text), tag (KEY=VALUE or KEY, repeated or
// comma-separated), limit, examples; format=json for the JSON.
func fleetQuery(v url.Values, now time.Time) (analysis.FleetQuery, error) {
	var q analysis.FleetQuery
	f := &q.Filter
	known := map[string]bool{}
	for _, st := range record.Statuses {
		known[string(st)] = true
	}
	for _, list := range v["status"] {
		for _, st := range strings.Split(list, ",") {
			if st = strings.TrimSpace(st); st == "" {
				continue
			}
			if !known[st] {
				return q, badRequest("unknown status %q: use one of ok, error, exhausted, cancelled, interrupted, running", st)
			}
			f.Statuses = append(f.Statuses, record.Status(st))
		}
	}
	f.Source = strings.TrimSpace(v.Get("source"))
	f.Agent = strings.TrimSpace(v.Get("agent"))
	f.Grep = strings.TrimSpace(v.Get("q"))
	for _, b := range []struct {
		name string
		t    *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		s := strings.TrimSpace(v.Get(b.name))
		if s == "" {
			continue
		}
		t, err := when.Parse(s, now)
		if err != nil {
			return q, badRequest("%s: %v", b.name, err)
		}
		*b.t = t
	}
	until := f.Until
	if until.IsZero() {
		until = now
	}
	if !f.Since.IsZero() && !f.Since.Before(until) {
		return q, badRequest("since must be before until")
	}
	for _, list := range v["tag"] {
		for _, kv := range strings.Split(list, ",") {
			if kv = strings.TrimSpace(kv); kv == "" {
				continue
			}
			k, val, _ := strings.Cut(kv, "=")
			if k == "" {
				return q, badRequest("tag %q: give KEY=VALUE, or KEY for any value", kv)
			}
			if f.Tags == nil {
				f.Tags = map[string]string{}
			}
			f.Tags[k] = val
		}
	}
	for _, b := range []struct {
		name string
		n    *int
	}{{"limit", &f.Limit}, {"examples", &q.Examples}} {
		s := strings.TrimSpace(v.Get(b.name))
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 1_000_000 {
			return q, badRequest("%s %q: give a whole number, 0 or more", b.name, s)
		}
		*b.n = n
	}
	return q, nil
}

// fleetAudit audits the runs of q, one fleet audit at a time for the whole
// server (each holds the memory of one run and the counts; a second waits
// for the first rather than doubling it).
func (s *Server) fleetAudit(ctx context.Context, q analysis.FleetQuery) (*fleet.Report, error) {
	select {
	case s.fleetSem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.fleetSem }()
	agg, err := s.analyzer().Fleet(ctx, q)
	if err != nil {
		return nil, err
	}
	return agg.Report(), nil
}

func (s *Server) fleetPage(w http.ResponseWriter, r *http.Request) error {
	s.opened(r.Context())
	v := r.URL.Query()
	q, err := fleetQuery(v, s.opts.Now())
	if err != nil {
		return err
	}
	rep, err := s.fleetAudit(r.Context(), q)
	if err != nil {
		return err
	}
	if v.Get("format") == "json" {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		return fleet.WriteJSON(w, rep)
	}
	all, err := s.analyzer().Runs(r.Context())
	if err != nil {
		return err
	}
	p := &fleetPage{pageData: s.base("fleet", "fleet"), Fleet: rep, Status: strings.Join(v["status"], ","), Source: v.Get("source"),
		Agent: v.Get("agent"), Since: v.Get("since"), Until: v.Get("until"), Q: v.Get("q"), Tag: strings.Join(v["tag"], ","),
		Limit: v.Get("limit"), Examples: v.Get("examples")}
	for _, st := range record.Statuses {
		p.Statuses = append(p.Statuses, string(st))
	}
	seen := map[string]bool{}
	for _, run := range all {
		if !seen[run.Source] {
			seen[run.Source] = true
			p.Sources = append(p.Sources, run.Source)
		}
	}
	p.Agents = sortedAgents(all)
	p.Window = fleetWindow(rep)
	if rep.PreviousRuns != nil {
		p.Prev = thousands(int64(*rep.PreviousRuns))
	}
	var counted []string
	for _, src := range p.Sources {
		if n := rep.Sources[src]; n > 0 {
			counted = append(counted, fmt.Sprintf("%s %s", src, thousands(int64(n))))
		}
	}
	p.Counted = strings.Join(counted, ", ")
	jv := url.Values{}
	args := []string{"inspect", "fleet"}
	for k, list := range v {
		if k == "format" {
			continue
		}
		for _, x := range list {
			if x = strings.TrimSpace(x); x != "" {
				jv.Add(k, x)
			}
		}
	}
	for _, k := range []string{"status", "source", "agent", "since", "until", "q", "tag", "limit", "examples"} {
		for _, x := range jv[k] {
			flag := "--" + k
			if k == "q" {
				flag = "--grep"
			}
			args = append(args, flag, shellQuote(x))
		}
	}
	jv.Set("format", "json")
	p.JSON = "/fleet?" + jv.Encode()
	p.Command = strings.Join(args, " ")
	for _, row := range rep.Rules {
		fr := fleetRow{Row: row, SharePct: sharePct(row.Share), Change: "–", Total: priceText(row.Total), Median: priceText(row.Median)}
		if row.Change != nil {
			fr.Change = fmt.Sprintf("%+.1f pts", 100**row.Change)
		}
		if row.Previous != nil {
			fr.PrevShare = fmt.Sprintf("%s runs (%s)", thousands(int64(row.Previous.Runs)), sharePct(row.Previous.Share))
		}
		for _, e := range row.Examples {
			fr.Examples = append(fr.Examples, fleetExample{Run: e.Run, Nodes: e.Nodes})
		}
		p.Rows = append(p.Rows, fr)
	}
	return s.writePage(w, "fleet", p)
}

func sharePct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

func priceText(p fleet.Price) string {
	parts := []string{graph.FormatDuration(time.Duration(p.ElapsedMS) * time.Millisecond), thousands(p.Tokens) + " tokens"}
	if p.Money != nil {
		parts = append(parts, money.Format(p.Money.Amount, p.Money.Currency))
	}
	return strings.Join(parts, " · ")
}

func fleetWindow(rep *fleet.Report) string {
	switch {
	case rep.From != "" && rep.Until != "":
		return "runs started " + rep.From + " to " + rep.Until
	case rep.From != "":
		return "runs started since " + rep.From
	case rep.Until != "":
		return "runs started before " + rep.Until
	}
	return "all runs"
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:=/+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
