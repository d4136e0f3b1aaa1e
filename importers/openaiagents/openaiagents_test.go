package openaiagents

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/record"
)

// The traces under testdata/ were written by the real @openai/agents 0.20.0
// (testdata/gen/gen.mjs) against a scripted server, except
// python-export.jsonl, written by hand in the shape of the Python SDK's
// export() (span_data.py): usage on response spans, isoformat times.
var fixtures = []string{
	"handoff.jsonl",
	"handoff-ingest.json",
	"parallel-agents-as-tools.jsonl",
	"parallel-agents-as-tools-no-task-turn.jsonl",
	"serial-loop.jsonl",
	"failure.jsonl",
	"handoff-loop-max-turns.jsonl",
	"handoff-loop-max-turns-no-task-turn.jsonl",
	"python-export.jsonl",
}

func read(t *testing.T, name string) *importers.Session {
	t.Helper()
	ss, err := Format{}.Read(context.Background(), filepath.Join("testdata", name), importers.Options{})
	if err != nil {
		t.Fatalf("Read(%s): %v", name, err)
	}
	if len(ss) != 1 {
		t.Fatalf("Read(%s) = %d sessions, want 1", name, len(ss))
	}
	return ss[0]
}

type totals = importerstest.Totals

// rawTotals counts from the file with nothing but encoding/json and maps:
// model spans, function spans (those with an agent under them are
// sub-agents), hand-off spans, tokens (the runner's task spans' totals when
// the trace has them, else the usage of each recorded model response), and
// sub-agent pairs whose agent spans overlap.
func rawTotals(t *testing.T, name string) totals {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var objs []map[string]any
	if strings.HasPrefix(strings.TrimSpace(string(b)), `{"data"`) || strings.HasPrefix(strings.TrimSpace(string(b)), "{\n") {
		var doc struct{ Data []map[string]any }
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		objs = doc.Data
	} else {
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var o map[string]any
			if err := json.Unmarshal([]byte(l), &o); err != nil {
				t.Fatal(err)
			}
			objs = append(objs, o)
		}
	}
	parent := map[string]string{}
	data := map[string]map[string]any{}
	times := map[string][2]time.Time{}
	for _, o := range objs {
		if o["object"] != "trace.span" {
			continue
		}
		id := o["id"].(string)
		p, _ := o["parent_id"].(string)
		parent[id] = p
		data[id] = o["span_data"].(map[string]any)
		s, _ := time.Parse(time.RFC3339Nano, o["started_at"].(string))
		e, _ := time.Parse(time.RFC3339Nano, o["ended_at"].(string))
		times[id] = [2]time.Time{s, e}
	}
	num := func(m any, path ...string) int64 {
		for _, k := range path {
			mm, ok := m.(map[string]any)
			if !ok {
				return 0
			}
			m = mm[k]
		}
		f, _ := m.(float64)
		return int64(f)
	}
	// The nearest function span above each agent span, if any.
	fnOf := func(id string) string {
		for p := parent[id]; p != ""; p = parent[p] {
			switch data[p]["type"] {
			case "function":
				return p
			case "agent":
				return ""
			}
		}
		return ""
	}
	underTask := func(id string) bool {
		for p := parent[id]; p != ""; p = parent[p] {
			if data[p]["type"] == "custom" && data[p]["name"] == "task" {
				return true
			}
		}
		return false
	}
	var tt totals
	subAgents := map[string]bool{}
	var subAgentSpans []string
	var taskIn, taskOut, taskCached, respIn, respOut, respCached int64
	tasks := false
	for id, d := range data {
		switch d["type"] {
		case "generation", "response":
			tt.Responses++
			u := d["usage"]
			if u == nil {
				if out, ok := d["output"].([]any); ok && len(out) > 0 {
					u = out[0].(map[string]any)["usage"]
				}
			}
			respIn += num(u, "input_tokens") + num(u, "prompt_tokens")
			respOut += num(u, "output_tokens") + num(u, "completion_tokens")
			respCached += num(u, "input_tokens_details", "cached_tokens") + num(u, "prompt_tokens_details", "cached_tokens")
			tt.Reasoning += num(u, "output_tokens_details", "reasoning_tokens") + num(u, "completion_tokens_details", "reasoning_tokens")
		case "handoff":
			tt.Handoffs++
		case "agent":
			if f := fnOf(id); f != "" && !subAgents[f] {
				subAgents[f] = true
				subAgentSpans = append(subAgentSpans, id)
			}
		case "custom":
			if num(d, "data", "usage", "requests") > 0 || d["name"] == "task" {
				// The JS SDK's task usage includes the runs of the agents it
				// called as tools (their tasks, nested in it): only the
				// outermost tasks count.
				if u, ok := d["data"].(map[string]any)["usage"]; ok && d["name"] == "task" && !underTask(id) {
					tasks = true
					taskIn += num(u, "input_tokens")
					taskOut += num(u, "output_tokens")
					taskCached += num(u, "cached_input_tokens")
				}
			}
		}
	}
	for _, d := range data {
		if d["type"] == "function" {
			tt.Tools++
		}
	}
	tt.SubAgents = len(subAgents)
	tt.Tools -= tt.SubAgents
	// The model spans' own usage when they report it (Python, streamed
	// Chat Completions), else the runs' totals (the JS SDK puts usage on
	// task and turn spans only).
	if tasks && respIn == 0 && respOut == 0 {
		tt.In, tt.Out, tt.Cached = taskIn, taskOut, taskCached
	} else {
		tt.In, tt.Out, tt.Cached = respIn, respOut, respCached
	}
	var windows [][2]time.Time
	for _, id := range subAgentSpans {
		windows = append(windows, times[id])
	}
	tt.Overlapping = importerstest.Overlaps(windows)
	return tt
}

