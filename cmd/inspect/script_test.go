package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/inspect-dev/inspect/runtime/runtimetest"
)

// TestMain turns this test binary into the inspect command in two ways:
//
//   - INSPECT_TEST_ARGS set (a JSON array of arguments): run inspect with
//     them and exit; crash_test.go and graphviz_cache_test.go start the binary so.
//   - Run under the name "inspect": testscript.Main puts a copy of the binary
//     by that name on the PATH of every script in testdata/script, so
//     `exec inspect …` runs the real command in a process of its own.
//
// Otherwise it runs the tests.
func TestMain(m *testing.M) {
	if args := os.Getenv("INSPECT_TEST_ARGS"); args != "" {
		var argv []string
		if err := json.Unmarshal([]byte(args), &argv); err != nil {
			os.Exit(99)
		}
		os.Exit(Main(argv, os.Stdin, os.Stdout, os.Stderr))
	}
	testscript.Main(m, map[string]func(){
		"inspect": func() { os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the end-to-end workflows in testdata/script/*.txtar: each
// script is a user story told with `exec inspect …` in a folder of its own.
//
// Every script starts with INSPECT_DB=$WORK/runs.db, NO_COLOR=1 and no
// OPENAI_API_KEY or OPENAI_BASE_URL (testscript passes on no other
// variable), and has two commands besides testscript's own:
//
//	cpfixture NAME            copies the repository's fixtures/NAME to $WORK/NAME
//	exitcode N PROG [ARGS...] runs PROG and wants exit code N exactly (0, 1, 2
//	                          or 3, DESIGN §11), and no Go stack trace on stderr
//	pastehints [N]            pastes every `next:` and `try:` line the last
//	                          command printed into sh, as a user would, and
//	                          wants each to exit 0; with N, wants N lines
//	signalafter SIG RE FILE inspect ARGS...
//	                          runs inspect in a process of its own and, once a
//	                          line of its stderr matches RE, sends it SIG (INT:
//	                          Ctrl-C; KILL: kill -9); its stderr goes to FILE
//
// Run one script with `go test ./cmd/inspect -run TestScripts/errors`; add
// -testwork to keep its $WORK.
func TestScripts(t *testing.T) {
	fixtures, err := filepath.Abs(filepath.Join("..", "..", "fixtures"))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("INSPECT_DB", filepath.Join(env.WorkDir, "runs.db"))
			env.Setenv("NO_COLOR", "1")
			// testscript sets HOME=/no-home, where there is no user
			// cache folder: a drawing would compile Graphviz again
			// (about a second). Share this process's cache folder
			// (mermaid/render.CacheDir), when it has one.
			if dir, err := os.UserCacheDir(); err == nil {
				env.Setenv("XDG_CACHE_HOME", dir)
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"cpfixture": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 1 {
					ts.Fatalf("usage: cpfixture NAME")
				}
				ts.Check(runtimetest.CopyDir(filepath.Join(fixtures, args[0]), ts.MkAbs(args[0])))
			},
			"exitcode":    cmdExitCode,
			"pastehints":  cmdPasteHints,
			"signalafter": cmdSignalAfter,
		},
	})
}

// goStackTrace matches what a panic or a fatal runtime error prints.
var goStackTrace = regexp.MustCompile(`(?m)^(panic: |fatal error: |goroutine \d+ \[)`)

// cmdExitCode is the script command `exitcode N PROG [ARGS...]`: testscript's
// `! exec` only tells success from failure, and inspect's failures differ
// (1 findings over a threshold, 2 a usage or input error, 3 inspect itself
// failed). Its stdout and stderr are left for `stdout` and `stderr`.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("exitcode does not take !; write the code you want")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %q is not a number", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		got = exitErr.ExitCode()
	default:
		ts.Fatalf("%s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
	if goStackTrace.MatchString(ts.ReadFile("stderr")) {
		ts.Fatalf("%s printed a Go stack trace", args[1])
	}
}

// hintLine is a `next:` or `try:` line: what follows is a command line.
var hintLine = regexp.MustCompile(`(?m)^(?:next|try):\s+(inspect .*)$`)

// cmdPasteHints is the script command `pastehints [N]`: DESIGN §11 says
// every next:/try: line a command prints can be pasted as it is, so each
// one of the last command's output is run by a real shell (quotes, spaces
// and all) in the script's folder and environment, and must succeed.
func cmdPasteHints(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) > 1 {
		ts.Fatalf("usage: pastehints [N]")
	}
	var lines []string
	for _, m := range hintLine.FindAllStringSubmatch(ts.ReadFile("stdout")+ts.ReadFile("stderr"), -1) {
		lines = append(lines, m[1])
	}
	if len(args) == 1 {
		if n, err := strconv.Atoi(args[0]); err != nil || n != len(lines) {
			ts.Fatalf("%d hint lines, want %s: %q", len(lines), args[0], lines)
		}
	}
	if len(lines) == 0 {
		ts.Fatalf("the last command printed no next: or try: line")
	}
	for _, l := range lines {
		ts.Logf("paste: %s", l)
		if err := ts.Exec("sh", "-c", l); err != nil {
			ts.Fatalf("pasted %q: %v\n%s", l, err, ts.ReadFile("stderr"))
		}
		if goStackTrace.MatchString(ts.ReadFile("stderr")) {
			ts.Fatalf("pasted %q: a Go stack trace", l)
		}
	}
}

// cmdSignalAfter is the script command `signalafter SIG RE FILE inspect
// ARGS...`: a user's Ctrl-C (INT) or a crash (KILL) in the middle of a run,
// at the moment its progress shows a line matching RE, not after a guessed
// delay. The process runs with the script's inspect variables and folder;
// its stderr is written to FILE for `grep`. It fails when inspect ends
// before RE shows.
func cmdSignalAfter(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 5 || args[3] != "inspect" {
		ts.Fatalf("usage: signalafter INT|KILL REGEXP FILE inspect ARGS...")
	}
	sig := map[string]os.Signal{"INT": os.Interrupt, "KILL": os.Kill}[args[0]]
	if sig == nil {
		ts.Fatalf("signalafter: signal %q is not INT or KILL", args[0])
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	argv, _ := json.Marshal(args[4:])
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = []string{"INSPECT_TEST_ARGS=" + string(argv), "PATH=" + ts.Getenv("PATH"), "HOME=" + ts.Getenv("HOME"),
		"TMPDIR=" + ts.Getenv("TMPDIR"), "INSPECT_DB=" + ts.Getenv("INSPECT_DB"), "NO_COLOR=1"}
	stderr, err := cmd.StderrPipe()
	ts.Check(err)
	ts.Check(cmd.Start())
	timer := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	var log strings.Builder
	sent := false
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if !sent && re.MatchString(sc.Text()) {
			ts.Check(cmd.Process.Signal(sig))
			sent = true
		}
	}
	cmd.Wait()
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), []byte(log.String()), 0o644))
	if !sent {
		ts.Fatalf("signalafter: inspect ended before a stderr line matched %q:\n%s", args[1], log.String())
	}
}
