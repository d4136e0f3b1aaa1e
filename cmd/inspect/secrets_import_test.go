package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/internal/secret/secrettest"
	"github.com/inspect-dev/inspect/store"
)

// injectSecrets returns a JSON-lines file (or one JSON document) with
// text appended to every string value that holds a space — the prose of
// a session: prompts, answers, tool results, system prompts, error
// messages — including inside strings that are JSON themselves (tool
// arguments, OpenInference's input.value), so each secret kind reaches
// every kind of text a format has.
func injectSecrets(t *testing.T, data []byte, text string) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		v, err := decodeNumbers(line)
		if err != nil {
			t.Fatalf("the fixture is not JSON lines: %v", err)
		}
		out.Write(encodeNoEscape(withText(v, text)))
		out.WriteByte('\n')
	}
	return out.Bytes()
}

func decodeNumbers(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	return v, d.Decode(&v)
}

func encodeNoEscape(v any) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func withText(v any, text string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = withText(e, text)
		}
	case []any:
		for i, e := range x {
			x[i] = withText(e, text)
		}
	case string:
		if t := strings.TrimSpace(x); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Valid([]byte(t)) {
			if inner, err := decodeNumbers([]byte(t)); err == nil {
				return string(encodeNoEscape(withText(inner, text)))
			}
		}
		if strings.Contains(x, " ") {
			return x + "\n" + text
		}
	}
	return v
}

// secretsLeft lists the kinds any of texts still holds.
func secretsLeft(kinds []secrettest.Kind, texts map[string][]byte) []string {
	var left []string
	for name, b := range texts {
		for _, k := range kinds {
			if k.In(string(b)) {
				left = append(left, fmt.Sprintf("%s holds the %s", name, k.Name))
			}
		}
	}
	return left
}

