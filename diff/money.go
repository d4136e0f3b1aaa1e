package diff

import (
	"fmt"

	"github.com/inspect-dev/inspect/money"
)

// MoneyDelta is what the model calls cost in both runs, at the price
// table of the audits (money.Run).
type MoneyDelta struct {
	Currency string `json:"currency"`
	// Base and New are the amounts; Change is New − Base (rounded to a
	// millionth).
	Base   float64 `json:"base"`
	New    float64 `json:"new"`
	Change float64 `json:"change"`
	// Percent is Change relative to Base; nil when Base is 0.
	Percent *float64 `json:"percent"`
	// Partial is true when a side had calls of a model without a price
	// (its amount leaves them out).
	Partial bool `json:"partial"`
}

func newMoneyDelta(currency string, base, new float64, partial bool) *MoneyDelta {
	d := &MoneyDelta{Currency: currency, Base: base, New: new, Change: money.Round(new - base), Partial: partial}
	if base != 0 {
		p := (new - base) / base * 100
		d.Percent = &p
	}
	return d
}

// moneyDelta compares two runs' costs; nil unless both were priced in the
// same currency.
func moneyDelta(base, new *money.RunCost) *MoneyDelta {
	if base == nil || new == nil || base.Currency != new.Currency {
		return nil
	}
	return newMoneyDelta(new.Currency, base.Total.Amount, new.Total.Amount, base.Partial || new.Partial)
}

// agentMoney compares one agent's cost in two priced runs (0 where it did
// not run).
func agentMoney(base, new *money.RunCost, agent string) *MoneyDelta {
	var b, n float64
	partial := false
	if a := base.Agent(agent); a != nil {
		b, partial = a.Amount.Amount, a.Unpriced > 0
	}
	if a := new.Agent(agent); a != nil {
		n, partial = a.Amount.Amount, partial || a.Unpriced > 0
	}
	return newMoneyDelta(new.Currency, b, n, partial)
}

func (d *MoneyDelta) cell(v float64) string {
	s := money.Format(v, d.Currency)
	if d.Partial {
		s += " (partial)"
	}
	return s
}

// Cell is the amount as a per-agent table shows it: the new amount and
// the change, "$0.0123 (+$0.0042)"; "-" when there is none (nil).
func (d *MoneyDelta) Cell() string {
	if d == nil {
		return "-"
	}
	return d.cell(d.New) + " (" + d.signed() + ")"
}

// signed is the change with its sign: "+$0.0042".
func (d *MoneyDelta) signed() string {
	s := money.Format(d.Change, d.Currency)
	if d.Change > 0 {
		s = "+" + s
	}
	return s
}

// Short is "+$0.0042 (+12.5%)", or the change alone when the base is 0.
func (d *MoneyDelta) Short() string {
	if d.Percent == nil {
		return d.signed()
	}
	return fmt.Sprintf("%s (%+.1f%%)", d.signed(), *d.Percent)
}
