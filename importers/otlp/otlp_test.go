package otlp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/stack"
)

// langGraphSupervisorRun is the run of gen/langgraph.mjs's supervisor
// (supervisor → research_expert → supervisor → math_expert → supervisor)
// as OpenInference's trace of it holds it, written by hand from the script.
const langGraphSupervisorRun = `tasks ["What is the combined headcount of the FAANG companies in 2024?"] models [scripted-4o]
conv supervisor status=""
  user "What is the combined headcount of the FAANG companies in ..."
  llm scripted-4o in=120 out=12 cached=0/true calls=[transfer_to_research_expert] req=true resp=true ""
  handoff supervisor -> research_expert ""
  llm scripted-4o in=150 out=20 cached=0/true calls=[web_search] req=true resp=true ""
  tool web_search id=call_2_0 args=FAANG headcount 2024 result="Meta 67,317; Apple 164,000; Amazon 1,551,000; Netflix 14,..." research=false status="ok"
  llm scripted-4o in=240 out=40 cached=0/true calls=[] req=true resp=true "Meta 67,317; Apple 164,000; Amazon 1,551,000; Netflix 14,..."
  handoff research_expert -> supervisor ""
  llm scripted-4o in=260 out=12 cached=128/true calls=[transfer_to_math_expert] req=true resp=true ""
  handoff supervisor -> math_expert ""
  llm scripted-4o in=280 out=30 cached=0/true calls=[add] req=true resp=true ""
  tool add id=call_5_0 args={"numbers":[67317,164000,1551000,14000,181269]} result="1977586" research=false status="ok"
  llm scripted-4o in=300 out=10 cached=0/true calls=[] req=true resp=true "The sum is 1,977,586."
  handoff math_expert -> supervisor ""
  llm scripted-4o in=330 out=18 cached=256/true calls=[] req=true resp=true "Together the FAANG companies had 1,977,586 employees in 2..."
  final "Together the FAANG companies had 1,977,586 employees in 2..."
`

