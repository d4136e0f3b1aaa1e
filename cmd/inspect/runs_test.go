package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/record"
)

// testFactory returns a Factory on buffers (no TTY), an empty environment
// and a database in a temp folder.
func testFactory(t testing.TB) (*Factory, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	return testFactoryEnv(t, nil)
}

// testFactoryEnv is testFactory with the given environment.
func testFactoryEnv(t testing.TB, env map[string]string) (*Factory, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	out, errOut := new(bytes.Buffer), new(bytes.Buffer)
	f := NewFactory(&IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut, NoColor: true, Width: 80},
		func(k string) string { return env[k] })
	dir := t.TempDir()
	f.DBPath = filepath.Join(dir, "runs.db")
	// The working folder is the test's own, so no .inspect.yaml above the
	// repository changes what a test sees.
	f.Getwd = func() (string, error) { return dir, nil }
	t.Cleanup(func() { f.Close() })
	return f, out, errOut
}

// seedRuns records two synthetic runs, the second newer, and returns their ids.
func seedRuns(t *testing.T, f *Factory) (older, newer string) {
	t.Helper()
	ctx := context.Background()
	db, err := f.Store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	older, err = graphtest.Record(ctx, db, graphtest.Synthetic(40))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := db.CreateRun(ctx, &record.Run{ID: "fff000aaa111", Started: graphtest.Start.Add(time.Hour), Tasks: []string{"second"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.AddNode(ctx, &record.Node{Kind: record.KindUser, Agent: "solo", Started: graphtest.Start.Add(time.Hour), Text: "second"}); err != nil {
		t.Fatal(err)
	}
	return older, rec.RunID()
}

func TestNewCmdRuns(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    RunsOptions
		wantErr bool
	}{
		{"defaults", nil, RunsOptions{}, false},
		{"json and limit", []string{"--json", "--limit", "3"}, RunsOptions{JSON: true, Limit: 3}, false},
		{"no arguments allowed", []string{"abc"}, RunsOptions{}, true},
		{"bad limit", []string{"--limit", "x"}, RunsOptions{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, _ := testFactory(t)
			var got *RunsOptions
			cmd := NewCmdRuns(f, func(o *RunsOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			cmd.SetOut(new(bytes.Buffer))
			cmd.SetErr(new(bytes.Buffer))
			err := cmd.Execute()
			if (err != nil) != tt.wantErr {
				t.Fatalf("Execute() err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if got.JSON != tt.want.JSON || got.Limit != tt.want.Limit {
				t.Errorf("options = %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestRunsRun(t *testing.T) {
	f, out, _ := testFactory(t)
	older, newer := seedRuns(t, f)
	if code := run(context.Background(), f, []string{"runs", "--db", f.DBPath}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("output:\n%s", out)
	}
	if !strings.HasPrefix(lines[1], newer) || !strings.HasPrefix(lines[2], older) {
		t.Errorf("not newest first:\n%s", out)
	}
	if !strings.Contains(lines[2], "analyst,researcher") || !strings.Contains(lines[2], " ok ") {
		t.Errorf("older run line lacks agents or status: %q", lines[2])
	}
	// The second run is still marked running and its writer (this process) is alive.
	if !strings.Contains(lines[1], "running") {
		t.Errorf("open run line: %q", lines[1])
	}
}

func TestRunsRun_JSON(t *testing.T) {
	f, out, _ := testFactory(t)
	older, _ := seedRuns(t, f)
	if code := run(context.Background(), f, []string{"runs", "--json", "--db", f.DBPath}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	var got []map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(got) != 2 {
		t.Fatalf("%d runs", len(got))
	}
	for _, key := range []string{"id", "status", "started", "ended", "elapsed_ms", "agents", "tokens_in", "tokens_out"} {
		if _, ok := got[1][key]; !ok {
			t.Errorf("runs --json lacks %q: %v", key, got[1])
		}
	}
	if got[1]["id"] != older || got[1]["status"] != "ok" || got[1]["tokens_in"].(float64) <= 0 || got[1]["elapsed_ms"].(float64) <= 0 {
		t.Errorf("older run = %v", got[1])
	}
	if got[0]["ended"] != nil {
		t.Errorf("a running run has ended = %v, want null", got[0]["ended"])
	}
}

func TestRunsRun_Empty(t *testing.T) {
	f, out, _ := testFactory(t)
	if code := run(context.Background(), f, []string{"runs", "--db", f.DBPath}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out.String(), "inspect demo") {
		t.Errorf("empty list does not say what to do: %q", out)
	}
}

// A read command never creates the database it is pointed at: a mistyped
// --db or FILE.db: is an input error that names the file, and leaves nothing
// behind; a folder is refused with a clear message.
func TestReadCommands_MissingDatabase(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "typo.db")
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"graph", []string{"graph", "--db", missing}, ExitUsage, "no runs database at " + missing},
		{"audit", []string{"audit", "--db", missing}, ExitUsage, "no runs database at " + missing},
		{"run ref", []string{"audit", missing + ":latest"}, ExitUsage, "no runs database at " + missing},
		{"runs", []string{"runs", "--db", missing}, ExitOK, ""},
		{"folder", []string{"runs", "--db", dir}, ExitToolError, "a folder, not a database file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			g := NewFactory(&IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, NoColor: true, Width: 80}, func(string) string { return "" })
			if code := run(context.Background(), g, tt.args); code != tt.code {
				t.Errorf("exit = %d, want %d; stderr: %s", code, tt.code, errOut.String())
			}
			if !strings.Contains(errOut.String(), tt.msg) {
				t.Errorf("stderr = %q, want it to contain %q", errOut.String(), tt.msg)
			}
			if _, err := os.Stat(missing); err == nil {
				t.Fatalf("%v created %s", tt.args, missing)
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	f, _, _ := testFactory(t)
	seedRuns(t, f)
	notDB := filepath.Join(t.TempDir(), "notes.db")
	os.WriteFile(notDB, []byte("plain text"), 0o644)
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"unknown command", []string{"bogus"}, ExitUsage, "unknown command"},
		{"bad flag", []string{"runs", "--nope"}, ExitUsage, "unknown flag"},
		{"unknown run", []string{"graph", "zzz"}, ExitUsage, "no run matches \"zzz\"; recent runs: fff000aaa111"},
		{"not a database", []string{"runs", "--db", notDB}, ExitToolError, "not a SQLite database"},
		{"unknown node", []string{"show", "fff", "n9"}, ExitUsage, "has no node n9"},
		{"bad node ref", []string{"show", "fff", "nine"}, ExitUsage, "not a node reference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			g := NewFactory(&IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, NoColor: true, Width: 80}, func(string) string { return "" })
			g.DBPath = f.DBPath
			args := tt.args
			if code := run(context.Background(), g, args); code != tt.code {
				t.Errorf("exit = %d, want %d; stderr: %s", code, tt.code, errOut.String())
			}
			if !strings.Contains(errOut.String(), tt.msg) {
				t.Errorf("stderr = %q, want it to contain %q", errOut.String(), tt.msg)
			}
			if strings.Contains(errOut.String(), "goroutine") || strings.Contains(errOut.String(), "panic") {
				t.Errorf("stack trace on stderr: %s", errOut.String())
			}
		})
	}
}

func TestParseRunRef(t *testing.T) {
	tests := []struct {
		in   string
		want RunRef
	}{
		{"latest", RunRef{Run: "latest"}},
		{"7f3a", RunRef{Run: "7f3a"}},
		{"base.db:latest", RunRef{DB: "base.db", Run: "latest"}},
		{"dir/x.db:7f", RunRef{DB: "dir/x.db", Run: "7f"}},
		{"base.db", RunRef{DB: "base.db", Run: "latest"}},
	}
	for _, tt := range tests {
		if got := ParseRunRef(tt.in); got != tt.want {
			t.Errorf("ParseRunRef(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// A run still being recorded shows how long it has been going on, in
// `runs` (table and JSON) and in the graph's header — not "-", nor the
// time of its last finished node (issue 12, item 14).
func TestRunsRun_LiveElapsed(t *testing.T) {
	f, out, errOut := testFactory(t)
	ctx := context.Background()
	db, err := f.Store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now().Add(-2 * time.Hour)
	rec, err := db.CreateRun(ctx, &record.Run{ID: "aaa000bbb111", Started: started, Tasks: []string{"long"}})
	if err != nil {
		t.Fatal(err)
	}
	// the writer is this process, alive: the run reads running
	if err := rec.AddNode(ctx, &record.Node{Kind: record.KindUser, Agent: "solo", Started: started, Text: "long"}); err != nil {
		t.Fatal(err)
	}
	if code := run(ctx, f, []string{"runs"}); code != ExitOK {
		t.Fatalf("runs: exit %d: %s", code, errOut)
	}
	if !regexp.MustCompile(`aaa000bbb111 .* running .* 1[23]\dm\d\ds `).MatchString(out.String()) {
		t.Errorf("runs lists the running run without its live elapsed time (about 120m):\n%s", out)
	}
	out.Reset()
	if code := run(ctx, f, []string{"runs", "--json"}); code != ExitOK {
		t.Fatalf("runs --json: exit %d: %s", code, errOut)
	}
	var list []struct {
		ElapsedMS int64 `json:"elapsed_ms"`
	}
	if err := json.Unmarshal(out.Bytes(), &list); err != nil || len(list) != 1 || list[0].ElapsedMS < (2*time.Hour).Milliseconds() {
		t.Errorf("runs --json elapsed_ms = %+v (%v), want at least two hours", list, err)
	}
	out.Reset()
	if code := run(ctx, f, []string{"graph"}); code != ExitOK {
		t.Fatalf("graph: exit %d: %s", code, errOut)
	}
	if !regexp.MustCompile(`(?m)^%% run aaa000bbb111 · running · 1[23]\dm\d\ds `).MatchString(out.String()) {
		t.Errorf("graph header lacks the live elapsed time:\n%s", out)
	}
}

// inspect --version says which build this is (DESIGN §11).
func TestRoot_Version(t *testing.T) {
	f, out, errOut := testFactory(t)
	if code := run(context.Background(), f, []string{"--version"}); code != ExitOK || !regexp.MustCompile(`^inspect \S+.* go1\.\d+`).MatchString(out.String()) {
		t.Errorf("--version: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestRunsRun_ScreenWidth: the runs table lines up by screen columns, not
// characters — a CJK agent name or task and an emoji take two columns each
// (before: tabwriter counted characters, so every cell after a CJK one
// started a column early), and a task is cut at 40 columns, not 40
// characters (80 columns of CJK).
func TestRunsRun_ScreenWidth(t *testing.T) {
	f, out, errOut := testFactory(t)
	ctx := context.Background()
	db, err := f.Store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range []struct{ id, agent, task string }{
		{"aaa000000001", "analyst", "Compare Q3 revenue"},
		{"aaa000000002", "研究员", "比较欧洲、美国和亚太地区第三季度的收入并写一份简短的报告给管理层"},
		{"aaa000000003", "🚀launcher", "ship it 🚀🚀"},
	} {
		at := graphtest.Start.Add(time.Duration(i) * time.Minute)
		rec, err := db.CreateRun(ctx, &record.Run{ID: r.id, Started: at, Tasks: []string{r.task}})
		if err != nil {
			t.Fatal(err)
		}
		if err := rec.AddNode(ctx, &record.Node{Kind: record.KindUser, Agent: r.agent, Started: at, Text: r.task}); err != nil {
			t.Fatal(err)
		}
		if err := rec.Finish(ctx, record.StatusOK, "", at.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if code := run(ctx, f, []string{"runs"}); code != ExitOK {
		t.Fatalf("runs: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	// the screen column where each header word starts
	header := lines[0]
	for i, col := range []string{"ID", "STARTED", "STATUS", "AGENTS", "ELAPSED", "TOKENS IN/OUT", "TASK"} {
		if i < 2 {
			continue
		}
		want := runewidth.StringWidth(header[:strings.Index(header, col)])
		for _, l := range lines[1:] {
			if got := screenColumnOfCell(l, i); got != want {
				t.Errorf("in %q the %s cell starts at screen column %d, the header's at %d\n%s", l, col, got, want, out)
			}
		}
	}
	for _, l := range lines[1:] {
		task := l[strings.LastIndex(l, "  ")+2:]
		if w := runewidth.StringWidth(task); w > 40 {
			t.Errorf("task cell %q is %d columns wide, over 40", task, w)
		}
	}
}

// screenColumnOfCell is the screen column at which line's cell n (from 0)
// starts, cells told apart by runs of two or more spaces (a STARTED cell
// holds one space).
func screenColumnOfCell(line string, n int) int {
	col, spaces, cell := 0, 0, 0
	for _, r := range line {
		if r == ' ' {
			spaces++
		} else {
			if spaces >= 2 {
				cell++
				if cell == n {
					return col
				}
			}
			spaces = 0
		}
		col += runewidth.RuneWidth(r)
	}
	return -1
}
