package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// onControllingTerminal is onTerminal with the pseudo-terminal as the
// process's controlling terminal, the process in its foreground group —
// as a shell runs it. Only there does a terminal query get sent: termenv
// asks a terminal that is not its controller nothing. The terminal never
// answers, as tmux, CI's ptys and Emacs do not.
func onControllingTerminal(t *testing.T, args []string, env ...string) ([]byte, time.Duration) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skip("no pseudo-terminal here:", err)
	}
	defer ptmx.Close()
	pty.Setsize(ptmx, &pty.Winsize{Rows: 50, Cols: 100})
	argv, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), append(env, "INSPECT_TEST_ARGS="+string(argv), "TERM=xterm-256color", "COLORTERM=truecolor")...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		tty.Close()
		t.Fatal(err)
	}
	tty.Close()
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&buf, ptmx); close(done) }()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("inspect %q hung on the terminal", args)
	}
	took := time.Since(start)
	<-done
	return buf.Bytes(), took
}

// TestTerminal_NoQueries: the commands that render Markdown with glamour
// on a terminal (audit, show, cache, ask's answer) pick their style
// without asking the terminal: nothing like OSC 11 ("what is your
// background?", ESC ] 11 ; ?) or a cursor position report (ESC [ 6 n) is
// written — a terminal that does not answer (tmux, CI ptys, Emacs) made
// each wait 5 seconds — with GLAMOUR_STYLE unset or "auto", and the light
// style is taken where COLORFGBG says the background is light.
func TestTerminal_NoQueries(t *testing.T) {
	dir := t.TempDir()
	db := recordHostile(t, dir)
	srv := hostileServer(t)
	for _, style := range []string{"", "auto"} {
		for _, args := range [][]string{{"audit"}, {"show", "n2"}, {"cache"}, {"ask", "n2", "--base-url", srv.URL}} {
			out, took := onControllingTerminal(t, append(args, "--db", db), "GLAMOUR_STYLE="+style, "NO_COLOR=", "COLORFGBG=",
				"OPENAI_API_KEY=test-key-terminal-1234")
			t.Logf("GLAMOUR_STYLE=%q inspect %q: %s", style, args, took.Round(time.Millisecond))
			for _, q := range []string{"\x1b]11;?", "\x1b]10;?", "\x1b[6n", "\x1b]"} {
				if i := bytes.Index(out, []byte(q)); i >= 0 {
					t.Errorf("GLAMOUR_STYLE=%q inspect %q asked the terminal %q: …%q…", style, args, q, out[max(0, i-40):min(len(out), i+40)])
				}
			}
			if !bytes.Contains(out, []byte("\x1b[")) {
				t.Errorf("GLAMOUR_STYLE=%q inspect %q wrote no styles: the test proves nothing of glamour\n%q", style, args, out)
			}
		}
	}
	// COLORFGBG's background 15 is light: the light style's text colour
	// (234), not the dark style's (252)
	light, _ := onControllingTerminal(t, []string{"audit", "--db", db}, "GLAMOUR_STYLE=", "NO_COLOR=", "COLORFGBG=0;15")
	dark, _ := onControllingTerminal(t, []string{"audit", "--db", db}, "GLAMOUR_STYLE=", "NO_COLOR=", "COLORFGBG=15;0")
	if !bytes.Contains(light, []byte("38;5;234")) || !bytes.Contains(dark, []byte("38;5;252")) {
		t.Errorf("COLORFGBG does not choose the style:\nlight %q\ndark %q", head(light), head(dark))
	}
}

func head(b []byte) []byte { return b[:min(len(b), 300)] }