// TestRead_RealFrameworks reads the traces real frameworks exported
// (testdata/gen) and compares each Session's outline with what the run
// was: the expectations are written by hand from the scripts in
// testdata/gen, never regenerated from this code.
func TestRead_RealFrameworks(t *testing.T) {
	for _, tt := range []struct{ file, want string }{
		{"langgraph-supervisor.otlp.jsonl", langGraphSupervisorRun},
		{"langgraph-mapreduce.otlp.jsonl", `tasks ["List three subjects as a JSON array."] models [scripted-4o]
conv plan status=""
  user "List three subjects as a JSON array."
  llm scripted-4o in=40 out=10 cached=0/true calls=[] req=true resp=true "[\"lions\", \"owls\", \"sharks\"]"
  fork tool=Send context=none joined=true
    branch fact-1 agent=fact instructions="Write one fact about lions" answer="A fact about lions."
      conv fact status=""
        llm scripted-4o in=20 out=8 cached=0/true calls=[] req=true resp=true "A fact about lions."
        final "A fact about lions."
    branch fact-2 agent=fact instructions="Write one fact about owls" answer="A fact about owls."
      conv fact status=""
        llm scripted-4o in=20 out=8 cached=0/true calls=[] req=true resp=true "A fact about owls."
        final "A fact about owls."
    branch fact-3 agent=fact instructions="Write one fact about sharks" answer="A fact about sharks."
      conv fact status=""
        llm scripted-4o in=20 out=8 cached=0/true calls=[] req=true resp=true "A fact about sharks."
        final "A fact about sharks."
  llm scripted-4o agent=pick in=60 out=6 cached=0/true calls=[] req=true resp=true "A fact about owls."
  final "A fact about owls."
`},
		{"aisdk.otlp.jsonl", `tasks ["Paris or London this weekend?"] models [scripted-4o]
conv planner status=""
  user "Paris or London this weekend?"
  llm scripted-4o in=200 out=30 cached=0/true calls=[getWeather getWeather] req=true resp=true ""
  tool getWeather id=call_1_0 args={"city":"Paris"} result="{\"city\":\"Paris\",\"celsius\":18}" research=true status="ok"
  tool getWeather id=call_1_1 args={"city":"London"} result="{\"city\":\"London\",\"celsius\":14}" research=true status="ok"
  llm scripted-4o in=320 out=30 cached=192/true calls=[research research] req=true resp=true ""
  fork tool=research context=none joined=true
    branch researcher-1 agent=researcher instructions="{\"city\":\"Paris\"}" answer="Paris: mild, 18C, light wind."
      conv researcher status=""
        llm scripted-4o in=90 out=14 cached=0/true calls=[lookup] req=true resp=true ""
        tool lookup id=call_3_0 args={"city":"Paris"} result="Paris: 18C" research=true status="ok"
        llm scripted-4o in=130 out=12 cached=64/true calls=[] req=true resp=true "Paris: mild, 18C, light wind."
        final "Paris: mild, 18C, light wind."
    branch researcher-2 agent=researcher instructions="{\"city\":\"London\"}" answer="London: mild, 18C, light wind."
      conv researcher status=""
        llm scripted-4o in=90 out=14 cached=0/true calls=[lookup] req=true resp=true ""
        tool lookup id=call_4_0 args={"city":"London"} result="London: 18C" research=true status="ok"
        llm scripted-4o in=130 out=12 cached=64/true calls=[] req=true resp=true "London: mild, 18C, light wind."
        final "London: mild, 18C, light wind."
  llm scripted-4o in=450 out=10 cached=320/true calls=[] req=true resp=true "Go to Paris: it is warmer."
  final "Go to Paris: it is warmer."
`},
		{"aisdk.otlp.pb", `tasks ["Paris or London this weekend?"] models [scripted-4o]
conv planner status=""
  user "Paris or London this weekend?"
  llm scripted-4o in=200 out=30 cached=0/true calls=[getWeather getWeather] req=true resp=true ""
  tool getWeather id=call_8_0 args={"city":"Paris"} result="{\"city\":\"Paris\",\"celsius\":18}" research=true status="ok"
  tool getWeather id=call_8_1 args={"city":"London"} result="{\"city\":\"London\",\"celsius\":14}" research=true status="ok"
  llm scripted-4o in=320 out=30 cached=192/true calls=[research research] req=true resp=true ""
  fork tool=research context=none joined=true
    branch researcher-1 agent=researcher instructions="{\"city\":\"Paris\"}" answer="Paris: mild, 18C, light wind."
      conv researcher status=""
        llm scripted-4o in=90 out=14 cached=0/true calls=[lookup] req=true resp=true ""
        tool lookup id=call_10_0 args={"city":"Paris"} result="Paris: 18C" research=true status="ok"
        llm scripted-4o in=130 out=12 cached=64/true calls=[] req=true resp=true "Paris: mild, 18C, light wind."
        final "Paris: mild, 18C, light wind."
    branch researcher-2 agent=researcher instructions="{\"city\":\"London\"}" answer="London: mild, 18C, light wind."
      conv researcher status=""
        llm scripted-4o in=90 out=14 cached=0/true calls=[lookup] req=true resp=true ""
        tool lookup id=call_11_0 args={"city":"London"} result="London: 18C" research=true status="ok"
        llm scripted-4o in=130 out=12 cached=64/true calls=[] req=true resp=true "London: mild, 18C, light wind."
        final "London: mild, 18C, light wind."
  llm scripted-4o in=450 out=10 cached=320/true calls=[] req=true resp=true "Go to Paris: it is warmer."
  final "Go to Paris: it is warmer."
`},
	} {
		t.Run(tt.file, func(t *testing.T) {
			ss, err := Format{}.Read(context.Background(), "testdata/"+tt.file, importers.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(ss) != 1 {
				t.Fatalf("Read gave %d sessions, want 1 (one trace)", len(ss))
			}
			s := ss[0]
			if len(s.Source.ID) != 32 || s.Source.Format != "otlp" {
				t.Errorf("Source = %+v, want format otlp and the 32-hex trace id", s.Source)
			}
			if len(s.Report.Skipped) != 0 || len(s.Report.Problems) != 0 {
				t.Errorf("Report = %+v, want nothing skipped", s.Report)
			}
			if s.Started.IsZero() || s.Ended.IsZero() || !s.Ended.After(s.Started) {
				t.Errorf("Started %v, Ended %v: want an ended trace", s.Started, s.Ended)
			}
			if got := outline(s); got != tt.want {
				d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(tt.want), B: difflib.SplitLines(got), FromFile: "want", ToFile: "got", Context: 2})
				t.Errorf("outline differs:\n%s", d)
			}
		})
	}
}

