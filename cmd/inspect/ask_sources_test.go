package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/inspect-dev/inspect/ask/asktest"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime"
	"github.com/inspect-dev/inspect/store"
)

// askSource is a session of one source format, and the API its calls go
// back to.
type askSource struct {
	name string
	// path is the session to import; skip, when set, says why it is absent.
	path string
	// api is the path posted to: asktest.MessagesPath, ResponsesPath or
	// ChatPath.
	api string
	// record, when set, records the run instead of importing path (our
	// runtime's own).
	record func(t *testing.T, f *Factory)
}

// askSources are runs of every source inspect imports: the real Claude
// Code sessions of shared/transcripts (skipped when absent), the
// harness's real Claude Code, Codex and Gemini CLI sessions
// (testdata/agents), the real Kimi sessions, the Agents SDK's and
// LangGraph's and the AI SDK's real traces.
func askSources(t *testing.T) []askSource {
	t.Helper()
	root := filepath.Join("..", "..")
	glob := func(pattern string) string {
		ps, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
		if len(ps) == 0 {
			t.Fatalf("no file matches %s", pattern)
		}
		return ps[0]
	}
	srcs := []askSource{
		{name: "inspect runtime", api: asktest.ChatPath, record: func(t *testing.T, f *Factory) {
			db, err := f.Store(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(root, "fixtures", "fanout-compact")
			if _, err := runtime.Run(context.Background(), runtime.Config{Project: dir, Script: filepath.Join(dir, "script.yaml"), DB: db}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "claude-code harness", path: glob("testdata/agents/claude/subagents-parallel/session/*/*.jsonl"), api: asktest.MessagesPath},
		{name: "claude-code harness refused", path: glob("testdata/agents/claude/subagent-refused/session/*/*.jsonl"), api: asktest.MessagesPath},
		{name: "codex harness", path: codexMain(t, root), api: asktest.ResponsesPath},
		{name: "codex fixture", path: filepath.Join(root, "importers", "codex", "testdata", "sessions", "2026", "03", "01", "rollout-2026-03-01T11-00-00-019a1c00-0000-7000-8000-000000000001.jsonl"), api: asktest.ResponsesPath},
		{name: "gemini-cli harness", path: glob("testdata/agents/gemini/subagents-parallel/session/*/chats/session-*.jsonl"), api: asktest.ChatPath},
		{name: "openai-agents", path: filepath.Join(root, "importers", "openaiagents", "testdata", "parallel-agents-as-tools.jsonl"), api: asktest.ChatPath},
		{name: "otlp langgraph", path: filepath.Join(root, "importers", "otlp", "testdata", "langgraph-supervisor.otlp.jsonl"), api: asktest.ChatPath},
		{name: "otlp ai sdk", path: filepath.Join(root, "importers", "otlp", "testdata", "aisdk.otlp.pb"), api: asktest.ChatPath},
	}
	if dir := importerstest.Find(); dir != "" {
		srcs = append(srcs,
			askSource{name: "claude-code real tool-heavy", path: filepath.Join(dir, "claude-code", "tool_heavy.jsonl"), api: asktest.MessagesPath},
			askSource{name: "claude-code real with sub-agent", path: filepath.Join(dir, "claude-code", "ae4a77f8-aedd-4bc1-888f-c94edc91af04.lines-43-102.jsonl"), api: asktest.MessagesPath},
			askSource{name: "claude-code real sub-agent alone", path: filepath.Join(dir, "claude-code", "ae4a77f8-aedd-4bc1-888f-c94edc91af04", "subagents", "agent-aac57f5.jsonl"), api: asktest.MessagesPath},
			askSource{name: "claude-code real fan-out", path: filepath.Join(dir, "claude-code", "entire", "2.1.37-fanout5-progress", "aa", "c0dfc67579", "0", "full.jsonl"), api: asktest.MessagesPath},
			askSource{name: "claude-code real fan-out errors", path: filepath.Join(dir, "claude-code", "entire", "2.1.4-fanout-errors", "d3", "7d736cbc10", "0", "full.jsonl"), api: asktest.MessagesPath},
			askSource{name: "claude-code real background", path: filepath.Join(dir, "claude-code", "entire", "2.0.76-background8", "f8", "10e13fce67", "0", "full.jsonl"), api: asktest.MessagesPath},
			askSource{name: "kimi-cli real", path: filepath.Join(dir, "kimi-cli", "with-tool-calls"), api: asktest.ChatPath},
			askSource{name: "kimi-cli real sub-agent", path: filepath.Join(dir, "kimi-cli", "with-subagent-collapsed", "wire.jsonl"), api: asktest.ChatPath},
			askSource{name: "kimi-code real", path: filepath.Join(dir, "kimi-code", "sample-main"), api: asktest.ChatPath},
		)
	} else if os.Getenv("INSPECT_REQUIRE_TRANSCRIPTS") != "" {
		t.Fatal("shared/transcripts not found above the repository (INSPECT_REQUIRE_TRANSCRIPTS is set)")
	} else {
		t.Log("shared/transcripts not found above the repository: the real Claude Code and Kimi sessions are not asked")
	}
	return srcs
}

// codexMain is the harness's Codex rollout of the main thread of
// subagents-parallel (the one whose session_meta names no sub-agent
// source).
func codexMain(t *testing.T, root string) string {
	ps, _ := filepath.Glob(filepath.Join(root, "testdata", "agents", "codex", "subagents-parallel", "session", "*", "*", "*", "rollout-*.jsonl"))
	for _, p := range ps {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		var l struct {
			Payload struct {
				Source json.RawMessage `json:"source"`
			} `json:"payload"`
		}
		if sc.Scan() {
			_ = json.Unmarshal(sc.Bytes(), &l)
		}
		f.Close()
		if !strings.Contains(string(l.Payload.Source), "subagent") {
			return p
		}
	}
	t.Fatal("no main Codex rollout in testdata/agents/codex/subagents-parallel")
	return ""
}

// dryRunURL is the URL a dry run says it would post to.
var dryRunURL = regexp.MustCompile(`(?m)^dry run: .* would POST this body \(model [^)]*\) to (\S+)$`)

// TestAsk_EverySource: inspect ask works end to end on a run of every
// source, against a local server of the API the run's calls were made in
// (Anthropic Messages for Claude Code, Responses for Codex, Chat
// Completions for the others). For every model call of each run, the dry
// run names that API and prints a body the API's documented rules accept;
// a question, a replay and a dry run's hint on a few of them go through
// the server, which checks every body it gets; the answers are printed
// and stored with the run.
func TestAsk_EverySource(t *testing.T) {
	ctx := context.Background()
	srv := asktest.New(t, askTestKey)
	answer := "I called them together because none needed another's result."
	srv.Register("any", nil, asktest.Answer(asktest.Reply{Content: answer,
		Usage: &openai.Usage{PromptTokens: 900, CompletionTokens: 12, PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: 600}}}))
	env := map[string]string{"ANTHROPIC_API_KEY": askTestKey, "OPENAI_API_KEY": askTestKey, "ANTHROPIC_BASE_URL": srv.URL, "OPENAI_BASE_URL": srv.URL}
	for _, src := range askSources(t) {
		t.Run(src.name, func(t *testing.T) {
			f, out, errOut := testFactoryEnv(t, env)
			if src.record != nil {
				src.record(t, f)
			} else if code := run(ctx, f, []string{"import", src.path}); code != ExitOK {
				t.Fatalf("import %s: exit %d: %s", src.path, code, errOut)
			}
			db, err := f.Store(ctx)
			if err != nil {
				t.Fatal(err)
			}
			id, err := db.ResolveRun(ctx, "latest")
			if err != nil {
				t.Fatal(err)
			}
			var llms []*record.Node
			if err := db.ScanNodes(ctx, &record.Run{ID: id}, func(n *record.Node) error {
				if n.Kind == record.KindLLM {
					llms = append(llms, n)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(llms) == 0 {
				t.Fatal("the run has no model call to ask")
			}
			// A source that records no model: refused until --model names
			// one, the hint keeping --dry-run.
			var model []string
			errOut.Reset()
			if code := run(ctx, f, []string{"ask", id, fmt.Sprintf("n%d", llms[0].Seq), "--dry-run"}); code != ExitOK {
				want := fmt.Sprintf("n%d's request names no model and run %s records none: pass --model with the model to ask, e.g. `inspect ask %s n%d --model MODEL --dry-run --db ", llms[0].Seq, id, id, llms[0].Seq)
				if code != ExitUsage || !strings.Contains(errOut.String(), want) {
					t.Fatalf("ask --dry-run: exit %d: %s", code, errOut)
				}
				model = []string{"--model", "test-model"}
			}
			// Every call: the dry run says where, and its body is one the
			// API takes. A long session: 40 of its calls, spread.
			step := max(1, len(llms)/40)
			for i := 0; i < len(llms); i += step {
				n := llms[i]
				for _, mode := range [][]string{{"Why this call?"}, {"--replay"}} {
					out.Reset()
					errOut.Reset()
					args := append(append([]string{"ask", id, fmt.Sprintf("n%d", n.Seq)}, mode...), model...)
					if code := run(ctx, f, append(args, "--dry-run")); code != ExitOK {
						t.Fatalf("%s --dry-run: exit %d: %s", strings.Join(args, " "), code, errOut)
					}
					m := dryRunURL.FindStringSubmatch(errOut.String())
					if m == nil {
						t.Fatalf("%s --dry-run says no URL: %s", strings.Join(args, " "), errOut)
					}
					u, _ := url.Parse(m[1])
					if u.Path != src.api || !strings.HasPrefix(m[1], srv.URL) {
						t.Errorf("n%d: the dry run posts to %s, want %s%s", n.Seq, m[1], srv.URL, src.api)
					}
					if err := validatePath(u.Path)(out.Bytes()); err != nil {
						t.Errorf("n%d %s: the body would be refused: %v\n%s", n.Seq, mode[0], err, out.Bytes())
					}
					if !strings.Contains(errOut.String(), "'s request is reconstructed") && !strings.Contains(errOut.String(), "'s request is exact") {
						t.Errorf("n%d: the dry run says neither what the request lacks nor that it is exact:\n%s", n.Seq, errOut)
					}
				}
			}
			// Sent: the first call, the last, and one of a sub-agent when
			// there is one.
			picks := []*record.Node{llms[0]}
			if len(llms) > 1 {
				picks = append(picks, llms[len(llms)-1])
			}
			for _, n := range llms[1:max(1, len(llms)-1)] {
				if n.Depth > 0 {
					picks = append(picks, n)
					break
				}
			}
			before := len(srv.Requests())
			for _, n := range picks {
				node := fmt.Sprintf("n%d", n.Seq)
				out.Reset()
				errOut.Reset()
				if code := run(ctx, f, append([]string{"ask", id, node, "Why did you do that?"}, model...)); code != ExitOK {
					t.Fatalf("ask %s: exit %d: %s", node, code, errOut)
				}
				if out.String() != answer+"\n" {
					t.Errorf("ask %s: stdout %q, want the answer", node, out)
				}
				if !strings.Contains(errOut.String(), "900 tokens in (600 cached) · 12 out") {
					t.Errorf("ask %s: stderr %q, want the usage the server reported", node, errOut)
				}
				out.Reset()
				if code := run(ctx, f, append([]string{"ask", id, node, "--replay", "--samples", "2"}, model...)); code != ExitOK {
					t.Fatalf("ask %s --replay: exit %d: %s", node, code, errOut)
				}
				if !strings.HasPrefix(out.String(), "answers 2/2 (recorded: ") {
					t.Errorf("ask %s --replay: stdout %q", node, out)
				}
				sdb, err := store.Open(ctx, f.DBPath)
				if err != nil {
					t.Fatal(err)
				}
				asks, err := sdb.Asks(ctx, id, n.Seq)
				sdb.Close()
				if err != nil || len(asks) != 2 || asks[0].Answer != answer || asks[1].Mode != "replay" || asks[0].BaseURL != srv.URL {
					t.Errorf("ask %s: stored asks %+v, %v", node, asks, err)
				}
			}
			reqs := srv.Requests()[before:]
			if len(reqs) != 3*len(picks) {
				t.Errorf("the server got %d requests, want %d", len(reqs), 3*len(picks))
			}
			for _, r := range reqs {
				if r.Path != src.api {
					t.Errorf("posted to %s, want %s", r.Path, src.api)
				}
				if r.Invalid != "" {
					t.Errorf("the server got a body its API refuses: %s\n%s", r.Invalid, r.Body)
				}
			}
			askNoKeyInFiles(t, f.DBPath)
		})
	}
	srv.Verify(t)
}

func validatePath(path string) func([]byte) error {
	switch path {
	case asktest.MessagesPath:
		return asktest.ValidateAnthropic
	case asktest.ResponsesPath:
		return asktest.ValidateResponses
	}
	return asktest.ValidateChat
}