var sessionTotals = importerstest.Count

func TestRead_TotalsMatchRawFile(t *testing.T) {
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			want := rawTotals(t, name)
			got := sessionTotals(read(t, name))
			if got != want {
				t.Errorf("session totals\n got %+v\nwant %+v (from the raw file)", got, want)
			}
		})
	}
}

// TestRead_Totals_HandWritten pins the counts themselves, so that a change
// to the fixtures or to both counters shows.
func TestRead_Totals_HandWritten(t *testing.T) {
	tests := []struct {
		name string
		want totals
	}{
		{"handoff.jsonl", totals{Responses: 3, Tools: 1, Handoffs: 1, In: 507, Out: 30, Cached: 128}},
		{"parallel-agents-as-tools.jsonl", totals{Responses: 8, Tools: 3, SubAgents: 3, Overlapping: 3}},
		{"serial-loop.jsonl", totals{Responses: 4, Tools: 3, Reasoning: 5}},
		{"failure.jsonl", totals{Responses: 5, Tools: 1, SubAgents: 2, Overlapping: 1}},
		{"handoff-loop-max-turns.jsonl", totals{Responses: 4, Handoffs: 4, In: 724, Out: 36, Cached: 256}},
		{"python-export.jsonl", totals{Responses: 5, Tools: 2, SubAgents: 2, Overlapping: 1, In: 2970, Out: 150, Cached: 1664, Reasoning: 32}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sessionTotals(read(t, tt.name))
			// Token totals of the JS traces depend on request sizes; pin
			// those only where the test names them.
			if tt.want.In == 0 {
				got.In, got.Out, got.Cached = 0, 0, 0
			}
			if got != tt.want {
				t.Errorf("totals = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// shape writes a conversation as one line per step, branches indented.
func shape(c *importers.Conversation, ind string) string {
	var b strings.Builder
	b.WriteString(ind + c.Agent + " " + string(c.Status) + "\n")
	for _, st := range c.Steps {
		switch {
		case st.User != nil:
			b.WriteString(ind + "  user\n")
		case st.LLM != nil:
			b.WriteString(strings.TrimRight(ind+"  llm "+strings.Join(st.LLM.Calls, ","), " ") + "\n")
		case st.Tool != nil:
			b.WriteString(ind + "  tool " + st.Tool.Name + " " + string(st.Tool.Status) + "\n")
		case st.Handoff != nil:
			b.WriteString(ind + "  handoff " + st.Handoff.From + ">" + st.Handoff.To + "\n")
		case st.Fork != nil:
			b.WriteString(ind + "  fork " + st.Fork.Context + "\n")
			for _, br := range st.Fork.Branches {
				b.WriteString(ind + "    " + br.Name + "=" + br.Agent + "\n")
				b.WriteString(shape(br.Conv, ind+"      "))
			}
		case st.Final != nil:
			b.WriteString(ind + "  final\n")
		}
	}
	return b.String()
}

func TestRead_Shapes(t *testing.T) {
	tests := []struct{ name, want string }{
		{"handoff.jsonl", `
triage ok
  user
  llm transfer_to_billing
  handoff triage>billing
  llm issue_refund
  tool issue_refund ok
  llm
  final
`},
		{"serial-loop.jsonl", `
analyst ok
  user
  llm read_file
  tool read_file ok
  llm read_file
  tool read_file ok
  llm read_file
  tool read_file ok
  llm
  final
`},
		{"failure.jsonl", `
lead ok
  llm research_us,research_eu
  fork none
    research_us=us
      us error
        llm
    research_eu=eu
      eu ok
        llm read_file
        tool read_file error
        llm
        final
  llm
  final
`},
		{"handoff-loop-max-turns-no-task-turn.jsonl", `
ping exhausted
  user
  llm transfer_to_pong
  handoff ping>pong
  llm transfer_to_ping
  handoff pong>ping
  llm transfer_to_pong
  handoff ping>pong
  llm transfer_to_ping
  handoff pong>ping
`},
		{"python-export.jsonl", `
planner ok
  llm ask_eu,ask_us
  fork none
    ask_eu=eu
      eu ok
        llm read_file
        tool read_file ok
        llm
        final
    ask_us=us
      us exhausted
        llm read_file
        tool read_file error
  llm
  final
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := "\n" + shape(read(t, tt.name).Trunk, ""); got != tt.want {
				t.Errorf("shape:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestRead_Facts(t *testing.T) {
	s := read(t, "handoff.jsonl")
	if s.Source.Format != Name || !strings.HasPrefix(s.Source.ID, "trace_") {
		t.Errorf("Source = %+v", s.Source)
	}
	if len(s.Tasks) != 1 || s.Tasks[0] != "Please refund order A-17" {
		t.Errorf("Tasks = %q", s.Tasks)
	}
	if len(s.Models) != 1 || s.Models[0] != "gpt-5.6-luna" {
		t.Errorf("Models = %q", s.Models)
	}
	if s.Started.IsZero() || !s.Ended.After(s.Started) {
		t.Errorf("Started %v Ended %v", s.Started, s.Ended)
	}
	var llms []*importers.LLM
	for _, st := range s.Trunk.Steps {
		if st.LLM != nil {
			llms = append(llms, st.LLM)
		}
	}
	last := llms[len(llms)-1]
	if last.Content != "Refunded order A-17." {
		t.Errorf("last content = %q", last.Content)
	}
	var req struct {
		Model    string            `json:"model"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(last.Request, &req); err != nil || req.Model != "gpt-5.6-luna" || len(req.Messages) != 6 {
		t.Errorf("reconstructed request: %v model %q, %d messages (want 6): %s", err, req.Model, len(req.Messages), last.Request)
	}
	if !json.Valid(last.Response) || !strings.Contains(string(last.Response), `"chat.completion"`) {
		t.Errorf("response = %s", last.Response)
	}
	if !last.Usage.CachedReported || !last.Usage.ReasoningReported || last.Usage.CacheWriteReported {
		t.Errorf("usage flags = %+v (chat completions report cached and reasoning, not cache writes)", last.Usage)
	}

	// The ingest payload is the same trace.
	p := read(t, "handoff-ingest.json")
	p.Source.Path, s.Source.Path = "", ""
	if got, want := shape(p.Trunk, ""), shape(s.Trunk, ""); got != want {
		t.Errorf("ingest payload shape:\n%s\nwant\n%s", got, want)
	}
	if sessionTotals(p) != sessionTotals(s) {
		t.Errorf("ingest totals %+v, jsonl %+v", sessionTotals(p), sessionTotals(s))
	}

	// Responses API without task/turn spans: the SDK records no usage at all.
	for _, st := range read(t, "parallel-agents-as-tools-no-task-turn.jsonl").Trunk.Steps {
		if st.LLM != nil && (st.LLM.Usage != record.Usage{}) {
			t.Errorf("usage %+v on a response span the SDK gave none", st.LLM.Usage)
		}
	}

	// A branch's answer and instructions come from the agent tool's span.
	py := read(t, "python-export.jsonl")
	if py.Title != "Quarterly comparison" {
		t.Errorf("Title = %q", py.Title)
	}
	fork := py.Trunk.Steps[1].Fork
	if fork == nil || fork.Branches[0].Instructions != "EU Q3 total" || fork.Branches[0].Answer != "EU 4.2M" || fork.JoinAt.IsZero() {
		t.Errorf("fork = %+v", fork)
	}
	if py.Report.Skipped["span guardrail"] != 1 || py.Report.Skipped[`span of unknown type "sandbox_snapshot"`] != 1 {
		t.Errorf("Skipped = %v", py.Report.Skipped)
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRead_BadInput(t *testing.T) {
	good, err := os.ReadFile("testdata/serial-loop.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(good), "\n")
	ctx := context.Background()

	t.Run("malformed line", func(t *testing.T) {
		in := lines[0] + "{not json\n" + strings.Join(lines[1:], "")
		p := writeFile(t, "x.jsonl", in)
		ss, err := Format{}.Read(ctx, p, importers.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if pr := ss[0].Report.Problems; len(pr) != 1 || pr[0].Line != 2 || pr[0].File != p {
			t.Errorf("Problems = %+v, want one at line 2", pr)
		}
		if _, err := (Format{}).Read(ctx, p, importers.Options{Strict: true}); err == nil || !strings.Contains(err.Error(), p+":2:") {
			t.Errorf("Strict: err = %v, want %s:2: ...", err, p)
		}
	})
	t.Run("truncated last line", func(t *testing.T) {
		in := strings.Join(lines[:len(lines)-2], "") + lines[len(lines)-2][:40]
		ss, err := Format{}.Read(ctx, writeFile(t, "x.jsonl", in), importers.Options{Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(ss[0].Report.Problems) != 0 || ss[0].Report.Skipped["truncated last line"] != 1 {
			t.Errorf("Report = %+v", ss[0].Report)
		}
	})
	t.Run("truncated payload", func(t *testing.T) {
		doc, _ := os.ReadFile("testdata/handoff-ingest.json")
		ss, err := Format{}.Read(ctx, writeFile(t, "x.json", string(doc[:len(doc)/2])), importers.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if ss[0].Report.Skipped["truncated document"] != 1 || ss[0].Trunk == nil {
			t.Errorf("Report = %+v", ss[0].Report)
		}
	})
	t.Run("unknown objects", func(t *testing.T) {
		in := `{"object":"trace.log","id":"x"}` + "\n" + `{"id":"y"}` + "\n" + string(good)
		ss, err := Format{}.Read(ctx, writeFile(t, "x.jsonl", in), importers.Options{Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		if sk := ss[0].Report.Skipped; sk["object trace.log"] != 1 || sk[`object without an "object" field`] != 1 {
			t.Errorf("Skipped = %v", sk)
		}
	})
	t.Run("another format", func(t *testing.T) {
		p := writeFile(t, "x.jsonl", `{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x"}}`+"\n")
		if (Format{}).Detect(p) {
			t.Error("Detect took a Codex rollout")
		}
		if _, err := (Format{}).Read(ctx, p, importers.Options{}); err == nil || !strings.Contains(err.Error(), "no Agents SDK trace") {
			t.Errorf("Read = %v", err)
		}
	})
	t.Run("empty", func(t *testing.T) {
		if _, err := (Format{}).Read(ctx, writeFile(t, "x.jsonl", "\n\n"), importers.Options{}); err == nil {
			t.Error("Read of an empty file: no error")
		}
	})
	t.Run("parent loop and missing parent", func(t *testing.T) {
		in := `{"object":"trace.span","id":"a","trace_id":"t","parent_id":"b","span_data":{"type":"agent","name":"x"}}
{"object":"trace.span","id":"b","trace_id":"t","parent_id":"a","span_data":{"type":"turn"}}
{"object":"trace.span","id":"c","trace_id":"t","parent_id":"gone","started_at":"2026-01-01T00:00:00Z","ended_at":"2026-01-01T00:00:01Z","span_data":{"type":"agent","name":"orphan"}}
`
		ss, err := Format{}.Read(ctx, writeFile(t, "x.jsonl", in), importers.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if ss[0].Trunk.Agent != "orphan" || ss[0].Report.Skipped["spans whose parents form a loop"] != 1 {
			t.Errorf("trunk %q, report %+v", ss[0].Trunk.Agent, ss[0].Report)
		}
	})
	t.Run("two traces", func(t *testing.T) {
		h, _ := os.ReadFile("testdata/handoff.jsonl")
		ss, err := Format{}.Read(ctx, writeFile(t, "x.jsonl", string(h)+string(good)), importers.Options{})
		if err != nil || len(ss) != 2 || ss[0].Trunk.Agent != "triage" || ss[1].Trunk.Agent != "analyst" {
			t.Fatalf("Read = %d sessions, %v", len(ss), err)
		}
	})
}

func TestDetect(t *testing.T) {
	for _, name := range fixtures {
		if !(Format{}).Detect(filepath.Join("testdata", name)) {
			t.Errorf("Detect(%s) = false", name)
		}
	}
	if (Format{}).Detect("testdata/does-not-exist") {
		t.Error("Detect of a missing file = true")
	}
	if (Format{}).Name() != "openai-agents" {
		t.Errorf("Name = %q", Format{}.Name())
	}
}

func TestParseUsage(t *testing.T) {
	tests := []struct {
		name, in string
		want     record.Usage
	}{
		{"python generation", `{"input_tokens":10,"output_tokens":3}`, record.Usage{In: 10, Out: 3}},
		{"details", `{"input_tokens":10,"output_tokens":3,"input_tokens_details":{"cached_tokens":4,"cache_write_tokens":2},"output_tokens_details":{"reasoning_tokens":1}}`,
			record.Usage{In: 10, Out: 3, Cached: 4, CachedReported: true, CacheWrite: 2, CacheWriteReported: true, Reasoning: 1, ReasoningReported: true}},
		{"ingest", `{"input_tokens":10,"output_tokens":3,"details":{"cached_input_tokens":4}}`, record.Usage{In: 10, Out: 3, Cached: 4, CachedReported: true}},
		{"chat completions", `{"prompt_tokens":10,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":4}}`, record.Usage{In: 10, Out: 3, Cached: 4, CachedReported: true}},
		{"impossible", `{"input_tokens":-5,"output_tokens":3}`, record.Usage{In: 0, Out: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseUsage(json.RawMessage(tt.in))
			if !ok || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseUsage = %+v %v, want %+v", got, ok, tt.want)
			}
		})
	}
	for _, in := range []string{``, `null`, `{}`, `[1]`, `{"requests":1}`} {
		if _, ok := parseUsage(json.RawMessage(in)); ok {
			t.Errorf("parseUsage(%s) reported usage", in)
		}
	}
}

func FuzzRead(f *testing.F) {
	for _, name := range []string{"handoff.jsonl", "failure.jsonl", "python-export.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"data":[{"object":"trace","id":"t"},{"object":"trace.span","id":"s","trace_id":"t","parent_id":"s","span_data":{"type":"function"}}]}`))
	f.Add([]byte(`[{"object":"trace.span","id":"s","trace_id":"t","span_data":{"type":"custom","data":{"sdk_span_type":"turn","usage":{"input_tokens":1e300}}}}]`))
	f.Add([]byte("{\"object\":\"trace.span\",\"id\":\"a\",\"trace_id\":\"t\",\"started_at\":\"x\"}\n\xff\xfe"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "fuzz.jsonl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		Format{}.Detect(p)
		for _, strict := range []bool{false, true} {
			ss, err := Format{}.Read(context.Background(), p, importers.Options{Strict: strict})
			if err == nil {
				for _, s := range ss {
					if s.Trunk == nil {
						t.Fatal("session without a trunk")
					}
					sessionTotals(s)
				}
			}
		}
	})
}
