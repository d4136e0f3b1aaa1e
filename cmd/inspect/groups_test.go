package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/mermaid/mermaidtest"
)

// realGroups is what a real session's parallel calls must come to: how
// many trunk responses made more than one call, and the most calls one
// made (truth.json's main.responses_with_parallel_tool_calls and
// main.max_tool_calls_in_one_response).
type realGroups struct {
	name      string
	session   string
	responses int
	most      int
	// branches are truth.json's branches in call order (its forks' order,
	// the order of the graph JSON's forks and branches): the same counts
	// for those whose steps the parent recorded (inner), nil for the others.
	branches []*branchGroups
}

type branchGroups struct {
	Responses int `json:"responses_with_parallel_tool_calls"`
	Most      int `json:"max_tool_calls_in_one_response"`
}

// realGroupSessions are the real Claude Code sessions with parallel
// calls: the three of entire/ with their truth.json (computed from the raw
// lines by a script that shares no code with inspect), and tool_heavy,
// whose SOURCE.txt names its two (WebSearch+Glob, Read+WebFetch).
func realGroupSessions(t *testing.T) []realGroups {
	t.Helper()
	root := importerstest.Transcripts(t)
	out := []realGroups{{name: "tool_heavy", session: filepath.Join(root, "claude-code", "tool_heavy.jsonl"), responses: 2, most: 2}}
	cases, err := filepath.Glob(filepath.Join(root, "claude-code", "entire", "*", "truth.json"))
	if err != nil || len(cases) < 3 {
		t.Fatalf("entire/*/truth.json: %d found, %v; want the three real sessions", len(cases), err)
	}
	for _, tp := range cases {
		var truth struct {
			Main     branchGroups `json:"main"`
			Branches []struct {
				Inner *branchGroups `json:"inner"`
			} `json:"branches"`
		}
		b, err := os.ReadFile(tp)
		if err == nil {
			err = json.Unmarshal(b, &truth)
		}
		if err != nil {
			t.Fatalf("%s: %v", tp, err)
		}
		sessions, _ := filepath.Glob(filepath.Join(filepath.Dir(tp), "*", "*", "0", "full.jsonl"))
		if len(sessions) != 1 {
			t.Fatalf("%s: %d full.jsonl beside it, want 1", tp, len(sessions))
		}
		rg := realGroups{name: filepath.Base(filepath.Dir(tp)), session: sessions[0], responses: truth.Main.Responses, most: truth.Main.Most}
		for _, b := range truth.Branches {
			rg.branches = append(rg.branches, b.Inner)
		}
		out = append(out, rg)
	}
	return out
}

