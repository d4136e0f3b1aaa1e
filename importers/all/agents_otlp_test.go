package all_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/importers/otlp"
	"github.com/inspect-dev/inspect/store"
)

// Claude Code's own OpenTelemetry traces of a scenario (the harness's
// -otel: CLAUDE_CODE_ENABLE_TELEMETRY with the enhanced-telemetry beta,
// exported as OTLP/JSON to the scripted server, kept in otlp/) are
// imported as the otlp format and compared with the server's log like the
// session files are: a branch per sub-agent (the spans' agent_id is the
// x-claude-code-agent-id of the sub-agent's requests), each conversation's
// model calls and the tools each asked for, tokens, timing. The run that
// `inspect collect` recorded live from the same exports (collect.db, the
// harness's -collect) must be the run the files give, node for node.
func TestAgents_ClaudeCodeOTLP(t *testing.T) {
	root := importerstest.AgentsRoot(t)
	n := 0
	for _, run := range importerstest.AgentsRuns(t, root, "claude") {
		if files, _ := filepath.Glob(filepath.Join(run.Dir, "otlp", "traces-*.json")); len(files) == 0 {
			continue
		}
		n++
		t.Run(run.Scenario, func(t *testing.T) {
			path := run.OTLP(t)
			ss, err := otlp.Format{}.Read(context.Background(), path, importers.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(ss) != 1 {
				t.Fatalf("%d traces, want 1 (one prompt)", len(ss))
			}
			s := ss[0]
			// a branch is named by its agent_id, the x-claude-code-agent-id
			// its requests carried; one that never ran by the id of the
			// call that asked for it, which the server made
			task := map[string]string{}
			for _, b := range run.Plan.Branches {
				for _, e := range run.Scripted(b.Convs...) {
					if e.Agent != "" {
						task[e.Agent] = b.Task
					}
				}
			}
			for _, e := range run.Log {
				for i, id := range e.CallIDs {
					if i < len(e.Tasks) && e.Tasks[i] != "" && id != "" {
						task["call:"+id] = e.Tasks[i]
					}
				}
			}
			checkRun(t, run, s, func(b *importers.Branch) string {
				if t := task[b.Name]; t != "" {
					return t
				}
				return task["call:"+b.CallID]
			}, true)
			if _, err := os.Stat(filepath.Join(run.Dir, "collect.db")); err == nil {
				t.Run("collect", func(t *testing.T) { sameAsCollected(t, run, path) })
			}
		})
	}
	if n == 0 {
		if os.Getenv("INSPECT_REQUIRE_AGENTS") != "" {
			t.Fatalf("no Claude Code scenario under %s kept its traces (the harness's -otel)", root)
		}
		t.Skip("no Claude Code scenario kept its traces (run the harness with -otel)")
	}
}

// sameAsCollected requires the run inspect collect recorded while the
// spans arrived to be the one importing the exported files gives: the same
// nodes, requests and responses.
func sameAsCollected(t *testing.T, run *importerstest.AgentsRun, path string) {
	ctx := context.Background()
	live, err := store.Open(ctx, filepath.Join(run.Dir, "collect.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	runs, err := live.ListRuns(ctx, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("inspect collect recorded %d runs, want 1", len(runs))
	}
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := importers.Import(ctx, db, otlp.Format{}, path, importers.Options{})
	if err != nil || len(res) != 1 {
		t.Fatalf("import: %v, %d runs", err, len(res))
	}
	got := nodesOnly(importerstest.StoredRun(t, live, runs[0].ID, nil))
	want := nodesOnly(importerstest.StoredRun(t, db, res[0].RunID, nil))
	if got != want {
		t.Errorf("the run inspect collect recorded live differs from the exported files' import:\n got %s\nwant %s", got, want)
	}
}

// nodesOnly drops a stored run's first line (the run: its source path and
// times of writing differ between a live collect and a file).
func nodesOnly(text string) string {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 64<<20)
	var b strings.Builder
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	return b.String()
}