// TestImport_SecretsRedacted: sessions of every format that hold every
// kind of secret — a bearer header, an x-api-key, sk- and sk-ant- keys,
// GitHub tokens, an AWS key, a Slack token, a PEM private key, URL and
// DATABASE_URL passwords — in their prompts, answers, tool arguments and
// results, system prompts and span attributes are imported, and the
// secrets are in no byte of the database (its -wal and -shm while a reader
// holds them open included), nor in what show, audit (every format),
// graph, timeline, cache, runs, ask --dry-run, export (otlp and a .db)
// and report print or write. The import summary says how many values it
// redacted, and show says so of a reconstructed request.
func TestImport_SecretsRedacted(t *testing.T) {
	kinds := secrettest.Kinds(11)
	text := secrettest.Text(kinds)
	big, err := importerstest.BigClaudeCode(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	sources := []struct{ format, fixture, name string }{
		{"claude-code", big, "session.jsonl"},
		{"codex", filepath.Join("..", "..", "importers", "codex", "testdata", "sessions", "2026", "03", "02",
			"rollout-2026-03-02T11-00-00-019a1c00-0000-7000-8000-000000000005.jsonl"), "rollout-2026-03-02T11-00-00-019a1c00-0000-7000-8000-000000000005.jsonl"},
		{"openai-agents", filepath.Join("..", "..", "importers", "openaiagents", "testdata", "parallel-agents-as-tools.jsonl"), "agents.jsonl"},
		{"otlp", filepath.Join("..", "..", "importers", "otlp", "testdata", "aisdk.otlp.jsonl"), "trace.otlp.jsonl"},
	}
	for _, src := range sources {
		t.Run(src.format, func(t *testing.T) {
			raw, err := os.ReadFile(src.fixture)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			session := filepath.Join(dir, src.name)
			if err := os.WriteFile(session, injectSecrets(t, raw, text), 0o644); err != nil {
				t.Fatal(err)
			}
			if left := secretsLeft(kinds, map[string][]byte{"the session": mustRead(t, session)}); len(left) != len(kinds) {
				t.Fatalf("the session holds %d of %d kinds: the test proves nothing", len(left), len(kinds))
			}
			db := filepath.Join(dir, "runs.db")
			f, _, _ := testFactory(t)
			f.DBPath = db
			// a reader holds the file open, so the -wal and -shm stay to be read
			holder, err := store.Open(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			out, errOut, code := inspectRun(t, f, "import", "--format", src.format, session)
			if code != ExitOK {
				t.Fatalf("import: exit %d\n%s%s", code, out, errOut)
			}
			m := regexp.MustCompile(`· (\d+) nodes · (\d+) secrets redacted\n`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("the import summary does not say what it redacted:\n%s%s", out, errOut)
			}
			if n, _ := strconv.Atoi(m[2]); n < len(kinds) {
				t.Errorf("%d secrets redacted, want at least the %d kinds", n, len(kinds))
			}
			if !strings.Contains(errOut, "values that look like secrets") {
				t.Errorf("stderr does not list what was redacted:\n%s", errOut)
			}
			files := map[string][]byte{}
			for _, suffix := range []string{"", "-wal", "-shm"} {
				b, err := os.ReadFile(db + suffix)
				if err != nil && suffix != "-shm" {
					t.Fatalf("%s: %v", filepath.Base(db+suffix), err)
				}
				files[filepath.Base(db+suffix)] = b
			}
			if len(files["runs.db-wal"]) == 0 {
				t.Fatal("no -wal to read: the test proves nothing of it")
			}
			// every output
			var streams bytes.Buffer
			cmd := func(args ...string) string {
				t.Helper()
				o, e, _ := inspectRun(t, f, args...)
				streams.WriteString(o + e)
				return o
			}
			nodes, _ := strconv.Atoi(m[1])
			sawRedacted, sawNote := false, false
			llm := 0
			for i := 1; i <= nodes; i++ {
				o := cmd("show", fmt.Sprintf("n%d", i))
				sawRedacted = sawRedacted || strings.Contains(o, "[redacted]")
				if strings.Contains(o, "- model:") {
					sawNote = sawNote || strings.Contains(o, "taken for secrets read [redacted]")
					if llm++; llm <= 3 {
						cmd("ask", fmt.Sprintf("n%d", i), "--dry-run")
					}
				}
			}
			if !sawRedacted || !sawNote {
				t.Errorf("show: [redacted] shown %v, the request's note saying so %v", sawRedacted, sawNote)
			}
			for _, format := range []string{"text", "markdown", "json", "sarif", "junit"} {
				cmd("audit", "--format", format)
			}
			cmd("graph")
			cmd("timeline")
			cmd("cache")
			cmd("runs", "--json")
			outDir := t.TempDir()
			cmd("export", "--format", "otlp", "-o", filepath.Join(outDir, "run.otlp.jsonl"))
			cmd("export", "latest", "-o", filepath.Join(outDir, "copy.db"))
			cmd("report", "-o", filepath.Join(outDir, "report.html"))
			for _, name := range []string{"run.otlp.jsonl", "copy.db", "report.html"} {
				b := mustRead(t, filepath.Join(outDir, name))
				if len(b) == 0 {
					t.Errorf("%s is empty", name)
				}
				files[name] = b
			}
			files["the output streams"] = streams.Bytes()
			for _, l := range secretsLeft(kinds, files) {
				t.Error(l)
			}
		})
	}
}

// TestCollect_SecretsRedacted: spans posted to inspect collect whose
// attributes hold every kind of secret are recorded without them.
func TestCollect_SecretsRedacted(t *testing.T) {
	kinds := secrettest.Kinds(12)
	raw := mustRead(t, filepath.Join("..", "..", "importers", "otlp", "testdata", "langgraph-mapreduce.otlp.jsonl"))
	body := injectSecrets(t, raw, secrettest.Text(kinds))
	f, _, _ := testFactory(t)
	ctx, stop := context.WithCancel(t.Context())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- collectRun(ctx, &CollectOptions{F: f, Listen: "127.0.0.1:0", Ready: func(a string) { ready <- a }})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("collect ended before listening: %v", err)
	}
	for i, line := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
		resp, err := http.Post("http://"+addr+"/v1/traces", "application/json", bytes.NewReader(line))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("line %d: %d %s", i+1, resp.StatusCode, b)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, _, _ := inspectRun(t, f, "runs", "--json")
	if !strings.Contains(out, `"id"`) {
		t.Fatalf("no run was collected: %s", out)
	}
	files := map[string][]byte{}
	matches, _ := filepath.Glob(f.DBPath + "*")
	for _, p := range matches {
		files[filepath.Base(p)] = mustRead(t, p)
	}
	shown, _, _ := inspectRun(t, f, "show", "n2")
	files["show"] = []byte(shown)
	if !strings.Contains(string(files["runs.db"])+string(files["runs.db-wal"]), "[redacted]") {
		t.Error("no [redacted] in the database: the secrets never reached it, so this test proves nothing")
	}
	for _, l := range secretsLeft(kinds, files) {
		t.Error(l)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMCP_SecretsRedacted: what inspect mcp hands a coding agent of an
// imported session that held every kind of secret — the runs, the graph,
// the audit, every node, as text and structured content — holds none.
func TestMCP_SecretsRedacted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the inspect binary")
	}
	kinds := secrettest.Kinds(13)
	big, err := importerstest.BigClaudeCode(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	session := filepath.Join(dir, "session.jsonl")
	if err := os.WriteFile(session, injectSecrets(t, mustRead(t, big), secrettest.Text(kinds)), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _, _ := testFactory(t)
	f.DBPath = filepath.Join(dir, "runs.db")
	out, errOut, code := inspectRun(t, f, "import", "--format", "claude-code", session)
	m := regexp.MustCompile(`· (\d+) nodes · \d+ secrets redacted`).FindStringSubmatch(out)
	if code != ExitOK || m == nil {
		t.Fatalf("import: exit %d\n%s%s", code, out, errOut)
	}
	s := mcpSession(t, dir, nil, "--db", f.DBPath)
	var answers bytes.Buffer
	call := func(name string, args map[string]any) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("call %s %v: %v", name, args, err)
		}
		b, _ := json.Marshal(res)
		answers.Write(b)
	}
	call("list_runs", map[string]any{})
	call("graph", map[string]any{})
	call("audit", map[string]any{})
	nodes, _ := strconv.Atoi(m[1])
	for i := 1; i <= nodes; i++ {
		call("show_node", map[string]any{"node": fmt.Sprintf("n%d", i)})
	}
	if !strings.Contains(answers.String(), "[redacted]") {
		t.Fatal("no answer shows [redacted]: the test proves nothing")
	}
	for _, l := range secretsLeft(kinds, map[string][]byte{"the MCP answers": answers.Bytes()}) {
		t.Error(l)
	}
}