// onTerminalWithInput is onTerminal with stdin a pipe: in is written to
// it, and it is closed once the terminal has received what done accepts
// (or at once when done is nil).
func onTerminalWithInput(t *testing.T, in string, done func([]byte) bool, args []string) []byte {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skip("no pseudo-terminal here:", err)
	}
	defer ptmx.Close()
	pty.Setsize(ptmx, &pty.Winsize{Rows: 50, Cols: 100})
	stdin, feed, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	argv, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "INSPECT_TEST_ARGS="+string(argv), "TERM=xterm-256color")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, tty, tty
	if err := cmd.Start(); err != nil {
		tty.Close()
		t.Fatal(err)
	}
	tty.Close()
	stdin.Close()
	var mu sync.Mutex
	var buf bytes.Buffer
	copied := make(chan struct{})
	go func() {
		b := make([]byte, 32<<10)
		for {
			n, err := ptmx.Read(b)
			mu.Lock()
			buf.Write(b[:n])
			mu.Unlock()
			if err != nil {
				close(copied)
				return
			}
		}
	}()
	feed.WriteString(in)
	for deadline := time.Now().Add(time.Minute); done != nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		ok := done(buf.Bytes())
		mu.Unlock()
		if ok {
			break
		}
	}
	feed.Close()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("inspect %q hung on the terminal", args)
	}
	<-copied
	return buf.Bytes()
}

// rawControl finds a character a terminal acts on that JSON on a
// terminal must carry escaped: C1 controls, DEL, ESC and the bidi
// controls, raw.
func rawControl(b []byte) string {
	s := string(b)
	for i, r := range s {
		if r == 0x7f || r == 0x1b || (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return fmt.Sprintf("%U at %d in …%q…", r, i, s[max(0, i-60):min(len(s), i+20)])
		}
	}
	return ""
}

// TestJSON_OnTerminal: inspect mcp on a terminal (someone trying it by
// hand), and the JSON formats there, write C1 controls, DEL and bidi
// controls as JSON escapes (\u009b, \u007f, \u202e): the terminal acts on
// none, and every message and document still parses, carrying the text.
func TestJSON_OnTerminal(t *testing.T) {
	dir := t.TempDir()
	db := recordHostile(t, dir)
	f, _, _ := testFactory(t)
	f.DBPath = db
	task := "del\x7f c1\u009b2J bidi\u202eevil\u2066x\u2069"
	if _, errOut, code := inspectRun(t, f, "run", filepath.Join(dir, "hostile"), "--script", filepath.Join(dir, "hostile", "script.yaml"), "--task", task); code != ExitOK {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	req := func(id int, method string, params any) string {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		return string(b) + "\n"
	}
	in := req(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "1"}}) +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		req(2, "tools/call", map[string]any{"name": "list_runs", "arguments": map[string]any{}}) +
		req(3, "tools/call", map[string]any{"name": "show_node", "arguments": map[string]any{"node": "n1"}}) +
		req(4, "tools/call", map[string]any{"name": "graph", "arguments": map[string]any{}})
	answered := func(b []byte) bool { // the server may answer in any order
		for _, id := range []string{`"id":1,`, `"id":2,`, `"id":3,`, `"id":4,`} {
			if !bytes.Contains(b, []byte(id)) {
				return false
			}
		}
		return true
	}
	out := onTerminalWithInput(t, in, answered, []string{"mcp", "--db", db})
	if bad := rawControl(out); bad != "" {
		t.Errorf("inspect mcp on a terminal wrote %s", bad)
	}
	var decoded strings.Builder
	answers := 0
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimRight(line, "\r")
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var msg map[string]any
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			t.Errorf("a message is not JSON (%v): %.200s", err, line)
			continue
		}
		if msg["id"] != nil {
			answers++
		}
		decoded.WriteString(fmt.Sprint(msg))
	}
	if answers != 4 {
		t.Errorf("%d answers, want 4:\n%s", answers, out)
	}
	if !strings.Contains(decoded.String(), "\u009b2J") || !strings.Contains(decoded.String(), "\x7f") {
		t.Errorf("the answers do not carry the task's controls as data:\n%.2000s", decoded.String())
	}
	for _, args := range [][]string{{"graph", "--format", "json"}, {"runs", "--json"}, {"audit", "--format", "json"}} {
		out := onTerminalWithInput(t, "", nil, append(args, "--db", db))
		if bad := rawControl(out); bad != "" {
			t.Errorf("inspect %q on a terminal wrote %s", args, bad)
		}
		doc := strings.ReplaceAll(string(out), "\r\n", "\n")
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Errorf("inspect %q on a terminal is not JSON: %v\n%.300s", args, err, doc)
		} else if args[0] != "audit" && !strings.Contains(fmt.Sprint(v), "\x7f") {
			t.Errorf("inspect %q on a terminal does not carry the DEL as data", args)
		}
	}
}
