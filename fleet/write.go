package fleet

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/internal/termsafe"
	"github.com/inspect-dev/inspect/money"
)

// WriteJSON writes rep as docs/fleet-json.md documents it.
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

func change(r Row) string {
	if r.Change == nil {
		return "–"
	}
	return fmt.Sprintf("%+.1f pts", 100**r.Change)
}

func priceText(p Price) string {
	parts := []string{graph.FormatDuration(time.Duration(p.ElapsedMS) * time.Millisecond), fmt.Sprintf("%d tokens", p.Tokens)}
	if p.Money != nil {
		parts = append(parts, money.Format(p.Money.Amount, p.Money.Currency))
	}
	return strings.Join(parts, " · ")
}

func examples(r Row) string {
	var out []string
	for _, e := range r.Examples {
		out = append(out, e.Run+" "+strings.Join(e.Nodes, ","))
	}
	return strings.Join(out, "; ")
}

func header(rep *Report) string {
	win := "all runs"
	switch {
	case rep.From != "" && rep.Until != "":
		win = "runs started " + rep.From + " to " + rep.Until
	case rep.From != "":
		win = "runs started since " + rep.From
	case rep.Until != "":
		win = "runs started before " + rep.Until
	}
	s := fmt.Sprintf("inspect fleet · %d runs audited (%s)", rep.Runs, win)
	if rep.PreviousRuns != nil {
		s += fmt.Sprintf(" · previous window: %d runs", *rep.PreviousRuns)
	}
	return s
}

// WriteText writes rep for a terminal: one block per row.
func WriteText(w io.Writer, rep *Report) error {
	var b strings.Builder
	b.WriteString(header(rep) + "\n")
	if len(rep.Rules) == 0 {
		b.WriteString("\nNo topology mistakes found in these runs.\n")
	}
	for _, r := range rep.Rules {
		fmt.Fprintf(&b, "\n%s · agent %s · %s: %d of %d runs (%s), change %s\n", r.Rule, termsafe.String(r.Agent), termsafe.String(r.Source),
			r.Runs, rep.Runs, pct(r.Share), change(r))
		fmt.Fprintf(&b, "  %s (%s) · %d findings\n", r.Name, r.Severity, r.Findings)
		if r.Runs > 0 {
			fmt.Fprintf(&b, "  price: total %s · median run %s\n", priceText(r.Total), priceText(r.Median))
			fmt.Fprintf(&b, "  e.g. %s\n", termsafe.String(examples(r)))
		}
		if r.Previous != nil {
			fmt.Fprintf(&b, "  previous window: %d runs (%s)\n", r.Previous.Runs, pct(r.Previous.Share))
		}
	}
	for _, f := range rep.Failed {
		fmt.Fprintf(&b, "\nnot audited: run %s: %s\n", f.Run, termsafe.String(f.Error))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes rep as a Markdown table, for a PR comment.
func WriteMarkdown(w io.Writer, rep *Report) error {
	var b strings.Builder
	b.WriteString("## " + termsafe.Markdown(header(rep)) + "\n\n")
	if len(rep.Rules) == 0 {
		b.WriteString("No topology mistakes found in these runs.\n")
	} else {
		b.WriteString("| rule | agent | source | runs | share | change | total price | median price | examples |\n")
		b.WriteString("| --- | --- | --- | ---: | ---: | ---: | --- | --- | --- |\n")
		for _, r := range rep.Rules {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %d | %s | %s | %s | %s | %s |\n", r.Rule, cell(r.Agent), cell(r.Source), r.Runs, pct(r.Share), change(r),
				priceText(r.Total), priceText(r.Median), cell(examples(r)))
		}
	}
	for _, f := range rep.Failed {
		fmt.Fprintf(&b, "\nNot audited: run %s: %s\n", cell(f.Run), cell(f.Error))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func cell(s string) string { return strings.ReplaceAll(termsafe.Markdown(s), "|", `\|`) }
