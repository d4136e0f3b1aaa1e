package rules_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/record"
)

// ccRequest is one request of a hand-made Claude Code conversation in
// Anthropic's Messages shape, as the importer rebuilds it from the
// api-request records: the billing block first in system.
type ccRequest struct {
	billing string   // the billing block's cc_version fingerprint ("" none)
	date    string   // the system prompt's date line
	tools   []string // tool definitions' JSON
	cached  int      // reported cached tokens, in percent of the input
	gap     time.Duration
}

var (
	toolRead         = `{"name":"Read","description":"Reads a file from the local filesystem.","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}}}}`
	toolBash         = `{"name":"Bash","description":"Executes a given bash command.","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}`
	toolSend         = `{"name":"SendMessage","description":"Send a message to a running sub-agent.","input_schema":{"type":"object","properties":{"to":{"type":"string"}}}}`
	toolSendDeferred = `{"name":"SendMessage","description":"Send a message to a running sub-agent.","input_schema":{"type":"object","properties":{"to":{"type":"string"}}},"defer_loading":true}`
	toolMCP          = `{"name":"mcp__github__create_issue","description":"Create a GitHub issue.","input_schema":{"type":"object","properties":{"title":{"type":"string"}}}}`
)

// ccBody is request i (0-based) of the conversation: the task, then i
// assistant answers and user replies.
func ccBody(i int, r ccRequest) string {
	text := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var msgs []string
	msgs = append(msgs, `{"role":"user","content":`+text("Read the three files and sum their totals.")+`}`)
	for j := 0; j < i; j++ {
		msgs = append(msgs, `{"role":"assistant","content":[{"type":"text","text":`+text(fmt.Sprintf("Step %d: %s", j+1, strings.Repeat("reading the next file, ", 30)))+`}]}`,
			`{"role":"user","content":`+text(fmt.Sprintf("go on with step %d", j+2))+`}`)
	}
	var sys []string
	if r.billing != "" {
		sys = append(sys, `{"type":"text","text":`+text("x-anthropic-billing-header: cc_version=2.1.332."+r.billing+"; cc_entrypoint=cli;")+`}`)
	}
	sys = append(sys, `{"type":"text","text":`+text("You are Claude Code, Anthropic's official CLI for Claude.\n"+strings.Repeat("Follow the user's instructions with care.\n", 40)+"Today's date is "+r.date+".\n")+`}`)
	return `{"model":"claude-opus-5-5","messages":[` + strings.Join(msgs, ",") + `],"system":[` + strings.Join(sys, ",") +
		`],"tools":[` + strings.Join(r.tools, ",") + `],"max_tokens":32000,"stream":true}`
}

