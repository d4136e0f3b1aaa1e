package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/inspect-dev/inspect/internal/mdterm"
)

// longAgentSession writes a Claude Code session whose one sub-agent's
// type is name, and returns its path.
func longAgentSession(t testing.TB, dir, name string) string {
	t.Helper()
	env := func(typ, uuid, at string) map[string]any {
		return map[string]any{"type": typ, "uuid": uuid, "sessionId": "long", "timestamp": "2026-03-01T10:00:" + at + ".000Z",
			"cwd": "/nonexistent/app", "version": "2.1.40", "isSidechain": false, "userType": "external"}
	}
	var lines []map[string]any
	m := env("user", "u1", "01")
	m["message"] = map[string]any{"role": "user", "content": "do it"}
	lines = append(lines, m)
	m = env("assistant", "u2", "02")
	m["message"] = map[string]any{"id": "m1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "Task",
			"input": map[string]any{"description": "job", "prompt": "do the job", "subagent_type": name}}},
		"usage": map[string]any{"input_tokens": 3, "output_tokens": 5}}
	lines = append(lines, m)
	m = env("user", "u3", "05")
	m["message"] = map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "done"}}}
	m["toolUseResult"] = map[string]any{"status": "completed", "totalDurationMs": 2000}
	lines = append(lines, m)
	var b strings.Builder
	for _, l := range lines {
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	p := filepath.Join(dir, "long.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// TestShow_LongWordOnTerminal: a sub-agent type of 100,000 characters is
// shown on a terminal 100 columns wide — every character of it, in lines
// that fit the terminal. glamour left the word whole on one line, and
// building it took time in the square of its length (29 s; see
// BenchmarkGlamourInput_LongWord).
func TestShow_LongWordOnTerminal(t *testing.T) {
	long := strings.Repeat("x", 100000)
	dir := t.TempDir()
	f, _, _ := testFactoryEnv(t, map[string]string{"GLAMOUR_STYLE": "dark"})
	f.DBPath = filepath.Join(dir, "runs.db")
	if out, errOut, code := inspectRun(t, f, "import", "--format", "claude-code", longAgentSession(t, dir, long)); code != ExitOK {
		t.Fatalf("import: exit %d\n%s%s", code, out, errOut)
	}
	g, out, errOut := testFactoryEnv(t, map[string]string{"GLAMOUR_STYLE": "dark"})
	g.DBPath = f.DBPath
	g.IO.OutTTY, g.IO.NoColor, g.IO.Width = true, false, 100
	if code := run(context.Background(), g, []string{"show", "n3"}); code != ExitOK {
		t.Fatalf("show n3: exit %d: %s", code, errOut)
	}
	text := sgr.ReplaceAllString(out.String(), "")
	if !strings.Contains(text, "Branch job") {
		t.Fatalf("show n3 is not the fork's page:\n%.2000s", text)
	}
	if n := strings.Count(text, "x"); n < len(long) {
		t.Errorf("%d of the agent type's %d characters shown", n, len(long))
	}
	for i, line := range strings.Split(text, "\n") {
		if w := utf8.RuneCountInString(line); w > 100 {
			t.Fatalf("line %d is %d columns wide, on a terminal of 100: %.120q…", i+1, w, line)
		}
	}
}

// TestAudit_TerminalKeepsTokensWhole: inspect audit on a terminal (glamour)
// of the missed fan-out fixture, at every width from 60 to 120 columns:
// every path, file name or identifier of the audit's Markdown that fits a
// line (agents/fork-instructions.md, read_file, n2, a --flag) is on one
// line of the output, whole, with plain hyphens, table cells included;
// at 60 and 80 columns every word of a table cell is whole on a line
// (before: glamour's tables cut a cell where its column ended, inside a
// word — a table too wide is now a list — and glamour broke after hyphens, "agents/fork-\ninstructions.md", and the long-word
// breaks cut inside any word over half a line, "fork-instructions.\nmd").
func TestAudit_TerminalKeepsTokensWhole(t *testing.T) {
	dir := filepath.Join("..", "..", "fixtures", "audit-fanout-missed")
	f, _, errOut := testFactory(t)
	if code := run(context.Background(), f, []string{"run", dir, "--script", filepath.Join(dir, "script.yaml")}); code != ExitOK {
		t.Fatalf("run: exit %d\n%s", code, errOut)
	}
	md, _, code := inspectRun(t, f, "audit", "--format", "markdown")
	if code != ExitOK && code != ExitFindings {
		t.Fatalf("audit --format markdown: exit %d", code)
	}
	token := regexp.MustCompile(`[\p{L}\p{N}][\p{L}\p{N}_]*(?:[-./][\p{L}\p{N}_]+)+`)
	tokens := map[string]bool{}
	cellWords := map[string]bool{} // every word of a table cell
	for _, line := range strings.Split(md, "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "|") && !strings.HasPrefix(t, "| ---") {
			for _, c := range strings.Split(strings.Trim(t, "|"), "|") {
				for _, w := range strings.Fields(c) {
					if w = strings.Trim(w, "`*"); w != "" && utf8.RuneCountInString(w) <= 40 {
						cellWords[w] = true
					}
				}
			}
		}
		for _, tok := range token.FindAllString(line, -1) {
			if strings.ContainsAny(tok, "-/") {
				tokens[tok] = true
			}
		}
	}
	if !tokens["agents/fork-instructions.md"] {
		t.Fatalf("the audit does not name agents/fork-instructions.md; pick a fixture that does:\n%s", md)
	}
	for width := 60; width <= 120; width++ {
		g, out, errOut := testFactoryEnv(t, map[string]string{"GLAMOUR_STYLE": "dark"})
		g.DBPath = f.DBPath
		g.IO.OutTTY, g.IO.NoColor, g.IO.Width = true, false, width
		if code := run(context.Background(), g, []string{"audit"}); code != ExitOK && code != ExitFindings {
			t.Fatalf("audit at %d columns: exit %d: %s", width, code, errOut)
		}
		text := sgr.ReplaceAllString(out.String(), "")
		if strings.ContainsAny(text, mdterm.HeldPoints) {
			t.Fatalf("at %d columns a held wrap point reached the terminal", width)
		}
		for tok := range tokens {
			if utf8.RuneCountInString(tok) <= width-mdterm.Indent && !strings.Contains(text, tok) {
				t.Errorf("at %d columns %q is broken across lines", width, tok)
			}
		}
		if width != 60 && width != 80 {
			continue
		}
		lines := strings.Split(text, "\n")
		for w := range cellWords {
			whole := false
			for _, l := range lines {
				if strings.Contains(" "+l+" ", " "+w+" ") || strings.Contains(l, w+";") || strings.Contains(l, w+":") {
					whole = true
					break
				}
			}
			if !whole {
				t.Errorf("at %d columns the table cell word %q is cut", width, w)
			}
		}
	}
}