// TestRead_PrebuiltAgentName: LangGraph's prebuilt react agent runs its
// model in a node called "agent" whatever the agent is; the agent takes the
// name its author gave the graph (createReactAgent's name) instead — the
// name the audit's findings and fixes then use. A supervisor's agents keep
// their node names (see TestRead_RealFrameworks).
func TestRead_PrebuiltAgentName(t *testing.T) {
	for _, fx := range []string{"cache-unstable-system-time", "cache-unstable-tool-order", "cache-stable-prompt"} {
		ss, err := Format{}.Read(context.Background(), "../../fixtures/"+fx+"/trace.otlp.jsonl", importers.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := ss[0].Trunk.Agent; got != "weather_assistant" {
			t.Errorf("%s: the trunk's agent is %q, want weather_assistant (createReactAgent's name in cache.mjs)", fx, got)
		}
		for _, st := range ss[0].Trunk.Steps {
			if st.LLM != nil && st.LLM.Agent != "" && st.LLM.Agent != "weather_assistant" {
				t.Errorf("%s: a model call of agent %q", fx, st.LLM.Agent)
			}
			if st.Handoff != nil {
				t.Errorf("%s: a hand-off %s -> %s in a one-agent run", fx, st.Handoff.From, st.Handoff.To)
			}
		}
	}
}

// TestRead_FrameworkOfTheSpans: a run's source names the instrumentation
// that recorded its agent work, so its stack's profile is the framework's
// and not "an OpenTelemetry-traced app": the LangGraph traces of the
// fixtures (cache.mjs) have a root span of the app's own scope
// ("weather-app", a span it opens around the graph) over OpenInference's
// LangChain spans, and read as a generic OTLP app before. Every real
// framework trace the project holds, by hand.
func TestRead_FrameworkOfTheSpans(t *testing.T) {
	for _, tt := range []struct {
		path, version string
		want          *stack.Profile
	}{
		{"../../fixtures/cache-unstable-system-time/trace.otlp.jsonl", "@arizeai/openinference-instrumentation-langchain 4.1.1", stack.LangGraph},
		{"../../fixtures/cache-unstable-tool-order/trace.otlp.jsonl", "@arizeai/openinference-instrumentation-langchain 4.1.1", stack.LangGraph},
		{"../../fixtures/cache-stable-prompt/trace.otlp.jsonl", "@arizeai/openinference-instrumentation-langchain 4.1.1", stack.LangGraph},
		{"testdata/langgraph-supervisor.otlp.jsonl", "@arizeai/openinference-instrumentation-langchain 4.1.1", stack.LangGraph},
		{"testdata/langgraph-mapreduce.otlp.jsonl", "@arizeai/openinference-instrumentation-langchain 4.1.1", stack.LangGraph},
		{"testdata/openllmetry-langgraph-supervisor.otlp.jsonl", "@traceloop/instrumentation-langchain 0.27.0", stack.LangGraph},
		{"testdata/aisdk.otlp.jsonl", "ai 6.0.326", stack.AISDK},
		{"testdata/aisdk.otlp.pb", "ai 6.0.326", stack.AISDK},
		{"testdata/aisdk7-legacy.otlp.jsonl", "ai 7.0.173", stack.AISDK},
		{"testdata/mastra-workflow.otlp.jsonl", "@mastra/otel-exporter 1.4.0", stack.Mastra},
	} {
		t.Run(filepath.Base(filepath.Dir(tt.path))+"/"+filepath.Base(tt.path), func(t *testing.T) {
			ss, err := Format{}.Read(context.Background(), tt.path, importers.Options{})
			if err != nil || len(ss) != 1 {
				t.Fatalf("%d sessions, %v", len(ss), err)
			}
			if got := ss[0].Source.Version; got != tt.version {
				t.Errorf("source version %q, want %q", got, tt.version)
			}
			if got := stack.For(ss[0].Source); got != tt.want {
				t.Errorf("profile %s, want %s", got.Name, tt.want.Name)
			}
		})
	}
}

// TestRead_LangGraphByItsMarks: a LangGraph run whose spans come from an
// instrumentation scope that names no framework is LangGraph still by what
// its spans carry — LangGraph's langgraph_node/langgraph_step metadata, a
// span named LangGraph or after its compiled graph; without those marks
// the same spans are a generic OTLP app.
func TestRead_LangGraphByItsMarks(t *testing.T) {
	b, err := os.ReadFile("../../fixtures/cache-unstable-system-time/trace.otlp.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	anon := strings.ReplaceAll(string(b), "@arizeai/openinference-instrumentation-langchain", "acme-tracer")
	read := func(t *testing.T, trace string) *importers.Session {
		t.Helper()
		p := filepath.Join(t.TempDir(), "trace.otlp.jsonl")
		if err := os.WriteFile(p, []byte(trace), 0o644); err != nil {
			t.Fatal(err)
		}
		ss, err := Format{}.Read(context.Background(), p, importers.Options{})
		if err != nil || len(ss) != 1 {
			t.Fatalf("%d sessions, %v", len(ss), err)
		}
		return ss[0]
	}
	t.Run("metadata", func(t *testing.T) {
		s := read(t, anon)
		if s.Source.Version != "acme-tracer 4.1.1 (langgraph)" || stack.For(s.Source) != stack.LangGraph {
			t.Errorf("source %q: %s, want acme-tracer 4.1.1 (langgraph): LangGraph", s.Source.Version, stack.For(s.Source).Name)
		}
	})
	t.Run("attribute langgraph.node", func(t *testing.T) {
		tr := strings.ReplaceAll(anon, `\"langgraph_node\"`, `\"node\"`)
		tr = strings.Replace(tr, `{"key":"openinference.span.kind"`, `{"key":"langgraph.node","value":{"stringValue":"agent"}},{"key":"openinference.span.kind"`, 1)
		if s := read(t, tr); stack.For(s.Source) != stack.LangGraph {
			t.Errorf("source %q: %s, want LangGraph", s.Source.Version, stack.For(s.Source).Name)
		}
	})
	t.Run("no marks", func(t *testing.T) {
		tr := strings.ReplaceAll(anon, `\"langgraph_node\"`, `\"node\"`)
		if strings.Contains(tr, `"name":"LangGraph"`) || strings.Contains(tr, "CompiledStateGraph") {
			t.Fatal("the fixture has a LangGraph span name: pick another near miss")
		}
		if s := read(t, tr); s.Source.Version != "acme-tracer 4.1.1" || stack.For(s.Source) != stack.OTLP {
			t.Errorf("source %q: %s, want acme-tracer 4.1.1: %s", s.Source.Version, stack.For(s.Source).Name, stack.OTLP.Name)
		}
	})
}

// TestRead_OpenLLMetryHandoffs: OpenLLMetry's LangChain instrumentation on
// the langgraph-supervisor app of testdata/gen-traceloop (supervisor →
// research_expert → supervisor → math_expert → supervisor) names no agent
// in its spans, yet the run is the same as OpenInference's trace of it
// (langgraph-supervisor.otlp.jsonl in TestRead_RealFrameworks): each
// agent's graph is a "workflow CompiledStateGraph" span named by the
// AIMessages it added, and the transfer tools' LangGraph Commands (goto)
// are the hand-offs; handing back to the supervisor has no span of its own.
// Model calls and tokens as OpenInference's trace has them
// (langGraphSupervisorRun, written by hand from gen/langgraph.mjs).
func TestRead_OpenLLMetryHandoffs(t *testing.T) {
	// OpenInference's run, but for what OpenLLMetry records otherwise:
	// no cache counts, and a tool's input as LangChain serialises it.
	want := strings.NewReplacer(
		"cached=0/true", "cached=0/false", "cached=128/true", "cached=0/false", "cached=256/true", "cached=0/false",
		"args=FAANG headcount 2024", `args={"query":"FAANG headcount 2024"}`,
	).Replace(langGraphSupervisorRun)
	if strings.Count(want, "cached=0/false") != 7 || !strings.Contains(want, `args={"query"`) {
		t.Fatalf("OpenInference's run changed; say again how OpenLLMetry's differs:\n%s", want)
	}
	s := readOne(t, "testdata/openllmetry-langgraph-supervisor.otlp.jsonl")
	if got := outline(s); got != want {
		d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(want), B: difflib.SplitLines(got), FromFile: "want", ToFile: "got", Context: 2})
		t.Errorf("outline differs:\n%s", d)
	}
}