// auditRequests records the requests as one conversation of agent main
// from a source of format, each a second long, and audits it as inspect
// audit does.
func auditRequests(t *testing.T, format string, reqs []ccRequest) (*cache.Report, *findings.Report) {
	t.Helper()
	ctx := context.Background()
	db := importerstest.Store(t)
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var nodes []*record.Node
	at := t0
	for i, r := range reqs {
		at = at.Add(r.gap)
		body := ccBody(i, r)
		in := int64(len(body) / 3)
		nodes = append(nodes, &record.Node{Kind: record.KindLLM, Agent: "main", Started: at, Ended: at.Add(time.Second), Status: record.StatusOK,
			LLM: &record.LLM{Model: "claude-opus-5-5", Request: []byte(body), Fidelity: record.FidelityExact,
				Usage: record.Usage{In: in, Out: 20, Cached: in * int64(r.cached) / 100, CachedReported: true}}})
		at = at.Add(2 * time.Second)
	}
	id, err := graphtest.RecordNodes(ctx, db, &record.Run{Started: t0, Tasks: []string{"sum"}, Models: []string{"claude-opus-5-5"},
		Source: record.Source{Format: format, Version: "2.1.332", Path: "session.jsonl"}}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	_, cr, rep := auditStored(t, db, id, []*findings.Rule{rules.CacheUnstablePrefix})
	return cr, rep
}

// TestCacheUnstablePrefix_ClaudeCodesOwnParts: what Claude Code changes
// in its requests itself — its billing block, the deferred tools
// ToolSearch loads, its built-in tools — is not the user's mistake, and
// not fixed in CLAUDE.md; the billing block is reported only when the
// reported usage shows an endpoint that compares it (the settings fix);
// what the user owns (the system prompt's text, an MCP server's tools) is
// found as before. Written by hand; before this change every case but
// "otlp" broke at system line 1 or at the tools with a CLAUDE.md fix.
func TestCacheUnstablePrefix_ClaudeCodesOwnParts(t *testing.T) {
	base := []string{toolRead, toolBash}
	tests := []struct {
		name   string
		format string
		reqs   []ccRequest
		want   string // "" no finding, else "NODES | fix location | fix text prefix"
		clear  string // with no finding: what the clear line must say
	}{
		{"billing block changed, the cache reused the rest", "claude-code", []ccRequest{
			{billing: "780", date: "2026-12-01", tools: base, cached: 80},
			{billing: "780", date: "2026-12-01", tools: base, cached: 80},
			{billing: "cf6", date: "2026-12-01", tools: base, cached: 80},
		}, "", "2 requests compared"},
		{"billing block changed, the cache missed: an endpoint that compares it", "claude-code", []ccRequest{
			{billing: "780", date: "2026-12-01", tools: base, cached: 80},
			{billing: "780", date: "2026-12-01", tools: base, cached: 80},
			{billing: "cf6", date: "2026-12-01", tools: base, cached: 0},
		}, `n2 n3 | .claude/settings.json | Set "env": {"CLAUDE_CODE_ATTRIBUTION_HEADER": "0"} in .claude/settings.json (or CLAUDE_CODE_ATTRIBUTION_HEADER=0 in the environment) so Claude Code stops sending the billing block`, ""},
		{"billing block changed, the cache missed, but the previous request was older than the lifetime", "claude-code", []ccRequest{
			{billing: "780", date: "2026-12-01", tools: base, cached: 80},
			{billing: "cf6", date: "2026-12-01", tools: base, cached: 0, gap: 10 * time.Minute},
		}, "", "1 request compared"},
		{"a real system-prompt change beside the billing block", "claude-code", []ccRequest{
			{billing: "780", date: "2026-12-01", tools: base, cached: 80},
			{billing: "cf6", date: "2026-12-02", tools: base, cached: 0},
		}, "n1 n2 | CLAUDE.md | Move what changes per call out of agent main's system prompt", ""},
		{"an MCP server's tool joined the tools", "claude-code", []ccRequest{
			{billing: "780", date: "2026-12-01", tools: base, cached: 80},
			{billing: "780", date: "2026-12-01", tools: []string{toolRead, toolBash, toolMCP}, cached: 0},
		}, "n1 n2 | .mcp.json | Keep the tools of MCP server github (.mcp.json) the same for the whole session (tool mcp__github__create_issue added)", ""},
		{"a built-in tool joined the tools", "claude-code", []ccRequest{
			{billing: "780", date: "2026-12-01", tools: base, cached: 80},
			{billing: "780", date: "2026-12-01", tools: []string{toolRead, toolBash, toolSend}, cached: 0},
		}, "", "not counted, as Claude Code changed them itself (its own tools, which no file of yours sets): tool SendMessage added at n2"},
		{"a deferred tool joined the tools (ToolSearch)", "claude-code", []ccRequest{
			{billing: "780", date: "2026-12-01", tools: base, cached: 80},
			{billing: "780", date: "2026-12-01", tools: []string{toolRead, toolSendDeferred, toolBash}, cached: 80},
		}, "", "1 request compared"},
		// a stack whose profile says nothing of the block: it is text of
		// the system prompt like any other
		{"the same billing change from an app traced over OTLP", "otlp", []ccRequest{
			{billing: "780", date: "2026-12-01", tools: base, cached: 80},
			{billing: "cf6", date: "2026-12-01", tools: base, cached: 80},
		}, "n1 n2 | agent main's instructions (in code) | Move what changes per call out of agent main's system prompt", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, rep := auditRequests(t, tt.format, tt.reqs)
			var got []string
			for _, f := range rep.Findings {
				got = append(got, strings.Join(f.Nodes, " ")+" | "+f.Fix.Location.String()+" | "+f.Fix.Text)
			}
			switch {
			case tt.want == "" && len(got) > 0:
				t.Fatalf("findings:\n  %s\nwant none\n%s", strings.Join(got, "\n  "), dump(rep))
			case tt.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], tt.want)):
				t.Fatalf("findings:\n  %s\nwant one starting\n  %s\n%s", strings.Join(got, "\n  "), tt.want, dump(rep))
			}
			if tt.clear != "" {
				var check string
				for _, c := range rep.Checks {
					check += c.String()
				}
				if !strings.Contains(check, tt.clear) {
					t.Errorf("check %q does not say %q", check, tt.clear)
				}
			}
		})
	}
}

// TestCacheUnstablePrefix_BillingMessage: the settings finding says why —
// the reported cached tokens against what the prefix kept, what changed
// in the block, that Anthropic's API leaves it out and which endpoints
// compare it — and prices the tokens after the block.
func TestCacheUnstablePrefix_BillingMessage(t *testing.T) {
	base := []string{toolRead, toolBash}
	cr, rep := auditRequests(t, "claude-code", []ccRequest{
		{billing: "780", date: "2026-12-01", tools: base, cached: 80},
		{billing: "cf6", date: "2026-12-01", tools: base, cached: 0},
	})
	if len(rep.Findings) != 1 {
		t.Fatalf("%d findings\n%s", len(rep.Findings), dump(rep))
	}
	f := rep.Findings[0]
	for _, want := range []string{"reported 0 cached tokens of the ≈", "the only early change was the billing block (x-anthropic-billing-header), which Claude Code writes itself",
		`("cc_version=2.1.332.cf6; cc_entrypoint=cli;", was "cc_version=2.1.332.780; cc_entrypoint=cli;")`,
		"Anthropic's API reads it as a header and leaves it out of the cached prompt",
		"but an endpoint that caches by prefix (a proxy or another provider reached through ANTHROPIC_BASE_URL) compares it"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message %q lacks %q", f.Message, want)
		}
	}
	c := cr.Calls[1]
	if c.Unstable != nil || c.Unkeyed == nil {
		t.Fatalf("call n2: unstable %v, unkeyed %v", c.Unstable, c.Unkeyed)
	}
	// the tools come before the block and were not lost
	if x := c.Unkeyed; f.Price.TokensIn != x.Lost || x.Lost <= 0 || x.Lost >= x.Kept {
		t.Errorf("price %d tokens, lost %d of kept %d", f.Price.TokensIn, x.Lost, x.Kept)
	}
}
