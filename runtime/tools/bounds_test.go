package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/runtime/project"
)

// Bounds of DESIGN §11 (issue 11, defects 3, 4, 5, 11), each with real
// files, FIFOs and processes.

// callDone runs a tool call and fails the test if it does not return
// within a minute: before the fix a FIFO blocked for ever.
func callDone(t *testing.T, w *Workspace, tool, args string) (string, error) {
	t.Helper()
	type res struct {
		out string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		out, err := w.Call(context.Background(), tool, args)
		ch <- res{out, err}
	}()
	select {
	case r := <-ch:
		return r.out, r.err
	case <-time.After(time.Minute):
		t.Fatalf("%s %s blocked", tool, args)
		return "", nil
	}
}

// TestWorkspace_RefusesFIFOs: `mkfifo workspace/fifo` and a read_file,
// write_file or list_dir of it blocked the run for ever; every built-in
// tool now refuses what is not a regular file or folder.
func TestWorkspace_RefusesFIFOs(t *testing.T) {
	w, _ := workspace(t)
	fifo := filepath.Join(w.Dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	for _, c := range []struct{ tool, args string }{
		{"read_file", `{"path": "fifo"}`},
		{"read_file", `{"path": "fifo", "start_line": 1, "end_line": 2}`},
		{"write_file", `{"path": "fifo", "content": "x"}`},
		{"list_dir", `{"path": "fifo"}`},
	} {
		out, err := callDone(t, w, c.tool, c.args)
		var te *Error
		if !errors.As(err, &te) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s %s = %q, %v; want a refusal saying it is not a regular file", c.tool, c.args, out, err)
		}
	}
	// A reader on the other end must not make write_file write into it. It
	// opens without blocking, so it is there before the call, for the call.
	reader, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if _, err := callDone(t, w, "write_file", `{"path": "fifo", "content": "x"}`); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("write_file into a FIFO with a reader = %v, want a refusal", err)
	}
	if _, err := callDone(t, w, "read_file", `{"path": "/dev/zero"}`); err == nil {
		t.Error("read_file of a device outside the workspace was allowed")
	}
	if out, err := callDone(t, w, "find_files", `{"pattern": "fifo"}`); err != nil || !strings.Contains(out, "fifo") {
		t.Errorf("find_files lists a FIFO's name without opening it: %q, %v", out, err)
	}
}

