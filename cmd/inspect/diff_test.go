package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/runtime"
	"github.com/inspect-dev/inspect/store"
)

var updateBaseline = flag.Bool("update-baseline", false, "re-record testdata/ci/fanout-compact.db, the baseline of .ci/regression.sh")

// ciBaseline is the baseline database of docs/ci.md's workflow as this
// repository runs it (.ci/regression.sh).
var ciBaseline = filepath.Join("..", "..", "testdata", "ci", "fanout-compact.db")

// recordInto records fixture into the database at path as run id, with a
// fixed clock.
func recordInto(t *testing.T, path, fixture, id string) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := filepath.Join("..", "..", "fixtures", fixture)
	if _, err := runtime.Run(ctx, runtime.Config{Project: dir, Script: filepath.Join(dir, "script.yaml"), DB: db, RunID: id,
		Now: func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) }}); err != nil {
		t.Fatalf("record %s: %v", fixture, err)
	}
}

// diffFactory returns a factory on buffers whose --db is dir/runs.db.
func diffFactory(t *testing.T, dir string) (*Factory, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	out, errOut := new(bytes.Buffer), new(bytes.Buffer)
	s := &IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut, NoColor: true, Width: 80}
	f := NewFactory(s, func(string) string { return "" })
	f.DBPath = filepath.Join(dir, "runs.db")
	return f, out, errOut
}

