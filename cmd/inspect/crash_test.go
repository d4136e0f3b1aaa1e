package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime/runtimetest"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/store"
)

// inspectProcess starts `inspect args...` as a child process: this test
// binary, which TestMain (script_test.go) turns into inspect when
// INSPECT_TEST_ARGS is set.
func inspectProcess(t *testing.T, args ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	argv, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "INSPECT_TEST_ARGS="+string(argv), "OPENAI_API_KEY=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(stderr)
}

// A real `inspect run --realtime` killed with SIGKILL mid-fork: the file is
// sound, every model call the run reported finished is there, the run reads
// interrupted, and graph and audit still work on it.
func TestRun_Kill9MidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process in real time")
	}
	project := filepath.Join(t.TempDir(), "fanout")
	if err := runtimetest.CopyDir(filepath.Join("..", "..", "fixtures", "fanout-compact"), project); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(t.TempDir(), "runs.db")
	cmd, progress := inspectProcess(t, "run", project, "--script", filepath.Join(project, "script.yaml"), "--realtime", "--db", dbPath)
	finished := 0
	deadline := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	for progress.Scan() {
		line := progress.Text()
		if strings.Contains(line, " calls ") || strings.Contains(line, " answers") {
			finished++ // the runtime reports a model call after it is recorded
		}
		// Kill once the fork is under way and a branch has finished a call.
		if finished >= 3 {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	cmd.Wait()
	if finished < 3 {
		t.Fatalf("the run reported %d finished model calls before it ended; want a kill mid-run", finished)
	}

	ctx := context.Background()
	db, err := store.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := db.IntegrityCheck(ctx); err != nil || v != "ok" {
		t.Fatalf("integrity_check = %q, %v", v, err)
	}
	id, err := db.ResolveRun(ctx, "latest")
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Load(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	if g.Status != record.StatusInterrupted {
		t.Errorf("run status = %s, want interrupted", g.Status)
	}
	okCalls := 0
	for _, n := range g.Nodes {
		if n.Kind == record.KindLLM && n.Status == record.StatusOK {
			okCalls++
		}
		if n.Status == record.StatusRunning {
			t.Errorf("%s reads running in an interrupted run", n.ID())
		}
	}
	if okCalls < finished {
		t.Errorf("%d finished model calls on disk, but the run reported %d before the kill", okCalls, finished)
	}
	for _, sub := range [][]string{{"graph", id}, {"audit", id}, {"runs"}} {
		f, out, errOut := testFactory(t)
		f.DBPath = dbPath
		if code := run(ctx, f, append(sub, "--db", dbPath)); code != 0 {
			t.Errorf("inspect %s on the interrupted run: exit %d: %s", strings.Join(sub, " "), code, errOut)
		}
		if sub[0] == "runs" && !strings.Contains(out.String(), "interrupted") {
			t.Errorf("inspect runs does not show the run interrupted:\n%s", out)
		}
	}
	// The audit says the run was interrupted, audits no open fork, counts
	// no branch it cut off as failed, so --fail-on error passes (issue 12,
	// item 5: it used to report 3 errors and exit 1).
	f, out, errOut := testFactory(t)
	f.DBPath = dbPath
	if code := run(ctx, f, []string{"audit", id, "--db", dbPath, "--fail-on", "error"}); code != 0 {
		t.Errorf("inspect audit --fail-on error on the interrupted run: exit %d: %s\n%s", code, errOut, out)
	}
	if !strings.Contains(out.String(), "\nnotice: this run was interrupted") || strings.Contains(out.String(), "branch.failed: found") {
		t.Errorf("audit of the interrupted run:\n%s", out)
	}
	for _, fk := range g.Forks {
		if fk.Slowest != nil && !fk.Slowest.Finished() {
			t.Errorf("branch %s (%s) of an interrupted run is marked slowest", fk.Slowest.Name, fk.Slowest.Status)
		}
	}
}

// A real `inspect import` of a large session killed with SIGKILL while it
// writes the run's nodes, first import and re-import alike: the file is
// sound, the run reads interrupted (never finished with part of its nodes),
// and importing the session again updates that same run to a finished one.
func TestImport_Kill9MidImport(t *testing.T) {
	if testing.Short() {
		t.Skip("imports a generated 60 MB session in a child process")
	}
	dir := t.TempDir()
	session, err := importerstest.BigClaudeCode(dir, 60<<20)
	if err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(dir, "runs.db")
	ctx := context.Background()
	// importKilled starts an import and kills it once the run it writes
	// has nodes on disk (beyond the first run's when again): it returns the
	// run's id.
	importKilled := func() string {
		t.Helper()
		cmd, _ := inspectProcess(t, "import", "--format", "claude-code", "--db", dbPath, session)
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		deadline := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
		defer deadline.Stop()
		for id := ""; ; time.Sleep(5 * time.Millisecond) {
			select {
			case <-exited:
				t.Fatal("the import ended before it could be killed mid-import")
			default:
			}
			if db, err := store.OpenReadOnly(ctx, dbPath); err == nil {
				if runs, _ := db.Runs(ctx, 0); len(runs) == 1 && runs[0].Status == record.StatusRunning {
					if seqs, _ := db.Seqs(ctx, runs[0].ID); len(seqs) > 100 {
						id = runs[0].ID
					}
				}
				db.Close()
			}
			if id != "" {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				if err := <-exited; err == nil {
					t.Fatal("the import finished before the kill")
				}
				return id
			}
		}
	}
	check := func(id string, want record.Status) *graph.Run {
		t.Helper()
		db, err := store.OpenReadOnly(ctx, dbPath)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if v, err := db.IntegrityCheck(ctx); err != nil || v != "ok" {
			t.Fatalf("integrity_check = %q, %v", v, err)
		}
		runs, err := db.Runs(ctx, 0)
		if err != nil || len(runs) != 1 || runs[0].ID != id {
			t.Fatalf("runs %+v, %v; want the one run %s", runs, err, id)
		}
		g, err := graph.Load(ctx, db, id)
		if err != nil {
			t.Fatal(err)
		}
		if g.Status != want {
			t.Errorf("run %s reads %s, want %s", id, g.Status, want)
		}
		return g
	}
	first := importKilled()
	check(first, record.StatusInterrupted)
	f, _, errOut := testFactory(t)
	f.DBPath = dbPath
	if code := run(ctx, f, []string{"import", "--format", "claude-code", "--db", dbPath, session}); code != 0 {
		t.Fatalf("import again: exit %d: %s", code, errOut)
	}
	whole := check(first, record.StatusOK)
	if again := importKilled(); again != first {
		t.Fatalf("the re-import wrote run %s, not %s", again, first)
	}
	if g := check(first, record.StatusInterrupted); len(g.Nodes) >= len(whole.Nodes) {
		t.Errorf("the killed re-import has %d nodes of %d: it was not killed mid-import", len(g.Nodes), len(whole.Nodes))
	}
}