// TestReadFile_HonoursCancel: a read of a huge file stops when the run is
// cancelled (Ctrl-C), not when the file ends.
func TestReadFile_HonoursCancel(t *testing.T) {
	w, _ := workspace(t)
	f, err := os.Create(filepath.Join(w.Dir, "huge.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 40); err != nil { // 1 TiB, sparse: zeros and no newline
		f.Close()
		t.Skip("no sparse files here:", err)
	}
	f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	done := make(chan error, 1)
	go func() {
		_, err := w.Call(ctx, "read_file", `{"path": "huge.bin", "start_line": 2}`)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("read_file after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("read_file of a 1 TiB file ignored the cancellation")
	}
}

// TestReadFile_LongLines: a line over 256 KiB stopped a line range
// silently (sc.Err() was never checked): lines 1–6 came back as 1–3, and
// start_line 5 said the file had 3 lines.
func TestReadFile_LongLines(t *testing.T) {
	w, _ := workspace(t)
	long := strings.Repeat("x", 300<<10)
	os.WriteFile(filepath.Join(w.Dir, "long.txt"), []byte("one\ntwo\nthree\n"+long+"\nfive\nsix"), 0o644)
	out, err := w.Call(context.Background(), "read_file", `{"path": "long.txt", "start_line": 5, "end_line": 6}`)
	if err != nil || out != "five\nsix\n" {
		t.Errorf("lines 5–6 = %q, %v; want five and six", out, err)
	}
	out, err = w.Call(context.Background(), "read_file", `{"path": "long.txt", "start_line": 1, "end_line": 6}`)
	if err != nil || !strings.HasPrefix(out, "one\ntwo\nthree\nxxx") || !strings.Contains(out, "truncated at 262144 bytes") {
		t.Errorf("lines 1–6 = %.40q…, %v; want the lines up to the cap and a truncation note", out, err)
	}
	out, err = w.Call(context.Background(), "read_file", `{"path": "long.txt", "start_line": 4, "end_line": 4}`)
	if err != nil || !strings.Contains(out, "truncated") || len(out) > maxRead+200 {
		t.Errorf("line 4 alone: %d bytes, %v; want it cut at the cap with a note", len(out), err)
	}
	if _, err := w.Call(context.Background(), "read_file", `{"path": "long.txt", "start_line": 7}`); err == nil || !strings.Contains(err.Error(), "has 6 lines") {
		t.Errorf("start_line 7 = %v, want 'has 6 lines'", err)
	}
}

func commandTool(name string, script string) *project.CommandTool {
	return &project.CommandTool{Name: name, Command: []string{"sh", "-c", script}, Timeout: 30 * time.Second}
}

// TestRunCommand_OutputBounded: 100 MB of stdout became 1.3 GB of memory
// and the whole result; it is now read bounded and capped at 256 KiB with
// a note saying how much was cut. A failing tool's stdout as its error is
// capped too.
func TestRunCommand_OutputBounded(t *testing.T) {
	dir := t.TempDir()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out, err := RunCommand(context.Background(), dir, commandTool("flood", "head -c 104857600 /dev/zero | tr '\\0' 'a'"), "{}")
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, strings.Repeat("a", DefaultMaxResult)+"\n… [truncated: ") || !strings.Contains(out, "of 104857600 bytes cut") {
		t.Errorf("result = %d bytes ending %q; want the first 256 KiB and a note on the 100 MB", len(out), out[max(0, len(out)-160):])
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 32<<20 {
		t.Errorf("reading 100 MB of output allocated %d MB; want it bounded", grown>>20)
	}

	small := commandTool("small", "printf '%05000d' 0")
	small.MaxResult = 1000
	if out, err := RunCommand(context.Background(), dir, small, "{}"); err != nil || !strings.HasPrefix(out, strings.Repeat("0", 1000)+"\n… [truncated: 4000 of 5000 bytes cut") {
		t.Errorf("maxResult 1000: %q, %v", out, err)
	}

	_, err = RunCommand(context.Background(), dir, commandTool("fails", "head -c 10000000 /dev/zero | tr '\\0' 'e'; exit 3"), "{}")
	if err == nil || len(err.Error()) > 2500 || !strings.Contains(err.Error(), "exited with status 3") || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("failing tool with 10 MB of stdout: %d bytes of error %.80q", len(fmt.Sprint(err)), err)
	}

	if got := Truncate("añb", 3, 2); !strings.HasPrefix(got, "a\n…") {
		t.Errorf("Truncate cuts inside a rune: %q", got)
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	for i := 0; i < 100; i++ {
		if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the tool never wrote its grandchild's pid")
	return 0
}

// gone waits a little for pid to die (SIGKILL is asynchronous).
func gone(pid int) bool {
	for i := 0; i < 200; i++ {
		if !alive(pid) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// TestRunCommand_KillsGrandchildren: a tool that started
// `(sleep 300; touch x) &` left sleep running after it exited or timed
// out. The tool's process group is killed on exit and on timeout, and a
// grandchild holding stdout no longer makes a successful tool fail.
func TestRunCommand_KillsGrandchildren(t *testing.T) {
	dir := t.TempDir()
	out, err := RunCommand(context.Background(), dir, commandTool("bg", "(sleep 300; touch x) & echo $! > pid; echo started"), "{}")
	if err != nil || out != "started\n" {
		t.Fatalf("RunCommand = %q, %v; want the tool's output, not a WaitDelay error", out, err)
	}
	if pid := readPID(t, filepath.Join(dir, "pid")); !gone(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("grandchild %d outlived its tool", pid)
	}

	slow := commandTool("slow", "(sleep 300) & echo $! > pid2; sleep 300")
	slow.Timeout = 300 * time.Millisecond
	_, err = RunCommand(context.Background(), dir, slow, "{}")
	if err == nil || !strings.Contains(err.Error(), "timed out after 300ms") {
		t.Errorf("RunCommand(slow) = %v, want a timeout", err)
	}
	if pid := readPID(t, filepath.Join(dir, "pid2")); !gone(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("grandchild %d outlived the timeout", pid)
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	if _, err := RunCommand(ctx, dir, commandTool("cancelled", "(sleep 300) & echo $! > pid3; sleep 300"), "{}"); !errors.Is(err, context.Canceled) {
		t.Errorf("RunCommand(cancelled) = %v, want context.Canceled", err)
	}
	if pid := readPID(t, filepath.Join(dir, "pid3")); !gone(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("grandchild %d outlived the cancellation", pid)
	}
}

// TestRunCommand_DetachedGrandchild: a grandchild that leaves the tool's
// process group (`setsid sleep 300 &`) kept stdout open, and RunCommand
// read it for ever: past the tool's exit, past its timeout, past a
// cancellation (Ctrl-C) — inspect run hung (issue 23, item 5). Reading
// now stops a moment after the group is gone; what the tool wrote is its
// result.
func TestRunCommand_DetachedGrandchild(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	dir := t.TempDir()
	// The grandchild writes its pid, then holds stdout and stderr; the
	// tool goes on once it has left the group.
	detach := func(n int) string {
		return fmt.Sprintf(`setsid sh -c 'echo $$ > pid%d.tmp; mv pid%d.tmp pid%d; exec sleep 300' & while [ ! -s pid%d ]; do sleep 0.01; done; `, n, n, n, n)
	}
	reap := func(n int) {
		if pid := readPID(t, filepath.Join(dir, fmt.Sprint("pid", n))); pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	within := func(what string, d time.Duration, fn func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { fn(); close(done) }()
		select {
		case <-done:
		case <-time.After(d):
			t.Fatalf("%s: RunCommand still running after %s", what, d)
		}
	}

	within("a tool that exits", 10*time.Second, func() {
		out, err := RunCommand(context.Background(), dir, commandTool("bg", detach(1)+"echo started"), "{}")
		if err != nil || out != "started\n" {
			t.Errorf("RunCommand = %q, %v; want the tool's output", out, err)
		}
	})
	reap(1)

	slow := commandTool("slow", detach(2)+"sleep 300")
	slow.Timeout = 300 * time.Millisecond
	within("a tool that times out", 10*time.Second, func() {
		if _, err := RunCommand(context.Background(), dir, slow, "{}"); err == nil || !strings.Contains(err.Error(), "timed out after 300ms") {
			t.Errorf("RunCommand(slow) = %v, want a timeout", err)
		}
	})
	reap(2)

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	within("a cancelled tool", 10*time.Second, func() {
		if _, err := RunCommand(ctx, dir, commandTool("cancelled", detach(3)+"sleep 300"), "{}"); !errors.Is(err, context.Canceled) {
			t.Errorf("RunCommand(cancelled) = %v, want context.Canceled", err)
		}
	})
	reap(3)
}

// TestRunCommand_SecretEnvironment: command tools inherit the environment
// except secret-looking variables, unless the tool lists them in env:.
func TestRunCommand_SecretEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "k-openai")
	t.Setenv("GITHUB_TOKEN", "k-github")
	t.Setenv("AWS_SECRET", "k-aws")
	t.Setenv("DB_PASSWORD_FILE", "k-db")
	t.Setenv("SEARCH_API_KEY", "k-search")
	t.Setenv("PLAIN_SETTING", "visible")
	tool := commandTool("env", "env")
	tool.Env = []string{"SEARCH_API_KEY"}
	out, err := RunCommand(context.Background(), t.TempDir(), tool, "{}")
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"k-openai", "k-github", "k-aws", "k-db"} {
		if strings.Contains(out, leak) {
			t.Errorf("the tool saw %s", leak)
		}
	}
	for _, want := range []string{"PLAIN_SETTING=visible", "SEARCH_API_KEY=k-search"} {
		if !strings.Contains(out, want) {
			t.Errorf("the tool did not see %s", want)
		}
	}
}