// TestRead_OpenLLMetryTransferWithoutCommand: a near miss of the above —
// the first transfer_to_research_expert call returns a plain ToolMessage,
// not a LangGraph Command, so nothing says the conversation went
// anywhere: the call stays a tool call (its name alone makes no hand-off),
// the research expert's graph is the next node taking its turn, and only
// the second transfer, whose Command goes to math_expert, is a hand-off
// (with the hand back from it).
func TestRead_OpenLLMetryTransferWithoutCommand(t *testing.T) {
	b, err := os.ReadFile("testdata/openllmetry-langgraph-supervisor.otlp.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	edited := 0
	for i, l := range lines {
		end := strings.Index(l, `\"goto\":[\"research_expert\"]}`)
		start := strings.Index(l, `{\"lg_name\":\"Command\"`)
		if end < 0 || start < 0 || start > end {
			continue
		}
		end += len(`\"goto\":[\"research_expert\"]}`)
		msg := `{\"lc\":1,\"type\":\"constructor\",\"id\":[\"langchain_core\",\"messages\",\"ToolMessage\"],\"kwargs\":{\"content\":\"Successfully transferred to research_expert\",\"name\":\"transfer_to_research_expert\",\"tool_call_id\":\"call_1_0\"}}`
		lines[i] = l[:start] + msg + l[end:]
		edited++
	}
	if edited != 1 {
		t.Fatalf("%d Commands going to research_expert, want the one of the first transfer", edited)
	}
	p := filepath.Join(t.TempDir(), "trace.otlp.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	s := readOne(t, p)
	var handoffs, tools []string
	for _, st := range s.Trunk.Steps {
		switch {
		case st.Handoff != nil:
			handoffs = append(handoffs, st.Handoff.From+"->"+st.Handoff.To)
		case st.Tool != nil:
			tools = append(tools, st.Tool.Name+"="+st.Tool.Result)
		case st.LLM != nil && len(st.LLM.Calls) > 0 && st.LLM.Calls[0] == "web_search" && st.LLM.Agent != "research_expert":
			t.Errorf("the web_search call is agent %q's, want research_expert's (the node taking its turn)", st.LLM.Agent)
		}
	}
	if got := strings.Join(handoffs, " "); got != "supervisor->math_expert math_expert->supervisor" {
		t.Errorf("hand-offs %q, want only the Command's to math_expert and its hand back", got)
	}
	if len(tools) == 0 || tools[0] != "transfer_to_research_expert=Successfully transferred to research_expert" {
		t.Errorf("tool calls %q: want the transfer without a Command first, as a tool call", tools)
	}
}

func readOne(t *testing.T, path string) *importers.Session {
	t.Helper()
	ss, err := Format{}.Read(context.Background(), path, importers.Options{})
	if err != nil || len(ss) != 1 {
		t.Fatalf("%d sessions, %v", len(ss), err)
	}
	return ss[0]
}