func TestNewCmdDiff(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    DiffOptions
		wantErr bool
	}{
		{"defaults", []string{"a", "b"}, DiffOptions{Base: "a", New: "b", Format: "markdown"}, false},
		{"flags", []string{"base.db:latest", "latest", "--format", "json", "--max-increase", "tokens=10%,elapsed=20%", "--max-increase", "llm_calls=2", "--fail-on", "warning"},
			DiffOptions{Base: "base.db:latest", New: "latest", Format: "json", MaxIncrease: []string{"tokens=10%,elapsed=20%", "llm_calls=2"}, FailOn: "warning"}, false},
		{"one argument", []string{"a"}, DiffOptions{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, _ := diffFactory(t, t.TempDir())
			var got *DiffOptions
			cmd := NewCmdDiff(f, func(o *DiffOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			cmd.SetOut(new(bytes.Buffer))
			cmd.SetErr(new(bytes.Buffer))
			err := cmd.Execute()
			if tt.wantErr {
				if err == nil || exitCode(err) != ExitUsage {
					t.Fatalf("Execute = %v, want a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			got.F = nil
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("options = %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestDiffRun(t *testing.T) {
	dir := t.TempDir()
	same := filepath.Join(dir, "runs.db") // the --db database: two identical runs
	recordInto(t, same, "fanout-compact", "run-a")
	recordInto(t, same, "fanout-compact", "run-b")
	missed := filepath.Join(dir, "missed.db")
	recordInto(t, missed, "audit-fanout-missed", "run-missed")
	even := filepath.Join(dir, "even.db")
	recordInto(t, even, "nearmiss-even-fanout", "run-even")

	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
		wantErr  string
	}{
		{"identical runs", []string{"run-a", "run-b", "--fail-on", "warning", "--max-increase", "tokens=0%,elapsed=0%"}, ExitOK,
			[]string{"**No changes: no findings in either run", "| tokens in | 7557 | 7557 | ±0 |", "✅ within", "```mermaid\n"}, ""},
		{"fixed finding shown", []string{missed + ":latest", even + ":latest"}, ExitOK,
			[]string{"OK: 0 new findings, 1 fixed", "## Fixed findings (1)", "`fanout.missed`", "**shown**: the fork at n3 from analyst has 3 branches", "`agents/analyst.md:2`"}, ""},
		{"fixed finding passes --fail-on warning", []string{missed + ":latest", even + ":latest", "--fail-on", "warning"}, ExitOK, nil, ""},
		{"new finding with --fail-on warning", []string{even + ":run-even", missed + ":latest", "--fail-on", "warning"}, ExitFindings,
			[]string{"FAIL: 1 new finding", "## New findings (1)", "**Cost:** 2.5s"}, "1 new finding at or above warning"},
		{"new finding under --fail-on error", []string{even, missed, "--fail-on", "error"}, ExitOK, []string{"## New findings (1)"}, ""},
		{"tokens over the limit", []string{even + ":latest", missed + ":latest", "--max-increase", "tokens_in=10%"}, ExitFindings,
			[]string{"❌ over"}, "tokens_in went from 3978 to 5513"},
		{"json of two database files", []string{missed + ":latest", even + ":latest", "--format", "json"}, ExitOK,
			[]string{`"result": "shown"`, `"metric": "branches"`}, ""},
		{"junit", []string{even, missed, "--format", "junit", "--fail-on", "warning", "--max-increase", "elapsed=1m"}, ExitFindings,
			[]string{`<testcase name="new fanout.missed (agent analyst)"`, `<testcase name="max-increase elapsed=1m0s"`}, ""},
		{"sarif", []string{even, missed, "--format", "sarif"}, ExitOK, []string{`"baselineState": "new"`, `"version": "2.1.0"`}, ""},
		{"missing database file", []string{filepath.Join(dir, "nope.db") + ":latest", "latest"}, ExitUsage, nil, "no database file"},
		{"unknown run", []string{"zzz", "latest"}, ExitUsage, nil, "no run matches \"zzz\""},
		{"bad format", []string{"run-a", "run-b", "--format", "text"}, ExitUsage, nil, "use one of: markdown, json, junit, sarif"},
		{"bad limit", []string{"run-a", "run-b", "--max-increase", "cost=1"}, ExitUsage, nil, "unknown key \"cost\""},
		{"bad fail-on", []string{"run-a", "run-b", "--fail-on", "info"}, ExitUsage, nil, "use warning or error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, out, errOut := diffFactory(t, dir)
			code := run(context.Background(), f, append([]string{"diff"}, tt.args...))
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d\nstderr: %s", code, tt.wantCode, errOut.String())
			}
			for _, s := range tt.wantOut {
				if !strings.Contains(out.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, out.String())
				}
			}
			if tt.wantErr != "" && !strings.Contains(errOut.String(), tt.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", errOut.String(), tt.wantErr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "nope.db")); err == nil {
		t.Error("a missing database file named in a reference was created")
	}
}

// TestCIRegression runs the steps of docs/ci.md (and .ci/regression.sh)
// through the command functions: record fixtures/fanout-compact into a
// fresh database, audit it with --fail-on error, diff it against the
// committed baseline with the workflow's limits.
func TestCIRegression(t *testing.T) {
	project := filepath.Join("..", "..", "fixtures", "fanout-compact")
	script := filepath.Join(project, "script.yaml")
	if *updateBaseline {
		if err := os.Remove(ciBaseline); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		f, _, errOut := diffFactory(t, t.TempDir())
		if code := run(context.Background(), f, []string{"run", project, "--script", script, "--db", ciBaseline}); code != ExitOK {
			t.Fatalf("re-record the baseline: exit %d: %s", code, errOut.String())
		}
	}
	if fi, err := os.Stat(ciBaseline); err != nil || fi.Size() > 400<<10 {
		t.Fatalf("baseline %s: %v (size must stay under 400 KB)", ciBaseline, err)
	}
	f, out, errOut := diffFactory(t, t.TempDir())
	steps := [][]string{
		{"run", project, "--script", script},
		{"audit", "--fail-on", "error"},
		{"diff", ciBaseline + ":latest", "latest", "--format", "markdown", "--max-increase", "tokens=10%,elapsed=20%", "--fail-on", "warning"},
	}
	for _, args := range steps {
		out.Reset()
		if code := run(context.Background(), f, args); code != ExitOK {
			t.Fatalf("inspect %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out.String(), errOut.String())
		}
	}
	for _, s := range []string{"# inspect diff", "**No changes:", "```mermaid\n"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("diff markdown lacks %q:\n%s", s, out.String())
		}
	}
	var doc struct {
		Failed bool `json:"failed"`
	}
	out.Reset()
	if code := run(context.Background(), f, []string{"diff", ciBaseline, "latest", "--format", "json"}); code != ExitOK {
		t.Fatalf("diff --format json: exit %d: %s", code, errOut.String())
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.Failed {
		t.Errorf("diff json: failed = %v, err = %v", doc.Failed, err)
	}
}

// TestCIRegressionScript runs .ci/regression.sh itself, as .ci/run does.
func TestCIRegressionScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds inspect; skipped with -short (TestCIRegression runs the same steps)")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	summary := filepath.Join(t.TempDir(), "summary.md")
	cmd := exec.Command(bash, filepath.Join("..", "..", ".ci", "regression.sh"))
	cmd.Env = append(os.Environ(), "GITHUB_STEP_SUMMARY="+summary, "INSPECT_DB=")
	var outb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outb, &outb
	if err := cmd.Run(); err != nil {
		t.Fatalf(".ci/regression.sh: %v\n%s", err, outb.String())
	}
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "# inspect diff") || !strings.Contains(string(b), "```mermaid") {
		t.Errorf("step summary lacks the diff report:\n%s", b)
	}
}
