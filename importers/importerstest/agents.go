package importerstest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// The harness testdata/gen/agents runs real coding-agent CLIs against a
// scripted model and keeps, per CLI and scenario, the session files the CLI
// wrote (session/), the scripted server's log of every request it answered
// (requests.jsonl: the ground truth) and the scenario's plan
// (scenario.json). These types read what it keeps.

// AgentsRun is one CLI's run of one harness scenario.
type AgentsRun struct {
	Dir      string // the folder holding session/, requests.jsonl, scenario.json
	CLI      string `json:"cli"`
	Version  string `json:"version"`
	Scenario string `json:"scenario"`
	Prompts  []string
	Exit     []int `json:"exit"`
	// Interrupted names the conversation whose request the user
	// interrupted (SIGINT while it was held), "" when none.
	Interrupted string    `json:"interrupted"`
	Plan        AgentPlan `json:"plan"`
	Log         []LogEntry
}

// AgentPlan is the scenario's structure as its script lays it out.
type AgentPlan struct {
	Trunk    []string     `json:"trunk"` // the main agent's conversations
	Branches []PlanBranch `json:"branches"`
}

// PlanBranch is one sub-agent the script starts.
type PlanBranch struct {
	Task       string   `json:"task"`
	Parent     string   `json:"parent"` // the starting sub-agent's task, "" for the main agent
	Convs      []string `json:"convs"`  // its conversations (a follow-up's after its first)
	Type       string   `json:"type"`
	Background bool     `json:"background"`
}

// LogEntry is one request the scripted server answered.
type LogEntry struct {
	Seq    int       `json:"seq"`
	Time   time.Time `json:"time"`
	Path   string    `json:"path"`
	Agent  string    `json:"agent"`
	Conv   string    `json:"conv"`
	Step   int       `json:"step"`
	Model  string    `json:"model"`
	Status int       `json:"status"`
	Calls  []string  `json:"calls"`
	// CallIDs are the calls' ids where the server made them, Tasks the
	// sub-agent conversation each call starts or gives more work.
	CallIDs []string `json:"call_ids"`
	Tasks   []string `json:"tasks"`
	Text    string   `json:"text"`
	Usage   *struct {
		Input      int64 `json:"input"`
		CacheRead  int64 `json:"cache_read"`
		CacheWrite int64 `json:"cache_write"`
		Output     int64 `json:"output"`
	} `json:"usage"`
	Held    bool `json:"held"`
	Compact bool `json:"compact"`
	Side    bool `json:"side"`
	// BodySHA256 is the SHA-256 of the request body the server received;
	// UserID an Anthropic request's metadata.user_id (logged since the
	// harness records it; "" in older logs).
	BodySHA256 string `json:"body_sha256"`
	UserID     string `json:"user_id"`
}

// AgentsRoot is the folder of the harness's output the tests read: the
// one INSPECT_AGENTS_OUT names (a fresh run of the harness, as CI makes),
// else the committed fixtures, testdata/agents at the repository's root
// (found from the working folder up).
func AgentsRoot(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("INSPECT_AGENTS_OUT"); d != "" {
		return d
	}
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "testdata", "agents")
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("no go.mod above the working folder")
		}
		dir = filepath.Dir(dir)
	}
}

// AgentsRuns reads every scenario run of cli under root (root/cli/*/).
// With INSPECT_REQUIRE_AGENTS set, finding none fails the test instead of
// skipping it.
func AgentsRuns(t *testing.T, root, cli string) []*AgentsRun {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(root, cli, "*", "scenario.json"))
	if len(dirs) == 0 {
		if os.Getenv("INSPECT_REQUIRE_AGENTS") != "" {
			t.Fatalf("no %s scenario runs under %s (INSPECT_REQUIRE_AGENTS is set)", cli, root)
		}
		t.Skipf("no %s scenario runs under %s", cli, root)
	}
	sort.Strings(dirs)
	var runs []*AgentsRun
	for _, p := range dirs {
		runs = append(runs, ReadAgentsRun(t, filepath.Dir(p)))
	}
	return runs
}

// ReadAgentsRun reads one scenario run's scenario.json and requests.jsonl.
func ReadAgentsRun(t *testing.T, dir string) *AgentsRun {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "scenario.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := &AgentsRun{Dir: dir}
	if err := json.Unmarshal(b, r); err != nil {
		t.Fatalf("%s/scenario.json: %v", dir, err)
	}
	var p struct {
		Prompts []string `json:"prompts"`
	}
	_ = json.Unmarshal(b, &p)
	r.Prompts = p.Prompts
	f, err := os.Open(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e LogEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s/requests.jsonl: %v", dir, err)
		}
		r.Log = append(r.Log, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return r
}

// Scripted returns the log's requests of the given conversations that the
// script answered (not the CLI's own title or routing requests, not a
// compaction's summary request), in the order they came.
func (r *AgentsRun) Scripted(convs ...string) []LogEntry {
	var out []LogEntry
	for _, e := range r.Log {
		if e.Side || e.Compact {
			continue
		}
		for _, c := range convs {
			if e.Conv == c {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

// Compactions returns the log's compaction requests of the given
// conversations.
func (r *AgentsRun) Compactions(convs ...string) []LogEntry {
	var out []LogEntry
	for _, e := range r.Log {
		if !e.Compact {
			continue
		}
		for _, c := range convs {
			if e.Conv == c {
				out = append(out, e)
			}
		}
	}
	return out
}

// Branch returns the plan's branch of task, or nil.
func (r *AgentsRun) Branch(task string) *PlanBranch {
	for i := range r.Plan.Branches {
		if r.Plan.Branches[i].Task == task {
			return &r.Plan.Branches[i]
		}
	}
	return nil
}

// Session returns the files of the run's session folder whose paths
// (relative to session/, slash-separated) match pattern, sorted.
func (r *AgentsRun) Session(pattern string) []string {
	var out []string
	root := filepath.Join(r.Dir, "session")
	_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if ok, _ := filepath.Match(pattern, filepath.ToSlash(rel)); ok {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// TaskOf returns the task id the first marker "[task:ID]" in text names,
// or "".
func TaskOf(text string) string {
	i := strings.Index(text, "[task:")
	if i < 0 {
		return ""
	}
	rest := text[i+len("[task:"):]
	j := strings.IndexByte(rest, ']')
	if j < 0 {
		return ""
	}
	return rest[:j]
}

// OTLP is the run's own OpenTelemetry traces (otlp/traces-*.json, the
// export bodies the CLI sent, as inspect collect kept them) joined as one
// OTLP/JSON lines file in t's temporary folder, as a collector's file
// exporter writes them; "" when the CLI sent none.
func (r *AgentsRun) OTLP(t testing.TB) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(r.Dir, "otlp", "traces-*.json"))
	if len(files) == 0 {
		return ""
	}
	sort.Strings(files)
	var buf bytes.Buffer
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Compact(&buf, b); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		buf.WriteByte('\n')
	}
	out := filepath.Join(t.TempDir(), "traces.otlp.jsonl")
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}
