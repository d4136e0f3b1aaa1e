package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/store"
)

// detachProject writes a project whose one command tool starts a
// grandchild that leaves the tool's process group (setsid) and holds its
// stdout and stderr, says so in a file "started", then sleeps; timeout is
// the tool's. The scripted model calls the tool once, then answers.
func detachProject(t *testing.T, timeout string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "detach")
	files := map[string]string{
		"agents.yaml": `agents:
  - name: lead
    description: Runs the tool.
    tools: [hang]
tools:
  - name: hang
    description: Starts a daemon and waits.
    command: [./tools/hang.sh]
    timeout: ` + timeout + `
    parameters: {type: object}
`,
		"agents/lead.md": "You run hang.\n",
		"tools/hang.sh": `#!/bin/sh
setsid sh -c 'echo $$ > pid.tmp; mv pid.tmp pid; exec sleep 300' &
while [ ! -s pid ]; do sleep 0.01; done
touch started
sleep 300
`,
		"script.yaml": `task: Run the tool.
conversations:
  trunk:
    - calls: [{hang: {}}]
    - say: done
`,
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { // the daemon left the group: nothing of ours kills it
		if b, err := os.ReadFile(filepath.Join(dir, "pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return dir
}

// waitExit waits at most d for cmd to end; past it, it kills cmd and fails.
func waitExit(t *testing.T, cmd *exec.Cmd, d time.Duration, what string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		t.Fatalf("inspect run %s: still running after %s", what, d)
		return nil
	}
}

// TestRun_DetachedGrandchild: a command tool whose grandchild leaves the
// process group and keeps stdout open hung `inspect run` past the tool's
// timeout, and Ctrl-C did not stop it (issue 23, item 5). A real inspect
// run now ends at the timeout with the tool's error recorded, and a real
// SIGINT while the tool runs stops it within seconds.
func TestRun_DetachedGrandchild(t *testing.T) {
	if testing.Short() {
		t.Skip("runs inspect run as a child process")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}

	t.Run("timeout", func(t *testing.T) {
		project := detachProject(t, "1s")
		dbPath := filepath.Join(t.TempDir(), "runs.db")
		cmd, progress := inspectProcess(t, "run", project, "--script", filepath.Join(project, "script.yaml"), "--db", dbPath)
		go func() {
			for progress.Scan() {
			}
		}()
		if err := waitExit(t, cmd, 20*time.Second, "with a tool timing out"); err != nil {
			t.Fatalf("inspect run: %v", err)
		}
		ctx := context.Background()
		db, err := store.OpenReadOnly(ctx, dbPath)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		id, err := db.ResolveRun(ctx, "latest")
		if err != nil {
			t.Fatal(err)
		}
		g, err := graph.Load(ctx, db, id)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, n := range g.Nodes {
			if n.Tool != nil && n.Tool.Name == "hang" {
				found = true
				if !strings.Contains(n.Error+n.Tool.Result, "timed out after 1s") {
					t.Errorf("the tool's node: status %s, error %q, result %q; want the timeout", n.Status, n.Error, n.Tool.Result)
				}
			}
		}
		if !found || g.Status != "ok" {
			t.Errorf("run %s, tool node found %v; want the run ended ok with the tool's node", g.Status, found)
		}
	})

	t.Run("Ctrl-C", func(t *testing.T) {
		project := detachProject(t, "120s")
		dbPath := filepath.Join(t.TempDir(), "runs.db")
		cmd, progress := inspectProcess(t, "run", project, "--script", filepath.Join(project, "script.yaml"), "--db", dbPath)
		go func() {
			for progress.Scan() {
			}
		}()
		started := filepath.Join(project, "started")
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(started); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatal("the tool never started")
			}
		}
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		err := waitExit(t, cmd, 15*time.Second, "after Ctrl-C")
		if ee, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatalf("inspect run: %v", err)
		} else if ok && ee.ExitCode() < 0 {
			t.Errorf("inspect run ended by %v, want it to exit on its own", ee)
		}
	})
}
