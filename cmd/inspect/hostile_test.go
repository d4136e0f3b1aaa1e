package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/inspect-dev/inspect/runtime/runtimetest"
)

// The hostile fixture (testdata/hostile) carries terminal escapes of every
// class in its task, workspace files, tool results and a model-chosen tool
// name, answers, hand-off reason, fork instructions and branch names,
// prompts and an error (issue 11, defect 1). They reached the terminal raw
// from show, run, audit, diff and ask. TestHostile runs it through every
// command and format, piped and on a real pseudo-terminal.

// hostileServer streams an answer and, for a second path, an error, both
// carrying escapes: what `inspect ask` prints.
func hostileServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/fail/") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"bad \u001b]0;pwned\u0007 \u001b[2J request","type":"invalid_request_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, piece := range []string{"Because \x1b]52;c;cHduZWQ=", "\x07 and \x1b", "[2J \u009b2J done"} {
			b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": piece}}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// recordHostile records the hostile project into dir/runs.db.
func recordHostile(t *testing.T, dir string) string {
	t.Helper()
	project := filepath.Join(dir, "hostile")
	if err := runtimetest.CopyDir(filepath.Join("testdata", "hostile"), project); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "runs.db")
	f, _, errOut := testFactory(t)
	f.DBPath = db
	if code := run(context.Background(), f, []string{"run", project, "--script", filepath.Join(project, "script.yaml")}); code != ExitOK {
		t.Fatalf("record the hostile project: exit %d: %s", code, errOut)
	}
	return db
}

// hostileCommands are the human-output commands, run piped and on a pty.
func hostileCommands(db, project, base string) [][]string {
	cmds := [][]string{
		{"run", project, "--script", filepath.Join(project, "script.yaml")},
		{"runs"},
		{"graph"}, {"graph", "--format", "dot"}, {"timeline"}, {"timeline", "--width", "200"},
		{"audit"}, {"audit", "--format", "markdown"},
		{"diff", "latest", "latest"},
		{"ask", "n2", "--base-url", base},
		{"ask", "n2", "--base-url", base + "/fail"},
		{"ask", "n2", "--dry-run"},
		{"run", project, "--script", filepath.Join(project, "script.yaml"), "--task", "\x1b]0;title\x07 again \u009b2J"},
	}
	for i := 1; i <= 19; i++ {
		cmds = append(cmds, []string{"show", fmt.Sprintf("n%d", i)})
	}
	return append(cmds, []string{"show", "n99"}, []string{"ask", "n3"}, []string{"graph", "nosuchrun"})
}

// badControl finds a byte sequence that could act on a terminal: any C0
// control but newline and tab (and carriage return, which a pty's line
// discipline adds, when cr), DEL, a C1 control, or an ESC — except, when
// sgr, glamour's own colour sequences (ESC [ digits ; m).
func badControl(b []byte, cr, sgr bool) string {
	s := string(b)
	if sgr {
		s = regexp.MustCompile(`\x1b\[[0-9;]*m`).ReplaceAllString(s, "")
	}
	for i, r := range s {
		switch {
		case r == '\n' || r == '\t' || (cr && r == '\r'):
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return fmt.Sprintf("%U at %d in …%q…", r, i, s[max(0, i-40):min(len(s), i+40)])
		}
	}
	return ""
}

func TestHostile_Piped(t *testing.T) {
	dir := t.TempDir()
	db := recordHostile(t, dir)
	srv := hostileServer(t)
	env := map[string]string{"OPENAI_API_KEY": "test-key-hostile-1234"}
	for _, args := range hostileCommands(db, filepath.Join(dir, "hostile"), srv.URL) {
		f, out, errOut := testFactoryEnv(t, env)
		f.DBPath = db
		run(context.Background(), f, args)
		for name, b := range map[string][]byte{"stdout": out.Bytes(), "stderr": errOut.Bytes()} {
			if name == "stdout" && args[len(args)-1] == "--dry-run" {
				// piped, the request body is data: its exact bytes, valid JSON
				if !json.Valid(b) || bytes.ContainsAny(b, "\x1b\x07\x00") {
					t.Errorf("inspect %q: the body is not the JSON that was sent", args)
				}
				continue
			}
			if bad := badControl(b, false, false); bad != "" {
				t.Errorf("inspect %q: %s has %s", args, name, bad)
			}
		}
	}
	// Shown, not swallowed: the escapes are written visibly.
	f, out, _ := testFactory(t)
	f.DBPath = db
	run(context.Background(), f, []string{"show", "n3"})
	if !strings.Contains(out.String(), `x\x1b]52;c;cHduZWQ=\x07\x1b[2J`) {
		t.Errorf("show n3 does not show the escapes visibly:\n%s", out)
	}

	// Data formats carry the text as data, valid for their format.
	for _, args := range [][]string{
		{"audit", "--format", "json"}, {"diff", "latest", "latest", "--format", "json"},
		{"graph", "--format", "json"}, {"runs", "--json"},
	} {
		f, out, errOut := testFactory(t)
		f.DBPath = db
		if code := run(context.Background(), f, args); code != ExitOK {
			t.Fatalf("inspect %q: exit %d: %s", args, code, errOut)
		}
		var v any
		if err := json.Unmarshal(out.Bytes(), &v); err != nil {
			t.Errorf("inspect %q: not JSON: %v", args, err)
		}
		if bytes.ContainsAny(out.Bytes(), "\x1b\x07\x00") {
			t.Errorf("inspect %q: a raw control character in JSON", args)
		}
		if args[0] == "graph" || args[0] == "runs" {
			if !strings.Contains(fmt.Sprint(v), "\x1b]0;") {
				t.Errorf("inspect %q: the decoded JSON does not carry the text", args)
			}
		}
	}
	for _, args := range [][]string{
		{"audit", "--format", "sarif"}, {"diff", "latest", "latest", "--format", "sarif"},
		{"audit", "--format", "junit"}, {"diff", "latest", "latest", "--format", "junit"},
	} {
		f, out, errOut := testFactory(t)
		f.DBPath = db
		if code := run(context.Background(), f, args); code != ExitOK {
			t.Fatalf("inspect %q: exit %d: %s", args, code, errOut)
		}
		if bytes.ContainsAny(out.Bytes(), "\x1b\x07\x00") {
			t.Errorf("inspect %q: a raw control character", args)
		}
		if args[len(args)-1] == "sarif" {
			if !json.Valid(out.Bytes()) {
				t.Errorf("inspect %q: not JSON", args)
			}
			continue
		}
		dec := xml.NewDecoder(bytes.NewReader(out.Bytes()))
		for {
			if _, err := dec.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Errorf("inspect %q: not well-formed XML: %v", args, err)
				break
			}
		}
	}
}

