package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime/runtimetest"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/cache/report"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graphjson"
	"github.com/inspect-dev/inspect/mermaid"
	"github.com/inspect-dev/inspect/store"
)

// recordFixture runs fixtures/<name> with the scripted model at a fixed
// clock and run id into f's database; the project is copied first, so its
// tools never write into the repository.
func recordFixture(t *testing.T, f *Factory, name string) *graph.Run {
	t.Helper()
	ctx := context.Background()
	db, err := f.Store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g, err := runtimetest.RecordFixture(ctx, db, filepath.Join("..", "..", "fixtures", name), t.TempDir(), "run-"+name,
		time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestNewCmdGraph(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want GraphOptions
	}{
		{"defaults", nil, GraphOptions{RunRef: "latest", Format: "mermaid"}},
		{"run", []string{"7f3a"}, GraphOptions{RunRef: "7f3a", Format: "mermaid"}},
		{"flags", []string{"base.db:latest", "--format", "png", "-o", "x.png", "--full"},
			GraphOptions{RunRef: "base.db:latest", Format: "png", Output: "x.png", Full: true, FormatSet: true}},
		{"short format", []string{"-f", "json"}, GraphOptions{RunRef: "latest", Format: "json", FormatSet: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, _ := testFactory(t)
			var got *GraphOptions
			cmd := NewCmdGraph(f, func(o *GraphOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			got.F = nil
			if *got != tt.want {
				t.Errorf("options = %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestGraphRun(t *testing.T) {
	f, out, errOut := testFactory(t)
	g := recordFixture(t, f, "fanout-compact")
	db, err := f.Store(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := cache.Analyze(context.Background(), g, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := (&mermaid.Config{Notes: report.Notes(rep)}).Fprint(&want, g); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(want.String(), "%% cache reads ") || !strings.Contains(want.String(), " · reuse 94% · ") {
		t.Errorf("the chart lacks the cache line or a reusable share:\n%s", want.String())
	}

	if code := run(context.Background(), f, []string{"graph"}); code != ExitOK {
		t.Fatalf("graph: exit %d: %s", code, errOut)
	}
	if out.String() != want.String() {
		t.Errorf("graph printed:\n%s\nwant mermaid.Fprint's:\n%s", out, want.String())
	}
	if !strings.Contains(out.String(), "%% run run-fanout-compact · ok") || !strings.Contains(out.String(), "flowchart TD\n") {
		t.Errorf("not the Mermaid of the run:\n%s", out)
	}

	out.Reset()
	if code := run(context.Background(), f, []string{"graph", "run-fanout", "--format", "json"}); code != ExitOK {
		t.Fatalf("graph --format json: exit %d: %s", code, errOut)
	}
	var j graphjson.Graph
	if err := json.Unmarshal(out.Bytes(), &j); err != nil || j.Schema != graphjson.Schema || len(j.Nodes) != len(g.Nodes) {
		t.Errorf("json: err %v, schema %q, %d nodes (want %d)", err, j.Schema, len(j.Nodes), len(g.Nodes))
	}

	out.Reset()
	if code := run(context.Background(), f, []string{"graph", "--format", "dot"}); code != ExitOK {
		t.Fatalf("graph --format dot: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out.String(), "digraph run {") || !strings.Contains(out.String(), "subgraph cluster_b1 {") {
		t.Errorf("dot output:\n%s", out)
	}

	dir := t.TempDir()
	for _, tt := range []struct{ format, magic string }{{"svg", "<svg"}, {"png", "\x89PNG\r\n"}} {
		path := filepath.Join(dir, "run."+tt.format)
		if code := run(context.Background(), f, []string{"graph", "--format", tt.format, "-o", path}); code != ExitOK {
			t.Fatalf("graph --format %s: exit %d: %s", tt.format, code, errOut)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b[:min(len(b), 400)], []byte(tt.magic)) {
			t.Errorf("%s output does not start like one: %q", tt.format, b[:min(len(b), 40)])
		}
	}

	// Without --format, -o's extension chooses it: out.png is a PNG, not
	// Mermaid text in a file called out.png (issue 12, item 14).
	for _, tt := range []struct{ file, magic string }{{"out.png", "\x89PNG\r\n"}, {"out.svg", "<svg"}, {"out.dot", "digraph run {"}, {"out.json", `"schema"`}, {"out.mmd", "flowchart TD"}, {"out.txt", "flowchart TD"}} {
		path := filepath.Join(dir, tt.file)
		if code := run(context.Background(), f, []string{"graph", "-o", path}); code != ExitOK {
			t.Fatalf("graph -o %s: exit %d: %s", tt.file, code, errOut)
		}
		if b, _ := os.ReadFile(path); !bytes.Contains(b[:min(len(b), 800)], []byte(tt.magic)) {
			t.Errorf("graph -o %s wrote %q, want it to hold %q", tt.file, b[:min(len(b), 40)], tt.magic)
		}
	}
}

func TestGraphRun_Errors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		tty     bool
		wantErr string
	}{
		{"bad format", []string{"graph", "--format", "gif"}, false, `--format "gif" is not one of mermaid, dot, svg, png, json`},
		{"image to a terminal", []string{"graph", "--format", "png"}, true, "give -o FILE or redirect stdout"},
		{"unknown run", []string{"graph", "nope"}, false, `no run matches "nope"`},
		{"too many args", []string{"graph", "a", "b"}, false, "takes 0 to 1 arguments"},
		// a bad output path is input (exit 2), and nothing is rendered for it
		{"no such folder", []string{"graph", "-o", "/nonexistent/x"}, false, "-o /nonexistent/x: there is no folder /nonexistent"},
		{"output is a folder", []string{"graph", "-o", os.TempDir()}, false, "is a folder; give a file name"},
		{"extension against --format", []string{"graph", "-o", "out.png", "--format", "dot"}, false, "-o out.png holds png but --format is dot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, errOut := testFactory(t)
			recordFixture(t, f, "fanout-compact")
			f.IO.OutTTY = tt.tty
			if code := run(context.Background(), f, tt.args); code != ExitUsage {
				t.Errorf("exit %d, want %d", code, ExitUsage)
			}
			if !strings.Contains(errOut.String(), tt.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", errOut, tt.wantErr)
			}
		})
	}
}

func TestShowRun(t *testing.T) {
	f, out, errOut := testFactory(t)
	g := recordFixture(t, f, "fanout-compact")
	ctx := context.Background()
	db, _ := f.Store(ctx)
	byKind := map[record.Kind]*graph.Node{}
	for _, n := range g.Nodes {
		if byKind[n.Kind] == nil {
			byKind[n.Kind] = n
		}
	}
	if err := db.AddAsk(ctx, &store.Ask{RunID: g.ID, NodeSeq: byKind[record.KindLLM].Seq, Mode: "question",
		Question: "Why read first?", Answer: "To learn the regions.", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		kind record.Kind
		want []string
	}{
		{record.KindLLM, []string{"· llm · trunk · ok", "## Request (", "- tools offered: ", "1. system", "## Response", "- usage: in ",
			"## Asks (1)", "**Q:** Why read first?", "To learn the regions."}},
		{record.KindTool, []string{"· tool ·", "### Arguments", "### Result"}},
		{record.KindFork, []string{"· fork ·", "- context: compact", "### Branch "}},
		{record.KindJoin, []string{"· join ·", "- closes fork: n"}},
		{record.KindUser, []string{"· user ·", "### Message"}},
		{record.KindFinal, []string{"· final ·", "### Answer"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			n := byKind[tt.kind]
			if n == nil {
				t.Fatalf("the fixture has no %s node", tt.kind)
			}
			out.Reset()
			if code := run(ctx, f, []string{"show", g.ID, n.ID()}); code != ExitOK {
				t.Fatalf("show %s: exit %d: %s", n.ID(), code, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("show %s lacks %q:\n%s", n.ID(), w, out)
				}
			}
		})
	}
	t.Run("request rebuilt", func(t *testing.T) {
		n := byKind[record.KindLLM]
		db, err := f.Store(ctx) // run closed the earlier handle
		if err != nil {
			t.Fatal(err)
		}
		body, err := db.Request(ctx, g.ID, n.Seq)
		if err != nil {
			t.Fatal(err)
		}
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
			t.Fatalf("request: %v", err)
		}
		out.Reset()
		run(ctx, f, []string{"show", n.ID()})
		if first := req.Messages[0].Content; !strings.Contains(out.String(), strings.TrimSpace(first)) {
			t.Errorf("show does not print the first message in full")
		}
	})
	t.Run("unknown node", func(t *testing.T) {
		errOut.Reset()
		if code := run(ctx, f, []string{"show", "n999"}); code != ExitUsage {
			t.Errorf("exit %d, want %d", code, ExitUsage)
		}
		if !strings.Contains(errOut.String(), "has no node n999") || !strings.Contains(errOut.String(), "nearest: ") {
			t.Errorf("stderr = %q", errOut)
		}
	})
}
