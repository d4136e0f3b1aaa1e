package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
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
