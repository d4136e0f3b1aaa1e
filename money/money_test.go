package money

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// table is the price table the tests use; the figures below are worked
// out by hand from it.
func table() *Table {
	return &Table{Prices: []Price{
		{Model: "gpt-4.1-mini", Rates: Rates{Input: 0.40, CachedInput: 0.10, HasCachedInput: true, Output: 1.60}},
		{Model: "claude-sonnet-4*", Rates: Rates{Input: 3, CachedInput: 0.30, HasCachedInput: true, CacheWrite: 3.75, HasCacheWrite: true, Output: 15}},
		{Model: "claude-*", Rates: Rates{Input: 100, Output: 100}}, // shorter pattern: never chosen over claude-sonnet-4*
		{Model: "plain", Rates: Rates{Input: 2, Output: 8}},
	}}
}

func llm(seq int64, agent, model string, u record.Usage) *record.Node {
	at := time.Unix(1000+seq, 0)
	return &record.Node{Seq: seq, Kind: record.KindLLM, Agent: agent, Started: at, Ended: at.Add(time.Second), Status: record.StatusOK,
		LLM: &record.LLM{Model: model, Usage: u}}
}

func TestRates_Cost(t *testing.T) {
	tab := table()
	tests := []struct {
		name  string
		model string
		u     record.Usage
		want  float64
	}{
		// 1000×0.40 + 100×1.60 = 400 + 160 = 560 per million
		{"uncached", "gpt-4.1-mini", record.Usage{In: 1000, Out: 100}, 0.000560},
		// cached not reported: all 1000 in at the input rate
		{"cached unreported", "gpt-4.1-mini", record.Usage{In: 1000, Out: 100, Cached: 900}, 0.000560},
		// (2000−1500)×0.40 + 1500×0.10 + 50×1.60 = 200 + 150 + 80 = 430
		{"cached", "gpt-4.1-mini", record.Usage{In: 2000, Cached: 1500, CachedReported: true, Out: 50}, 0.000430},
		// (10000−4000−2000)×3 + 4000×0.30 + 2000×3.75 + 500×15 = 12000 + 1200 + 7500 + 7500 = 28200
		{"cache write", "claude-sonnet-4-5-20250929", record.Usage{In: 10000, Cached: 4000, CachedReported: true, CacheWrite: 2000, CacheWriteReported: true, Out: 500}, 0.028200},
		// no cached rate: cache reads at the input rate, 1000×2 + 100×8 = 2800
		{"no cached rate", "plain", record.Usage{In: 1000, Cached: 500, CachedReported: true, Out: 100}, 0.002800},
		// impossible counts (cached > in) never make a negative price: 0×0.40 + 50×0.10 + 0 = 5
		{"impossible", "gpt-4.1-mini", record.Usage{In: 10, Cached: 50, CachedReported: true}, 0.000005},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := tab.Lookup(tt.model)
			if !ok {
				t.Fatalf("Lookup(%q) found nothing", tt.model)
			}
			if got := Round(p.Rates.Cost(tt.u)); got != tt.want {
				t.Errorf("Cost = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTable_Lookup(t *testing.T) {
	tab := table()
	for model, want := range map[string]string{
		"gpt-4.1-mini":      "gpt-4.1-mini",
		"claude-sonnet-4-5": "claude-sonnet-4*",
		"claude-opus-4":     "claude-*",
		"gpt-4.1":           "",
		"":                  "",
	} {
		p, ok := tab.Lookup(model)
		if ok != (want != "") || p.Model != want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", model, p.Model, ok, want)
		}
	}
	if _, ok := (*Table)(nil).Lookup("gpt-4.1-mini"); ok {
		t.Error("a nil table priced a model")
	}
}

func TestRun(t *testing.T) {
	g, err := graph.Build(&record.Run{ID: "r1", Status: record.StatusOK}, []*record.Node{
		llm(1, "analyst", "gpt-4.1-mini", record.Usage{In: 1000, Out: 100}),
		llm(2, "analyst", "gpt-4.1-mini", record.Usage{In: 2000, Cached: 1500, CachedReported: true, Out: 50}),
		llm(3, "researcher", "claude-sonnet-4-5", record.Usage{In: 10000, Cached: 4000, CachedReported: true, CacheWrite: 2000, CacheWriteReported: true, Out: 500}),
		llm(4, "researcher", "mystery", record.Usage{In: 100, Out: 10}),
		{Seq: 5, Kind: record.KindTool, Agent: "researcher", Status: record.StatusOK, Tool: &record.Tool{Name: "read_file"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := Run(nil, g); c != nil {
		t.Fatalf("Run(nil) = %+v; without a table there is no money", c)
	}
	c := Run(table(), g)
	// 560 + 430 + 28200 = 29190 per million; the mystery call is unpriced
	if c.Total.Amount != 0.02919 || !c.Partial || c.Total.Unpriced != 1 || c.Total.Calls != 4 {
		t.Errorf("Total = %+v partial %v; want 0.02919 for 3 of 4 calls", c.Total, c.Partial)
	}
	if c.Total.TokensIn != 13100 || c.Total.Cached != 5500 || c.Total.CacheWrite != 2000 || c.Total.TokensOut != 660 {
		t.Errorf("Total usage = %+v", c.Total.Usage)
	}
	if a := c.Agent("analyst"); a == nil || a.Amount.Amount != 0.00099 || a.Calls != 2 || a.Unpriced != 0 {
		t.Errorf("analyst = %+v, want 0.00099 over 2 calls", a)
	}
	if a := c.Agent("researcher"); a == nil || a.Amount.Amount != 0.0282 || a.Calls != 2 || a.Unpriced != 1 {
		t.Errorf("researcher = %+v, want 0.0282 with 1 unpriced call", a)
	}
	if len(c.Agents) != 2 || c.Agents[0].Agent != "analyst" {
		t.Errorf("agents = %+v, want analyst then researcher", c.Agents)
	}
	if len(c.Models) != 3 || c.Models[0].Model != "claude-sonnet-4-5" || c.Models[0].Pattern != "claude-sonnet-4*" || c.Models[2].Priced {
		t.Errorf("models = %+v", c.Models)
	}
	if got, want := c.Summary(), "$0.0292 for 3 of 4 model calls; no price for mystery (1 call)"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}

func TestFormat(t *testing.T) {
	for _, tt := range []struct {
		amount   float64
		currency string
		want     string
	}{
		{0.02919, "", "$0.0292"},
		{0.00004, "USD", "$0.0000"},
		{12.345, "usd", "$12.35"}, // 12.345 is 12.3449… in binary
		{1.5, "EUR", "1.50 EUR"},
		{-0.25, "", "-$0.2500"},
		{-0.00001, "", "$0.0000"},
	} {
		if got := Format(tt.amount, tt.currency); got != tt.want {
			t.Errorf("Format(%v, %q) = %q, want %q", tt.amount, tt.currency, got, tt.want)
		}
	}
}

func TestPriceTokens(t *testing.T) {
	// 1402 in, 96 out at gpt-4.1-mini: 1402×0.40 + 96×1.60 = 560.8 + 153.6 = 714.4 per million
	s, ok := PriceTokens(table(), "gpt-4.1-mini", Tokens{In: 1402, Out: 96})
	if !ok || s.Amount != 0.000714 || s.Model != "gpt-4.1-mini" || s.Currency != "USD" {
		t.Errorf("PriceTokens = %+v, %v; want 0.000714 (rounded to a millionth)", s, ok)
	}
	if _, ok := PriceTokens(table(), "unknown", Tokens{In: 10}); ok {
		t.Error("an unpriced model was priced")
	}
	if _, ok := PriceTokens(table(), "gpt-4.1-mini", Tokens{}); ok {
		t.Error("a time-only price got money")
	}
	if _, ok := PriceTokens(nil, "gpt-4.1-mini", Tokens{In: 10}); ok {
		t.Error("no table, yet money")
	}
}

func TestRates_JSON(t *testing.T) {
	b, err := json.Marshal(Rates{Input: 2, Output: 8})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"input":2,"cached_input":2,"cache_write":2,"output":8}`; got != want {
		t.Errorf("JSON = %s, want %s (rates left out are the input rate, never 0)", got, want)
	}
}

func TestRates_SavedAndDiscount(t *testing.T) {
	tab := table()
	tests := []struct {
		name     string
		model    string
		u        record.Usage
		saved    float64
		discount int64 // tokens given to Discount
		wantDisc float64
	}{
		// 1500 reads × (0.40 − 0.10) = 450 per million; 1000 tokens × 0.30 = 300
		{"reads", "gpt-4.1-mini", record.Usage{In: 2000, Cached: 1500, CachedReported: true}, 0.000450, 1000, 0.000300},
		// reads not reported: nothing measured saved
		{"unreported", "gpt-4.1-mini", record.Usage{In: 2000, Cached: 1500}, 0, 0, 0},
		// 4000 × (3 − 0.30) − 2000 × (3.75 − 3) = 10800 − 1500 = 9300; 100 tokens × 2.70 = 270
		{"reads and writes", "claude-sonnet-4-5", record.Usage{In: 10000, Cached: 4000, CachedReported: true, CacheWrite: 2000, CacheWriteReported: true}, 0.009300, 100, 0.000270},
		// writes only: −8000 × 0.75 = −6000, the cache cost money on this call
		{"writes only", "claude-sonnet-4-5", record.Usage{In: 10000, CacheWrite: 8000, CacheWriteReported: true}, -0.006000, 0, 0},
		// no cheaper rate for reads: nothing saved, no discount
		{"no cached rate", "plain", record.Usage{In: 1000, Cached: 500, CachedReported: true}, 0, 500, 0},
		// negative token counts never make a discount
		{"negative tokens", "gpt-4.1-mini", record.Usage{}, 0, -10, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := tab.Lookup(tt.model)
			if !ok {
				t.Fatalf("Lookup(%q) found nothing", tt.model)
			}
			if got := Round(p.Rates.Saved(tt.u)); got != tt.saved {
				t.Errorf("Saved = %v, want %v", got, tt.saved)
			}
			if got := Round(p.Rates.Discount(tt.discount)); got != tt.wantDisc {
				t.Errorf("Discount(%d) = %v, want %v", tt.discount, got, tt.wantDisc)
			}
		})
	}
}
