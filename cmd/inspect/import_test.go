package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNewCmdImport(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		want    ImportOptions
		wantErr string
	}{
		{name: "OK", args: []string{"a.jsonl", "b.jsonl"}, want: ImportOptions{Paths: []string{"a.jsonl", "b.jsonl"}}},
		{name: "Flags", args: []string{"--format", "claude-code", "--strict", "--watch", "a.jsonl"},
			want: ImportOptions{Paths: []string{"a.jsonl"}, Format: "claude-code", Strict: true, Watch: true}},
		{name: "NoPathFormat", args: []string{"--format", "claude-code"}, want: ImportOptions{Format: "claude-code"}},
		{name: "Project", args: []string{"--project", "src/app", "a.jsonl"}, want: ImportOptions{Paths: []string{"a.jsonl"}, Project: "src/app"}},
		{name: "ErrNothing", args: nil, wantErr: "give a session PATH, or --format"},
		{name: "ErrFormat", args: []string{"--format", "nope", "a"}, wantErr: `unknown --format "nope"; choose one of: `},
		{name: "ErrWatchTwo", args: []string{"--watch", "a", "b"}, wantErr: "--watch follows one session"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, _, _ := testFactory(t)
			var got *ImportOptions
			cmd := NewCmdImport(f, func(o *ImportOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			cmd.SetOut(new(bytes.Buffer))
			cmd.SetErr(new(bytes.Buffer))
			err := cmd.Execute()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || exitCode(err) != ExitUsage {
					t.Fatalf("error = %v, want %q (exit 2)", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got.Paths, ",") != strings.Join(tt.want.Paths, ",") || got.Format != tt.want.Format ||
				got.Strict != tt.want.Strict || got.Watch != tt.want.Watch || got.Project != tt.want.Project {
				t.Errorf("options = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// realSession is the real tool-heavy Claude Code session in ../shared.
func realSession(t *testing.T) []byte {
	t.Helper()
	dir, _ := os.Getwd()
	for { // the shared folder is beside the repository (or above a worktree of it)
		if b, err := os.ReadFile(filepath.Join(dir, "shared", "transcripts", "claude-code", "tool_heavy.jsonl")); err == nil {
			return b
		}
		if filepath.Dir(dir) == dir {
			t.Skip("../shared/transcripts/claude-code not found above the repository")
		}
		dir = filepath.Dir(dir)
	}
}

// TestImportRun_Newest: --format claude-code without a PATH imports the
// newest session of the current folder from CLAUDE_CONFIG_DIR.
func TestImportRun_Newest(t *testing.T) {
	home, cwd := t.TempDir(), "/home/me/my.app"
	dir := filepath.Join(home, "projects", "-home-me-my-app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "d6e0bada.jsonl"), realSession(t), 0o644); err != nil {
		t.Fatal(err)
	}
	importNewest(t, map[string]string{"CLAUDE_CONFIG_DIR": home}, "claude-code", cwd,
		"· session d6e0bada-1959-4eec-a9d2-0bfade768d8f · cancelled · 1 conversation · 15 nodes", "no Claude Code session of /elsewhere")
}

// importNewest runs import --format format with no PATH in folder cwd
// under env, wanting wantOut on stdout, then in /elsewhere, wanting a
// usage error that says wantErr.
func importNewest(t *testing.T, env map[string]string, format, cwd, wantOut, wantErr string) {
	t.Helper()
	f, out, errOut := testFactoryEnv(t, env)
	opts := &ImportOptions{F: f, Format: format, Getwd: func() (string, error) { return cwd, nil }}
	if err := importRun(context.Background(), opts); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(out.String(), wantOut) {
		t.Errorf("stdout lacks %q:\n%s", wantOut, out)
	}
	opts.Getwd = func() (string, error) { return "/elsewhere", nil }
	err := importRun(context.Background(), opts)
	if err == nil || exitCode(err) != ExitUsage || !strings.Contains(err.Error(), wantErr) {
		t.Errorf("another folder: %v", err)
	}
}

// syncBuffer is a buffer two goroutines may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestImportRun_Watch: --watch imports a growing session again as it
// grows, into the same run, until Ctrl-C (exit 0).
func TestImportRun_Watch(t *testing.T) {
	full := realSession(t)
	lines := bytes.SplitAfter(full, []byte("\n"))
	path := filepath.Join(t.TempDir(), "live.jsonl")
	if err := os.WriteFile(path, bytes.Join(lines[:12], nil), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _, _ := testFactory(t)
	out, errOut := &syncBuffer{}, &syncBuffer{}
	f.IO.Out, f.IO.ErrOut = out, errOut
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- importRun(ctx, &ImportOptions{F: f, Paths: []string{path}, Watch: true, Poll: 20 * time.Millisecond, Getwd: os.Getwd})
	}()
	waitFor := func(what string, ok func(string) bool) {
		t.Helper()
		for start := time.Now(); !ok(out.String()); time.Sleep(10 * time.Millisecond) {
			if time.Since(start) > 30*time.Second {
				cancel()
				t.Fatalf("no %s; stdout:\n%s\nstderr:\n%s", what, out, errOut)
			}
		}
	}
	waitFor("first import", func(s string) bool { return strings.Count(s, "imported run") == 1 })
	if err := os.WriteFile(path, full, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("second import", func(s string) bool { return strings.Count(s, "imported run") == 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("watch ended with %v", err)
	}
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	id := func(l string) string { return strings.Fields(l)[2] }
	if id(got[0]) != id(got[1]) || !strings.HasSuffix(got[1], "· cancelled · 1 conversation · 15 nodes") || strings.HasSuffix(got[0], "15 nodes") {
		t.Errorf("imports:\n%s", out)
	}
}

// TestImportRun_NewestCodex: --format codex without a PATH imports the
// newest rollout of the current folder from CODEX_HOME's sessions tree
// (importers/codex's tree of testdata, {{CWD}} set to the folder), not the
// day before's session nor a sub-agent's rollout.
func TestImportRun_NewestCodex(t *testing.T) {
	home, cwd := t.TempDir(), filepath.Join(t.TempDir(), "regions-project")
	src := filepath.Join("..", "..", "importers", "codex", "testdata", "sessions")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(home, "sessions", rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, bytes.ReplaceAll(b, []byte("{{CWD}}"), []byte(cwd)), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The 2026-03-02 session: its trunk and the branch of Hopper, whose
	// rollout is missing (the 2026-03-01 one has three sub-agents).
	importNewest(t, map[string]string{"CODEX_HOME": home}, "codex", cwd,
		"· codex 0.130.0 · session 019a1c00-0000-7000-8000-000000000005 · ok · 2 conversations ·", "no Codex session of /elsewhere")
}

// TestImportRun_Project: a Claude Code session whose cwd names a folder
// with CLAUDE.md brings it only when the import runs in that folder or
// --project names a folder (whose CLAUDE.md it then brings); a --project
// that is no folder is a usage error.
func TestImportRun_Project(t *testing.T) {
	cwd, mine := filepath.Join(t.TempDir(), "app"), filepath.Join(t.TempDir(), "checkout")
	for dir, text := range map[string]string{cwd: "# theirs\n", mine: "# mine\n"} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "CLAUDE.md"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	session := filepath.Join(t.TempDir(), "s1.jsonl")
	lines := `{"type":"user","sessionId":"s1","cwd":CWD,"uuid":"u1","timestamp":"2026-03-01T10:00:00Z","message":{"role":"user","content":"hi"}}
{"type":"assistant","sessionId":"s1","cwd":CWD,"uuid":"a1","timestamp":"2026-03-01T10:00:01Z","message":{"id":"m1","role":"assistant","model":"claude-test","content":[{"type":"text","text":"hello"}],"usage":{"input_tokens":3,"output_tokens":2}}}
`
	if err := os.WriteFile(session, []byte(strings.ReplaceAll(lines, "CWD", `"`+cwd+`"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, here, project, want string
	}{
		{"elsewhere", t.TempDir(), "", ""},
		{"in its folder", cwd, "", "# theirs\n"},
		{"--project", t.TempDir(), mine, "# mine\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, _, errOut := testFactoryEnv(t, nil)
			here := tt.here
			opts := &ImportOptions{F: f, Paths: []string{session}, Project: tt.project, Getwd: func() (string, error) { return here, nil }}
			if err := importRun(context.Background(), opts); err != nil {
				t.Fatalf("%v\n%s", err, errOut)
			}
			db, err := f.Store(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			runs, err := db.Runs(context.Background(), 0)
			if err != nil || len(runs) != 1 {
				t.Fatalf("runs %v %v", runs, err)
			}
			run, err := db.LoadRun(context.Background(), runs[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if file := run.Project.File("CLAUDE.md"); file != nil {
				got = file.Content
			}
			if got != tt.want || len(run.Project.Files) > 1 {
				t.Errorf("CLAUDE.md %q, want %q (files %+v)", got, tt.want, run.Project.Files)
			}
		})
	}
	f, _, _ := testFactoryEnv(t, nil)
	err := importRun(context.Background(), &ImportOptions{F: f, Paths: []string{session}, Project: filepath.Join(cwd, "CLAUDE.md"), Getwd: os.Getwd})
	if err == nil || exitCode(err) != ExitUsage || !strings.Contains(err.Error(), "is not a folder") {
		t.Errorf("--project of a file: %v", err)
	}
}

// TestImport_SkippedSaysWhat: what an import counts in its report is not
// all of unknown types — OpenLLMetry's traces joined into one run, a model
// call two instrumentations recorded — and the line says so: "skipped or
// adjusted", by kind, never "unknown types" of what it knew.
func TestImport_SkippedSaysWhat(t *testing.T) {
	f, _, errOut := testFactory(t)
	path := filepath.Join("..", "..", "importers", "otlp", "testdata", "openllmetry-langgraph-supervisor.otlp.jsonl")
	if code := run(context.Background(), f, []string{"import", path}); code != ExitOK {
		t.Fatalf("import: exit %d: %s", code, errOut)
	}
	got := errOut.String()
	if !strings.Contains(got, "  skipped or adjusted 66 records of 2 kinds: model calls two instrumentations recorded (one copy kept) ×7, spans that were traces of their own") || strings.Contains(got, "unknown") {
		t.Errorf("stderr:\n%s", got)
	}
}