// TestGraph_ParallelGroups_RealSessions: the parallel calls of real Claude
// Code sessions are drawn side by side in every format of inspect graph.
// The graph JSON counts the trunk's groups and their largest as truth.json
// does, and each sub-agent's whose steps the parent recorded (the five of
// fanout5-progress); each group of two or more drawn members is, in the Mermaid chart,
// a subgraph p<seq> holding exactly its first members (a larger group's
// rest in one box with its count) with an arrow from the response to each,
// and the chart passes the real Mermaid parser; in DOT, a cluster_p<seq>
// whose members share one rank; and the JSON's arrows run from the
// response to each member.
func TestGraph_ParallelGroups_RealSessions(t *testing.T) {
	f, _, _ := testFactory(t)
	mmd := map[string][]byte{}
	for _, rs := range realGroupSessions(t) {
		t.Run(rs.name, func(t *testing.T) {
			out, errOut, code := inspectRun(t, f, "import", rs.session)
			if code != 0 {
				t.Fatalf("import: exit %d\n%s%s", code, out, errOut)
			}
			m := regexp.MustCompile(`imported run ([0-9a-f]+)`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("import said %q", out)
			}
			id := m[1]

			jsonOut, errOut, code := inspectRun(t, f, "graph", id, "--format", "json")
			if code != 0 {
				t.Fatalf("graph --format json: exit %d: %s", code, errOut)
			}
			var g struct {
				Nodes []struct {
					ID, Kind, Branch, Group string
				} `json:"nodes"`
				Groups []struct {
					ID, LLM, Branch string
					Calls           int
					Members         []string
				} `json:"groups"`
				Edges []struct{ From, To string } `json:"edges"`
				Forks []struct {
					Branches []struct{ Path string } `json:"branches"`
				} `json:"forks"`
			}
			if err := json.Unmarshal([]byte(jsonOut), &g); err != nil {
				t.Fatal(err)
			}
			responses, most := 0, 0
			groupOf := map[string]string{}
			for _, gr := range g.Groups {
				for _, mb := range gr.Members {
					groupOf[mb] = gr.ID
				}
				if gr.Branch != "" {
					continue
				}
				responses++
				most = max(most, gr.Calls)
			}
			if responses != rs.responses || most != rs.most {
				t.Errorf("graph JSON: %d trunk responses with parallel calls, at most %d calls; truth says %d and %d", responses, most, rs.responses, rs.most)
			}
			var paths []string
			for _, fk := range g.Forks {
				for _, b := range fk.Branches {
					paths = append(paths, b.Path)
				}
			}
			if rs.branches != nil && len(paths) != len(rs.branches) {
				t.Errorf("%d branches, truth.json has %d", len(paths), len(rs.branches))
			} else {
				for i, want := range rs.branches {
					if want == nil {
						continue
					}
					n, most := 0, 0
					for _, gr := range g.Groups {
						if gr.Branch == paths[i] {
							n++
							most = max(most, gr.Calls)
						}
					}
					if n != want.Responses || most != want.Most {
						t.Errorf("branch %s: %d responses with parallel calls, at most %d calls; truth says %d and %d", paths[i], n, most, want.Responses, want.Most)
					}
				}
			}
			for _, n := range g.Nodes {
				if n.Group != groupOf[n.ID] {
					t.Errorf("node %s says group %q; the groups list it in %q", n.ID, n.Group, groupOf[n.ID])
				}
			}
			edges := map[[2]string]bool{}
			for _, e := range g.Edges {
				edges[[2]string{e.From, e.To}] = true
			}

			mm, errOut, code := inspectRun(t, f, "graph", id)
			if code != 0 {
				t.Fatalf("graph: exit %d: %s", code, errOut)
			}
			mmd[rs.name+".mmd"] = []byte(mm)
			dot, errOut, code := inspectRun(t, f, "graph", id, "--format", "dot")
			if code != 0 {
				t.Fatalf("graph --format dot: exit %d: %s", code, errOut)
			}
			drawn := 0
			for _, gr := range g.Groups {
				if len(gr.Members) < 2 {
					continue // one fork of several delegations: its branches are side by side already
				}
				drawn++
				for _, mb := range gr.Members {
					if !edges[[2]string{gr.LLM, mb}] {
						t.Errorf("%s: no arrow %s -> %s in the graph JSON", gr.ID, gr.LLM, mb)
					}
				}
				want := wantBoxes(gr.Members)
				if got := mermaidSubgraph(t, mm, gr.ID); strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("Mermaid subgraph %s holds %v, want %v", gr.ID, got, want)
				}
				for _, b := range want {
					if !strings.Contains(mm, "\n  "+gr.LLM+" --> "+b+"\n") {
						t.Errorf("Mermaid: no arrow %s --> %s", gr.LLM, b)
					}
				}
				if got := dotRank(t, dot, gr.ID); strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("DOT cluster_%s ranks %v together, want %v", gr.ID, got, want)
				}
			}
			if drawn == 0 {
				t.Error("no group of two or more calls was drawn")
			}
		})
	}
	mermaidtest.Check(t, mmd)
}

// wantBoxes are the boxes the chart draws for a group's members: every
// one up to mermaid.MaxCalls (5), else the first four and the box of the
// rest (its id is its first node's).
func wantBoxes(members []string) []string {
	if len(members) <= 5 {
		return members
	}
	return members[:5]
}

// mermaidSubgraph returns the ids of the boxes declared in subgraph id.
func mermaidSubgraph(t *testing.T, mm, id string) []string {
	t.Helper()
	lines := strings.Split(mm, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(strings.TrimSpace(l), "subgraph "+id+"[") {
			continue
		}
		var ids []string
		for _, l := range lines[i+1:] {
			l = strings.TrimSpace(l)
			if l == "end" {
				return ids
			}
			if strings.HasPrefix(l, "subgraph ") {
				t.Errorf("subgraph %s holds a subgraph: %s", id, l)
				return ids
			}
			if k := strings.Index(l, `["`); k > 0 {
				ids = append(ids, l[:k])
			}
		}
	}
	t.Errorf("no Mermaid subgraph %s", id)
	return nil
}

// dotRank returns the nodes the rank=same line of cluster_<id> names, in order.
func dotRank(t *testing.T, dot, id string) []string {
	t.Helper()
	i := strings.Index(dot, "subgraph cluster_"+id+" {")
	if i < 0 {
		t.Errorf("no DOT cluster_%s", id)
		return nil
	}
	// its members' lines, then its rank line: the first after it
	m := regexp.MustCompile(`\{ rank=same; ([^}]*)\}`).FindStringSubmatch(dot[i:])
	if m == nil {
		t.Errorf("cluster_%s has no rank=same", id)
		return nil
	}
	var ids []string
	for _, s := range strings.Split(m[1], ";") {
		if s = strings.TrimSpace(s); s != "" {
			ids = append(ids, s)
		}
	}
	return ids
}