// TestHostile_Terminal runs the same commands as processes on a real
// pseudo-terminal, with colour (glamour's styles allowed, nothing else)
// and with NO_COLOR (nothing at all).
func TestHostile_Terminal(t *testing.T) {
	dir := t.TempDir()
	db := recordHostile(t, dir)
	srv := hostileServer(t)
	for _, noColor := range []string{"", "1"} {
		for _, args := range hostileCommands(db, filepath.Join(dir, "hostile"), srv.URL) {
			out := onTerminal(t, append(args, "--db", db), "NO_COLOR="+noColor, "OPENAI_API_KEY=test-key-hostile-1234")
			if bad := badControl(out, true, noColor == ""); bad != "" {
				t.Errorf("NO_COLOR=%q inspect %q on a terminal: %s", noColor, args, bad)
			}
		}
	}
}

// onTerminal runs this test binary as inspect with args, its stdout and
// stderr on a new pseudo-terminal, and returns what the terminal received.
func onTerminal(t *testing.T, args []string, env ...string) []byte {
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
	if err := cmd.Start(); err != nil {
		tty.Close()
		t.Fatal(err)
	}
	tty.Close()
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&buf, ptmx); close(done) }() // EIO once the process is gone
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("inspect %q hung on the terminal", args)
	}
	<-done
	return buf.Bytes()
}
