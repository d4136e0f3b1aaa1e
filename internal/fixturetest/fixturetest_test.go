package fixturetest_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/internal/fixturetest"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// request is what the test reads of a reconstructed Chat Completions body.
type request struct {
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// TestRecord_Imported imports the LangGraph fixtures of cache.unstable-prefix
// and checks the shape the rule needs, as importers/otlp/testdata/gen/cache.mjs
// made it: one conversation of one agent whose model calls follow each other
// (a tool call between), each request holding its system prompt and tools;
// the time fixture's second system line is a different "Current time:" each
// call, the tool-order fixture's tools come most recently used first, the
// stable one keeps both and has a second user turn.
func TestRecord_Imported(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	first := []string{"get_forecast", "get_warning", "find_location"} // the order the tools are defined in
	for _, tt := range []struct {
		name  string
		calls int
		users int
		tools [][]string // each call's tool order; nil: first every time
		time  bool       // line 2 of the system prompt is the current time
	}{
		{name: "cache-unstable-system-time", calls: 4, users: 1, time: true},
		{name: "cache-unstable-tool-order", calls: 4, users: 1, tools: [][]string{first,
			{"find_location", "get_forecast", "get_warning"},
			{"get_forecast", "find_location", "get_warning"},
			{"get_warning", "get_forecast", "find_location"}}},
		{name: "cache-stable-prompt", calls: 6, users: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join("..", "..", "fixtures", tt.name)
			if !fixturetest.Imported(dir) {
				t.Fatalf("%s has no %s", dir, fixturetest.Trace)
			}
			g, err := fixturetest.Record(ctx, db, dir, t.TempDir(), "run-"+tt.name, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if g.ID != "run-"+tt.name {
				t.Errorf("run id %q, want run-%s", g.ID, tt.name)
			}
			if len(g.Conversations) != 1 {
				t.Fatalf("%d conversations, want 1", len(g.Conversations))
			}
			var llms []*graph.Node
			users := 0
			for _, n := range g.Conversations[0].Nodes {
				switch n.Kind {
				case record.KindUser:
					users++
				case record.KindLLM:
					llms = append(llms, n)
				case record.KindHandoff, record.KindFork:
					t.Errorf("%s: a %s in a one-agent run", n.ID(), n.Kind)
				}
			}
			if len(llms) != tt.calls || users != tt.users {
				t.Fatalf("%d llm nodes and %d user turns, want %d and %d", len(llms), users, tt.calls, tt.users)
			}
			var systems []string
			for i, n := range llms {
				if n.Agent != llms[0].Agent {
					t.Errorf("%s: agent %s, want %s", n.ID(), n.Agent, llms[0].Agent)
				}
				body, err := db.Request(ctx, g.ID, n.Seq)
				if err != nil {
					t.Fatalf("%s: %v", n.ID(), err)
				}
				var r request
				if err := json.Unmarshal(body, &r); err != nil {
					t.Fatalf("%s: request: %v", n.ID(), err)
				}
				if len(r.Messages) == 0 || r.Messages[0].Role != "system" {
					t.Fatalf("%s: the request does not start with a system message", n.ID())
				}
				systems = append(systems, r.Messages[0].Content)
				var names []string
				for _, tl := range r.Tools {
					names = append(names, tl.Function.Name)
				}
				want := first
				if tt.tools != nil {
					want = tt.tools[i]
				}
				if !reflect.DeepEqual(names, want) {
					t.Errorf("%s: tools %v, want %v", n.ID(), names, want)
				}
			}
			for i, s := range systems {
				lines := strings.Split(s, "\n")
				if tt.time != (len(lines) > 1 && strings.HasPrefix(lines[1], "Current time: ")) {
					t.Errorf("%s: system line 2 %q (the time there: %v)", llms[i].ID(), lines[min(1, len(lines)-1)], tt.time)
				}
				if i > 0 && (s == systems[i-1]) == tt.time {
					t.Errorf("%s: system prompt the same as the call before: %v, want %v", llms[i].ID(), s == systems[i-1], !tt.time)
				}
			}
		})
	}
}
