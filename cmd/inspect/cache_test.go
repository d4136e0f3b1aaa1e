package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/inspect-dev/inspect/ask/asktest"
)

func TestNewCmdCache(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want CacheOptions
	}{
		{"defaults", nil, CacheOptions{Run: "latest", Format: "text", Lifetime: 5 * time.Minute, MinPrefix: 1024}},
		{"a node of the latest run", []string{"n7"}, CacheOptions{Run: "latest", Node: "n7", Format: "text", Lifetime: 5 * time.Minute, MinPrefix: 1024}},
		{"a run", []string{"7f3a"}, CacheOptions{Run: "7f3a", Format: "text", Lifetime: 5 * time.Minute, MinPrefix: 1024}},
		{"run, node, flags", []string{"base.db:latest", "n3", "--format", "json", "--cache-lifetime", "1h", "--min-prefix", "2048"},
			CacheOptions{Run: "base.db:latest", Node: "n3", Format: "json", Lifetime: time.Hour, MinPrefix: 2048}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, _ := testFactory(t)
			var got *CacheOptions
			cmd := NewCmdCache(f, func(o *CacheOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			got.F = nil
			if *got != tt.want {
				t.Errorf("options = %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestCacheRun(t *testing.T) {
	f, out, errOut := auditTestFactory(t, "handoff-chain")
	for _, tt := range []struct {
		name string
		args []string
		code int
		want []string // in stdout, or stderr when the code is not 0
	}{
		{"the run", []string{"cache"}, ExitOK, []string{
			"Prompt cache · run run-handoff-chain",
			"scripted model's simulated cache",
			"Where reuse broke:",
			"new agent after a hand-off: 2 calls, ≈",
			"n4 @billing (trunk): predicted reusable 30% (455 of 1,515 bytes, ≈113 tokens) from n2 · reported cached 113 of 394",
			"broke at tools (tool transfer_to_refunds added): new agent billing after the hand-off at n3",
			"n6 @billing (trunk): predicted reusable 85%",
			"n4 reused whole; new from messages[4] on (the assistant's call of read_file)",
			"By agent:",
		}},
		{"markdown", []string{"cache", "--format", "markdown"}, ExitOK, []string{"# Prompt cache · run run-handoff-chain", "## Where reuse broke", "- **n4** @billing (trunk)"}},
		{"one node", []string{"cache", "n8"}, ExitOK, []string{"Prompt cache · n8 · run run-handoff-chain", "broke at: tools — tool transfer_to_refunds removed", "why: new agent refunds after the hand-off at n7"}},
		{"not a model call", []string{"cache", "n3"}, ExitUsage, []string{"n3 is a handoff node; inspect cache analyses model calls (llm nodes: n2, n4"}},
		{"no such node", []string{"cache", "n99"}, ExitUsage, []string{"n99"}},
		{"bad format", []string{"cache", "--format", "sarif"}, ExitUsage, []string{`unknown --format "sarif"`}},
		{"bad lifetime", []string{"cache", "--cache-lifetime", "0s"}, ExitUsage, []string{"--cache-lifetime 0s: give a positive duration"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out.Reset()
			errOut.Reset()
			code := run(context.Background(), f, tt.args)
			got := out.String()
			if tt.code != ExitOK {
				got = errOut.String()
			}
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tt.code, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
		})
	}

	out.Reset()
	if code := run(context.Background(), f, []string{"cache", "--format", "json"}); code != ExitOK {
		t.Fatalf("json: exit %d: %s", code, errOut)
	}
	var j struct {
		Run      string `json:"run"`
		Reported string `json:"reported_by"`
		Totals   struct {
			Calls      int   `json:"calls"`
			CacheReads int64 `json:"cache_reads"`
		} `json:"totals"`
		Calls []struct {
			Node  string  `json:"node"`
			Match *string `json:"match"`
			Break struct {
				Where, Cause string
				Expected     bool
			} `json:"break"`
			Reported struct {
				Cached *int64 `json:"cached"`
			} `json:"reported"`
		} `json:"calls"`
	}
	if err := json.Unmarshal(out.Bytes(), &j); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if j.Run != "run-handoff-chain" || j.Reported != "scripted-simulation" || j.Totals.Calls != 6 || len(j.Calls) != 6 ||
		j.Calls[1].Node != "n4" || j.Calls[1].Break.Where != "tools" || j.Calls[1].Break.Cause != "handoff" || *j.Calls[1].Match != "n2" || *j.Calls[1].Reported.Cached != 113 {
		t.Errorf("json = %+v", j)
	}

	// show prints the node's prefix analysis.
	out.Reset()
	if code := run(context.Background(), f, []string{"show", "n6"}); code != ExitOK {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	for _, w := range []string{"## Prompt cache", "- predicted reusable 85%", "from n4 (predicted)", "- reported cached 378 of 461"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("show n6 lacks %q:\n%s", w, out)
		}
	}
}

// A real OpenAI-compatible server on 127.0.0.1 that reports cached_tokens —
// none on a prefix shorter than its minimum, none where the prefix should
// have been there, fewer than predicted — gives one named mismatch line
// each: the minimum prefix length, routing, fewer.
func TestCache_ProviderReportsLessThanPredicted(t *testing.T) {
	fixture := filepath.Join("..", "..", "fixtures", "handoff-chain")
	srv := asktest.New(t, "sk-test")
	usage := func(in, cached int) *openai.Usage {
		return &openai.Usage{PromptTokens: in, CompletionTokens: 10, TotalTokens: in + 10, PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: cached}}
	}
	srv.Register("intake, billing", nil, asktest.Sequence(
		asktest.Answer(asktest.Reply{ToolCalls: []openai.ToolCall{asktest.Call("c1", "transfer_to_billing", `{"reason":"an invoice"}`)}, Usage: usage(2000, 0)}),
		// billing's first call: the common start of the tool arrays only
		asktest.Answer(asktest.Reply{ToolCalls: []openai.ToolCall{asktest.Call("c2", "read_file", `{"path":"policies/billing.md"}`)}, Usage: usage(3000, 0)}),
		// billing's second: its first request whole, reported 0
		asktest.Answer(asktest.Reply{ToolCalls: []openai.ToolCall{asktest.Call("c3", "read_file", `{"path":"policies/refunds.md"}`)}, Usage: usage(3200, 0)}),
		// its third: reported, but a third of what is predicted
		asktest.Answer(asktest.Reply{Content: "Refunded.", Usage: usage(3400, 1024)}),
	))
	f, out, errOut := testFactoryEnv(t, map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL})
	if code := run(context.Background(), f, []string{"run", fixture, "--task", "I was charged twice."}); code != ExitOK {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	srv.Verify(t)
	out.Reset()
	if code := run(context.Background(), f, []string{"cache", "--format", "json"}); code != ExitOK {
		t.Fatalf("cache: exit %d: %s", code, errOut)
	}
	var j struct {
		Reported string `json:"reported_by"`
		Calls    []struct {
			Node     string `json:"node"`
			Tokens   int64  `json:"reusable_tokens"`
			Mismatch *struct {
				Kind, Text string
			} `json:"mismatch"`
		} `json:"calls"`
		Totals struct {
			Mismatches int   `json:"mismatches"`
			Reads      int64 `json:"cache_reads"`
		} `json:"totals"`
	}
	if err := json.Unmarshal(out.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, c := range j.Calls {
		k := "-"
		if c.Mismatch != nil {
			k = c.Mismatch.Kind
		}
		kinds = append(kinds, k)
	}
	if got := strings.Join(kinds, " "); got != "- minimum routing fewer" || j.Reported != "provider" || j.Totals.Mismatches != 3 || j.Totals.Reads != 1024 {
		t.Fatalf("mismatches %q (want - minimum routing fewer), reported by %s, totals %+v\n%s", got, j.Reported, j.Totals, out)
	}
	if c := j.Calls[3]; c.Tokens <= 1024+128 || !strings.Contains(c.Mismatch.Text, "reported 1024 cached of the ≈") {
		t.Errorf("the fewer line: %+v", c)
	}

	out.Reset()
	if code := run(context.Background(), f, []string{"cache"}); code != ExitOK {
		t.Fatalf("cache: exit %d: %s", code, errOut)
	}
	for _, w := range []string{
		"reported cached tokens come from the provider",
		"Reported against predicted:",
		"(minimum): predicted ≈",
		"shorter than the 1024-token minimum prefix a provider caches",
		"(routing): predicted ≈",
		"reported 0: the request may have reached a server that had not seen the prefix",
		"(fewer): reported 1024 cached of the ≈",
	} {
		if !strings.Contains(strings.ToLower(out.String()), strings.ToLower(w)) {
			t.Errorf("cache lacks %q:\n%s", w, out)
		}
	}

	// With a price table, money per call, agent and run. Worked by hand
	// from the usage the server reported (out 10 each) at input 2.00,
	// cached input 0.50, output 8.00 per million:
	//   spent  n2 2000×2+80 = 4,080; billing 3000×2+80 = 6,080, 3200×2+80 = 6,480,
	//          (3400−1024)×2 + 1024×0.5 + 80 = 5,344 → run 21,984, billing 17,904
	//   saved  1024 × (2.00−0.50) = 1,536 (the only reported read)
	//   misses uncached 2000+3000+3200+2376 = 10,576 tokens × 1.50 = 15,864
	writePolicy(t, f, "prices:\n  gpt-4.1-mini: {input: 2.00, cached_input: 0.50, output: 8.00}\n")
	stdout, stderr, code := inspectRun(t, f, "cache", "--format", "json")
	if code != ExitOK {
		t.Fatalf("cache: exit %d: %s", code, stderr)
	}
	type jmoney struct {
		Spent, Saved  float64
		UncachedExtra float64 `json:"uncached_extra"`
		Priced        *int    `json:"priced_calls"`
	}
	var m struct {
		Currency *string `json:"currency"`
		Totals   struct {
			Money *jmoney `json:"money"`
		} `json:"totals"`
		Agents []struct {
			Agent string  `json:"agent"`
			Money *jmoney `json:"money"`
		} `json:"agents"`
		Calls []struct {
			Money *jmoney `json:"money"`
		} `json:"calls"`
	}
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatal(err)
	}
	if m.Currency == nil || *m.Currency != "USD" || m.Totals.Money == nil || len(m.Agents) != 2 || len(m.Calls) != 4 || m.Calls[3].Money == nil {
		t.Fatalf("money missing: %s", stdout)
	}
	if got, want := *m.Totals.Money, (jmoney{Spent: 0.021984, Saved: 0.001536, UncachedExtra: 0.015864}); got.Spent != want.Spent || got.Saved != want.Saved || got.UncachedExtra != want.UncachedExtra || *got.Priced != 4 {
		t.Errorf("run money = %+v, want %+v and 4 priced calls", got, want)
	}
	if a := m.Agents[1]; a.Agent != "billing" || a.Money.Spent != 0.017904 || a.Money.Saved != 0.001536 {
		t.Errorf("billing's money = %s %+v, want spent 0.017904 saved 0.001536", a.Agent, a.Money)
	}
	if c := m.Calls[3].Money; c.Spent != 0.005344 || c.Saved != 0.001536 || c.UncachedExtra != 0.003564 || c.Priced != nil {
		t.Errorf("n-last call money = %+v, want spent 0.005344, saved 0.001536, uncached extra 2376×1.5 = 0.003564", c)
	}
	stdout, stderr, code = inspectRun(t, f, "cache")
	if code != ExitOK {
		t.Fatalf("cache: exit %d: %s", code, stderr)
	}
	for _, w := range []string{
		"Money from the price table in USD",
		"run: 4 calls",
		"cost $0.0220 · cache saved $0.0015 · uncached input ≈$0.0159 above the cache-read price",
		"new agent after a hand-off: 1 call, ≈3,000 tokens sent uncached, ≈$0.0045 above the cache-read price",
	} {
		if !strings.Contains(stdout, w) {
			t.Errorf("cache with prices lacks %q:\n%s", w, stdout)
		}
	}

	// A table that does not price the model: listed, never guessed.
	writePolicy(t, f, "prices:\n  claude-sonnet-4*: {input: 3, output: 15}\n")
	stdout, stderr, code = inspectRun(t, f, "cache")
	if code != ExitOK {
		t.Fatalf("cache: exit %d: %s", code, stderr)
	}
	for _, w := range []string{"No price for gpt-4.1-mini (4 calls): not counted.", "· no call priced"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("cache with an unpriced model lacks %q:\n%s", w, stdout)
		}
	}

	// show analyses the node with the team's lifetime and prices: at 1ns
	// nothing earlier is still held (the calls were milliseconds apart).
	writePolicy(t, f, "cache-lifetime: 1ns\nprices:\n  gpt-4.1-mini: {input: 2.00, cached_input: 0.50, output: 8.00}\n")
	stdout, stderr, code = inspectRun(t, f, "show", "n8")
	if code != ExitOK {
		t.Fatalf("show: exit %d: %s", code, stderr)
	}
	for _, w := range []string{"- predicted reusable 0% (0 of", "had finished within the 0ms lifetime", "- money: cost $0.0053 · cache saved $0.0015 · uncached input ≈$0.0036 above the cache-read price"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("show n8 with the policy lacks %q:\n%s", w, stdout)
		}
	}
}

// TestCache_ImportedLangGraph imports the LangGraph fixtures of
// cache.unstable-prefix with inspect import and reads them as a user does:
// inspect cache names where each call broke (the system prompt's line 2,
// where the time is; the tool that moved) beside the provider's reported
// 0, and audit reports the finding on the agent's four calls. Expectations
// are read from the traces (fixtures/*/want.txt says which calls).
func TestCache_ImportedLangGraph(t *testing.T) {
	for _, tt := range []struct {
		fixture     string
		cache, show []string
	}{
		{"cache-unstable-system-time", []string{
			"reported cached 0 of ",
			`n4 @weather_assistant (trunk): predicted reusable 30%`,
			`broke at system (line 2 of the system prompt: "Current time: `,
			"the system prompt of agent weather_assistant changed since n2 in the same conversation",
			"Reported against predicted:",
			"n4 (minimum): predicted ≈",
			"reported 0: shorter than the 1024-token minimum prefix a provider caches",
			"Unstable prefixes (cache.unstable-prefix):",
			"n4 against n2: broke at system", "n6 against n4: broke at system", "n8 against n6: broke at system",
		}, []string{"## Prompt cache", "broke at: system — line 2 of the system prompt"}},
		{"cache-unstable-tool-order", []string{
			"n4 against n2: broke at tools (tool find_location moved from position 3 to 1)",
			"n6 against n4: broke at tools (tool get_forecast moved from position 2 to 1)",
			"n8 against n6: broke at tools (tool get_warning moved from position 3 to 1)",
		}, []string{"## Prompt cache", "broke at: tools — tool find_location moved from position 3 to 1"}},
	} {
		t.Run(tt.fixture, func(t *testing.T) {
			f, out, errOut := testFactory(t)
			ctx := context.Background()
			trace := filepath.Join("..", "..", "fixtures", tt.fixture, "trace.otlp.jsonl")
			if code := run(ctx, f, []string{"import", trace}); code != ExitOK {
				t.Fatalf("import: exit %d: %s", code, errOut)
			}
			for _, c := range []struct {
				args []string
				code int
				want []string
			}{
				{[]string{"cache"}, ExitOK, tt.cache},
				{[]string{"show", "n4"}, ExitOK, tt.show},
				{[]string{"audit"}, ExitOK, []string{"WARNING cache.unstable-prefix", "nodes: n2 n4 n6 n8"}},
			} {
				out.Reset()
				errOut.Reset()
				if code := run(ctx, f, c.args); code != c.code {
					t.Fatalf("%v: exit %d, want %d: %s", c.args, code, c.code, errOut)
				}
				for _, w := range c.want {
					if !strings.Contains(out.String(), w) {
						t.Errorf("%v lacks %q:\n%s", c.args, w, out)
					}
				}
			}
		})
	}
}

// TestCache_ImportWithoutRequests: a real Claude Code session imported
// from its transcript has no system prompt or tools to compare, so no
// call is analysed: inspect cache says why once, above the calls, lists
// each call with the provider's figures alone, and claims no prediction.
func TestCache_ImportWithoutRequests(t *testing.T) {
	f, out, errOut := testFactory(t)
	path := filepath.Join(t.TempDir(), "session.jsonl")
	if err := os.WriteFile(path, realSession(t), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run(context.Background(), f, []string{"import", path}); code != ExitOK {
		t.Fatalf("import: exit %d: %s", code, errOut)
	}
	out.Reset()
	if code := run(context.Background(), f, []string{"cache"}); code != ExitOK {
		t.Fatalf("cache: exit %d: %s", code, errOut)
	}
	got := out.String()
	why := "not analysed: the reconstructed request lacks the system prompt and the tool definitions"
	if strings.Count(got, why) != 1 || !strings.Contains(got, "calls "+why+". Their figures below are the provider's alone.") {
		t.Errorf("the reason is not said once above the calls:\n%s", got)
	}
	if strings.Contains(got, "predictions are from the request bytes") || !strings.Contains(got, "no call's request could be analysed, so nothing here is predicted") {
		t.Errorf("the source line claims predictions:\n%s", got)
	}
	_, calls, _ := strings.Cut(got, "Calls:")
	calls, _, _ = strings.Cut(calls, "By conversation:")
	n := 0
	for _, l := range strings.Split(calls, "\n") {
		if strings.HasPrefix(l, "  n") {
			n++
			if !strings.Contains(l, ": reported cached ") && !strings.Contains(l, ": cached not reported") {
				t.Errorf("call line without the provider's figures: %q", l)
			}
		}
	}
	if n == 0 || !strings.Contains(got, fmt.Sprintf("%d of %d calls "+why, n, n)) {
		t.Errorf("%d call lines; the count above them differs:\n%s", n, got)
	}
}
