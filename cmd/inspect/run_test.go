package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/ask/asktest"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime/examples"
	"github.com/inspect-dev/inspect/store"
)

func TestNewCmdRun(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		want    RunOptions
		wantErr bool
	}{
		{"project only", "./p", RunOptions{Project: "./p", Timeout: 2 * time.Minute}, false},
		{"tasks and script", `./p --task one --task two --script s.yaml --realtime`, RunOptions{Project: "./p", Tasks: []string{"one", "two"}, Script: "s.yaml", Realtime: true, Timeout: 2 * time.Minute}, false},
		{"check", "./p --check", RunOptions{Project: "./p", Check: true, Timeout: 2 * time.Minute}, false},
		{"timeout", "./p --timeout 30s", RunOptions{Project: "./p", Timeout: 30 * time.Second}, false},
		{"no project", "", RunOptions{}, true},
		{"two projects", "a b", RunOptions{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, _ := testFactory(t)
			var got *RunOptions
			cmd := NewCmdRun(f, func(o *RunOptions) error { got = o; return nil })
			cmd.SetArgs(strings.Fields(tt.args))
			cmd.SetOut(new(bytes.Buffer))
			cmd.SetErr(new(bytes.Buffer))
			err := cmd.Execute()
			if tt.wantErr {
				if err == nil {
					t.Errorf("Execute(%q) = nil, want an error", tt.args)
				}
				return
			}
			if err != nil {
				t.Fatalf("Execute(%q): %v", tt.args, err)
			}
			got.F = nil
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("options = %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestRunRun(t *testing.T) {
	dir := filepath.Join("..", "..", "fixtures", "fanout-compact")
	f, out, errOut := testFactory(t)
	code := run(context.Background(), f, []string{"run", dir, "--script", filepath.Join(dir, "script.yaml")})
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if got := out.String(); got != "Q3 revenue: US 6.1M, EU 4.2M, APAC 3.3M. The US leads.\n" {
		t.Errorf("stdout = %q, want the final answer", got)
	}
	e := errOut.String()
	for _, want := range []string{
		"running fanout-compact (scripted model, virtual time)",
		"trunk          analyst      step 1   calls read_file",
		"eu             researcher   step 1   calls read_file",
		"trunk          analyst      step 2   forks eu, us, apac (compact context)",
		"trunk          analyst      step 2   joins eu=ok, us=ok, apac=ok",
		" · ok · 7.3s · 9 model calls · 20 nodes",
		"next: inspect graph ",
	} {
		if !strings.Contains(e, want) {
			t.Errorf("stderr lacks %q:\n%s", want, e)
		}
	}
	db, err := store.Open(context.Background(), f.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.Runs(context.Background(), 0)
	if err != nil || len(runs) != 1 || runs[0].Status != record.StatusOK {
		t.Errorf("runs = %+v, %v; want one ok run", runs, err)
	}
}

func TestRunRun_Errors(t *testing.T) {
	broken := t.TempDir()
	os.MkdirAll(filepath.Join(broken, "agents"), 0o755)
	os.WriteFile(filepath.Join(broken, "agents.yaml"), []byte("agents:\n  - name: a\n    description: A.\n    handoffs: [b]\n"), 0o644)
	os.WriteFile(filepath.Join(broken, "agents", "a.md"), []byte("You are a."), 0o644)
	fixture := filepath.Join("..", "..", "fixtures", "handoff-chain")
	tests := []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{"check broken", []string{"run", broken, "--check"}, ExitUsage, "agents.yaml:4: agents[0].handoffs[0]: error handoff.unknown", "has 1 error; fix it and run again"},
		{"run broken", []string{"run", broken, "--task", "x"}, ExitUsage, "", "handoff.unknown"},
		{"check ok", []string{"run", fixture, "--check"}, ExitOK, ": ok · 3 agent(s): intake, billing, refunds · 0 warning(s)", ""},
		{"no model", []string{"run", fixture, "--task", "hi"}, ExitUsage, "", "no model to run with"},
		{"realtime without script", []string{"run", fixture, "--realtime", "--task", "x"}, ExitUsage, "", "--realtime only applies"},
		{"missing script", []string{"run", fixture, "--script", "nope.yaml"}, ExitUsage, "", "read script"},
		{"no such project", []string{"run", filepath.Join(broken, "nope")}, ExitUsage, "", "there is no folder " + filepath.Join(broken, "nope")},
		{"project is a file", []string{"run", filepath.Join(broken, "agents.yaml"), "--check"}, ExitUsage, "point at its folder: " + broken, "has 1 error; fix it and run again"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, out, errOut := testFactory(t)
			code := run(context.Background(), f, tt.args)
			if code != tt.code || !strings.Contains(out.String(), tt.out) || !strings.Contains(errOut.String(), tt.err) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout containing %q, stderr containing %q", code, out, errOut, tt.code, tt.out, tt.err)
			}
			// a run refused for its input records nothing, and leaves no
			// empty database behind (issue 12, item 14: `run` without a key
			// created one)
			if _, err := os.Stat(f.DBPath); tt.code != ExitOK && !os.IsNotExist(err) {
				t.Errorf("a refused run left a database at %s (%v)", f.DBPath, err)
			}
		})
	}
}

// A malformed OPENAI_BASE_URL is an input error at once (exit 2, nothing
// recorded), not four retried "unsupported protocol scheme" failures.
func TestRunRun_BadBaseURL(t *testing.T) {
	fixture := filepath.Join("..", "..", "fixtures", "handoff-chain")
	for _, base := range []string{"notaurl", "localhost:11434/v1", "ftp://host/v1"} {
		t.Run(base, func(t *testing.T) {
			f, out, errOut := testFactory(t)
			f.Getenv = func(k string) string {
				return map[string]string{"OPENAI_API_KEY": "sk-test-000", "OPENAI_BASE_URL": base}[k]
			}
			code := run(context.Background(), f, []string{"run", fixture, "--task", "hi"})
			if code != ExitUsage || !strings.Contains(errOut.String(), "is not an http(s) URL") {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and a message about OPENAI_BASE_URL", code, out, errOut)
			}
			if strings.Contains(errOut.String(), "sk-test-000") {
				t.Errorf("the key was printed")
			}
		})
	}
}

func TestRunRun_Failed(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "agents"), 0o755)
	os.WriteFile(filepath.Join(dir, "agents.yaml"), []byte("agents:\n  - name: a\n    description: A.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "agents", "a.md"), []byte("You are a."), 0o644)
	os.WriteFile(filepath.Join(dir, "script.yaml"), []byte("task: go\nconversations:\n  trunk:\n    - error: 503\n"), 0o644)
	f, _, errOut := testFactory(t)
	code := run(context.Background(), f, []string{"run", dir, "--script", filepath.Join(dir, "script.yaml")})
	if code != ExitToolError || !strings.Contains(errOut.String(), "ended in error: model call failed with HTTP 503") {
		t.Errorf("exit %d, stderr %q; want 3 and the failure", code, errOut)
	}
	// The summary line formats time as every other output does, and counts in English.
	if !strings.Contains(errOut.String(), " · error · 1.0s · 1 model call · 3 nodes\n") {
		t.Errorf("summary line: stderr %q, want \" · error · 1.0s · 1 model call · 3 nodes\"", errOut)
	}
	ctx, cancel := context.WithCancel(context.Background())
	os.WriteFile(filepath.Join(dir, "slow.yaml"), []byte("task: go\nconversations:\n  trunk:\n    - say: late\n      latency: 30s\n"), 0o644)
	time.AfterFunc(200*time.Millisecond, cancel)
	f, _, errOut = testFactory(t)
	code = run(ctx, f, []string{"run", dir, "--script", filepath.Join(dir, "slow.yaml"), "--realtime"})
	if code != ExitToolError || !strings.Contains(errOut.String(), "was cancelled") {
		t.Errorf("cancelled run: exit %d, stderr %q", code, errOut)
	}
}

// A run that fails only because of script.yaml — an unusable reply, a
// conversation with no reply left, no entry for it — is an input error
// (exit 2) naming the script line; it is still recorded. A scripted
// `error:` reply stands for a provider failure and stays exit 3
// (TestRunRun_Failed).
func TestRunRun_ScriptProblem(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "agents"), 0o755)
	os.WriteFile(filepath.Join(dir, "agents.yaml"), []byte("agents:\n  - name: a\n    description: A.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "agents", "a.md"), []byte("You are a."), 0o644)
	tests := []struct {
		name, script, want string
	}{
		{"unusable reply", "task: go\nconversations:\n  trunk:\n    - sya: typo\n", `script.yaml:4: unknown reply key "sya"`},
		{"no reply left", "task: go\nconversations:\n  trunk:\n    - calls: [{list_dir: {path: .}}]\n", `script.yaml:3: conversation "trunk" ran out of replies after 1`},
		{"no entry", "task: go\nconversations:\n  eu:\n    - say: hi\n", `script.yaml:2: conversations has no entry "trunk"`},
		{"bad usage key", "task: go\nconversations:\n  trunk:\n    - say: hi\n      usage: {input: 3}\n", `script.yaml:4: unknown usage key "input"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "script.yaml")
			os.WriteFile(path, []byte(tt.script), 0o644)
			f, _, errOut := testFactory(t)
			code := run(context.Background(), f, []string{"run", dir, "--script", path})
			if code != ExitUsage || !strings.Contains(errOut.String(), "ended in error: model call failed: "+tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, tt.want)
			}
			db, err := store.Open(context.Background(), f.DBPath)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if runs, err := db.Runs(context.Background(), 0); err != nil || len(runs) != 1 || runs[0].Status != record.StatusError {
				t.Errorf("runs = %+v, %v; want the failed run recorded", runs, err)
			}
		})
	}
}

// A key the provider refuses is an input error for `run` as for `ask`
// (exit 2, DESIGN §11), and so is a model it does not serve; the run is
// still recorded (issue 12, item 12: run exited 3 on a 401).
func TestRunRun_RefusedByProvider(t *testing.T) {
	fixture := filepath.Join("..", "..", "fixtures", "handoff-chain")
	tests := []struct {
		name, key, want string
		stub            asktest.Responder
	}{
		{"401", "sk-wrong", "the provider refused the key in OPENAI_API_KEY", nil},
		{"404", "sk-right", "does not serve a model this project names; fix `model:` in agents.yaml",
			asktest.Error(http.StatusNotFound, "model_not_found", "The model `gpt-4.1-mini` does not exist or you do not have access to it.")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := asktest.New(t, "sk-right")
			if tt.stub != nil {
				srv.Register("refuse", nil, tt.stub)
			}
			f, _, errOut := testFactoryEnv(t, map[string]string{"OPENAI_API_KEY": tt.key, "OPENAI_BASE_URL": srv.URL})
			code := run(context.Background(), f, []string{"run", fixture, "--task", "hi"})
			if code != ExitUsage || !strings.Contains(errOut.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, tt.want)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests, want 1 (a refusal is not retried)", n)
			}
			if strings.Contains(errOut.String(), tt.key) {
				t.Error("the key was printed")
			}
		})
	}
}

// --timeout bounds each attempt of a model call, and the wait before the
// retry is a progress line, not silence (issue 12, item 3).
func TestRunRun_Timeout(t *testing.T) {
	fixture := filepath.Join("..", "..", "fixtures", "handoff-chain")
	srv := asktest.New(t, "sk-right")
	srv.Register("hang, then answer", nil, asktest.Sequence(asktest.Hang(10*time.Second, nil), asktest.Answer(asktest.Reply{Content: "done"})))
	f, out, errOut := testFactoryEnv(t, map[string]string{"OPENAI_API_KEY": "sk-right", "OPENAI_BASE_URL": srv.URL})
	code := run(context.Background(), f, []string{"run", fixture, "--task", "hi", "--timeout", "100ms"})
	if code != ExitOK || out.String() != "done\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	if want := "waits 1s to retry: attempt 1 of 4 failed: no response within 100ms"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, errOut)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (one timed out, one answered)", n)
	}
	f, _, errOut = testFactoryEnv(t, nil)
	if code := run(context.Background(), f, []string{"run", fixture, "--task", "hi", "--timeout", "0s"}); code != ExitUsage || !strings.Contains(errOut.String(), "--timeout must be positive") {
		t.Errorf("--timeout 0s: exit %d, stderr %q", code, errOut)
	}
}

// TestRunRun_SaysWhereItWrites: a scripted run of a project whose agent has
// write_file really writes into the project's workspace; stderr says so,
// naming the folder and the agent, before the run (before: no line, and
// brief.md appeared in the workspace unannounced). A project without a
// writing agent gets no such line.
func TestRunRun_SaysWhereItWrites(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	if _, err := examples.Write(examples.Demo(), dir); err != nil {
		t.Fatal(err)
	}
	f, _, errOut := testFactory(t)
	if code := run(context.Background(), f, []string{"run", dir, "--script", filepath.Join(dir, "script.yaml")}); code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	ws, err := filepath.EvalSymlinks(filepath.Join(dir, "workspace"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws, "brief.md")); err != nil {
		t.Fatalf("the demo's writer wrote no brief.md in the workspace: %v", err)
	}
	want := "workspace: " + ws + " (write_file of writer writes real files there, with the scripted model too)\n"
	e := errOut.String()
	i := strings.Index(e, want)
	if i < 0 {
		t.Fatalf("stderr lacks %q:\n%s", want, e)
	}
	if j := strings.Index(e, "step 1"); j >= 0 && j < i {
		t.Errorf("the workspace line comes after the run started:\n%s", e)
	}

	ro := filepath.Join("..", "..", "fixtures", "fanout-compact")
	f, _, errOut = testFactory(t)
	if code := run(context.Background(), f, []string{"run", ro, "--script", filepath.Join(ro, "script.yaml")}); code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if strings.Contains(errOut.String(), "workspace:") {
		t.Errorf("a project no agent writes in announces a workspace:\n%s", errOut)
	}
}
