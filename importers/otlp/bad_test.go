package otlp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
)

// span is one hand-written OTLP/JSON span.
func span(id, parent, name string, start, end int64, attrs string) string {
	s := `{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"` + id + `"`
	if parent != "" {
		s += `,"parentSpanId":"` + parent + `"`
	}
	s += `,"name":"` + name + `","startTimeUnixNano":"` + itoa(start) + `"`
	if end != 0 {
		s += `,"endTimeUnixNano":"` + itoa(end) + `"`
	}
	return s + `,"attributes":[` + attrs + `]}`
}

func itoa(n int64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

func str(k, v string) string { return `{"key":"` + k + `","value":{"stringValue":"` + v + `"}}` }
func num(k string, v int64) string {
	return `{"key":"` + k + `","value":{"intValue":"` + itoa(v) + `"}}`
}

func exportReq(spans ...string) string {
	return `{"resourceSpans":[{"resource":{"attributes":[` + str("service.name", "edge") + `]},"scopeSpans":[{"scope":{"name":"hand"},"spans":[` + strings.Join(spans, ",") + `]}]}]}`
}

const sec = int64(1_000_000_000)

var (
	agent = str("gen_ai.operation.name", "invoke_agent") + "," + str("gen_ai.agent.name", "lead")
	chat  = str("gen_ai.operation.name", "chat") + "," + str("gen_ai.request.model", "m1") + "," + num("gen_ai.usage.input_tokens", 100) + "," + num("gen_ai.usage.output_tokens", 5)
	tool  = str("gen_ai.operation.name", "execute_tool") + "," + str("gen_ai.tool.name", "read_file")
)

func readString(t *testing.T, content string, opt importers.Options) ([]*importers.Session, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "trace.json")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return Format{}.Read(context.Background(), p, opt)
}

// TestRead_BadInput: each kind of bad input is counted or refused with a
// message, what was valid is kept, nothing panics.
func TestRead_BadInput(t *testing.T) {
	t0 := int64(1767225600) * sec
	root := span("0000000000000001", "", "invoke_agent lead", t0, t0+10*sec, agent)
	llm := span("0000000000000002", "0000000000000001", "chat m1", t0+sec, t0+2*sec, chat)
	for _, tt := range []struct {
		name    string
		content string
		strict  bool
		wantErr string
		check   func(t *testing.T, s *importers.Session)
	}{
		{name: "not OTLP", content: `{"hello":"world"}` + "\n", wantErr: "not OTLP"},
		{name: "not JSON nor protobuf", content: "this is a text file\n", wantErr: "not OTLP"},
		{name: "empty", content: "", wantErr: "empty"},
		{name: "malformed line kept going", content: exportReq(root) + "\n{broken\n" + exportReq(llm) + "\n",
			check: func(t *testing.T, s *importers.Session) {
				if len(s.Report.Problems) != 1 || s.Report.Problems[0].Line != 2 {
					t.Errorf("Problems = %+v, want line 2", s.Report.Problems)
				}
				if n := countLLM(s.Trunk); n != 1 {
					t.Errorf("%d llm steps, want the valid line's 1", n)
				}
			}},
		{name: "malformed line strict", content: exportReq(root) + "\n{broken\n", strict: true, wantErr: ":2:"},
		{name: "missing parent", content: exportReq(root, span("0000000000000003", "00000000000000ff", "chat m1", t0+3*sec, t0+4*sec, chat)) + "\n",
			check: func(t *testing.T, s *importers.Session) {
				if s.Report.Skipped["spans whose parent is missing (read as roots)"] != 1 {
					t.Errorf("Skipped = %v, want the orphan counted", s.Report.Skipped)
				}
				if n := countLLM(s.Trunk); n != 1 {
					t.Errorf("%d llm steps, want the orphan's 1 kept", n)
				}
			}},
		{name: "duplicate span ids", content: exportReq(root, llm, llm) + "\n",
			check: func(t *testing.T, s *importers.Session) {
				if s.Report.Skipped["duplicate span ids (one copy kept)"] != 1 || countLLM(s.Trunk) != 1 {
					t.Errorf("Skipped = %v, %d llm steps; want one duplicate counted, one kept", s.Report.Skipped, countLLM(s.Trunk))
				}
			}},
		{name: "end before start", content: exportReq(root, span("0000000000000004", "0000000000000001", "chat m1", t0+5*sec, t0+4*sec, chat)) + "\n",
			check: func(t *testing.T, s *importers.Session) {
				if s.Report.Skipped["spans ending before they start (read as instant)"] != 1 {
					t.Errorf("Skipped = %v", s.Report.Skipped)
				}
			}},
		{name: "clock skew: child before its parent", content: exportReq(root, span("0000000000000005", "0000000000000001", "chat m1", t0-3*sec, t0-2*sec, chat), llm) + "\n",
			check: func(t *testing.T, s *importers.Session) {
				if n := countLLM(s.Trunk); n != 2 {
					t.Errorf("%d llm steps, want both", n)
				}
			}},
		{name: "span with no end", content: exportReq(span("0000000000000001", "", "invoke_agent lead", t0, 0, agent), span("0000000000000006", "0000000000000001", "chat m1", t0+sec, 0, chat)) + "\n",
			check: func(t *testing.T, s *importers.Session) {
				if !s.Ended.IsZero() {
					t.Errorf("Ended = %v, want zero (never ended)", s.Ended)
				}
				if l := s.Trunk.Steps[len(s.Trunk.Steps)-1].LLM; l == nil || l.Status != record.StatusInterrupted {
					t.Errorf("last step %+v, want an interrupted llm", s.Trunk.Steps[len(s.Trunk.Steps)-1])
				}
			}},
		{name: "unknown attributes and kinds", content: exportReq(root, span("0000000000000007", "0000000000000001", "db.query", t0+sec, t0+2*sec, str("db.system", "postgres")+`,{"key":"weird","value":{"kvlistValue":{"values":[]}}}`), span("0000000000000008", "0000000000000007", "execute_tool read_file", t0+sec, t0+2*sec, tool)) + "\n",
			check: func(t *testing.T, s *importers.Session) {
				if len(s.Trunk.Steps) != 1 || s.Trunk.Steps[0].Tool == nil || s.Trunk.Steps[0].Tool.Name != "read_file" {
					t.Errorf("steps %+v, want the tool read through the unknown span", s.Trunk.Steps)
				}
			}},
		{name: "huge value", content: exportReq(root, span("0000000000000009", "0000000000000001", "execute_tool read_file", t0+sec, t0+2*sec, tool+","+str("gen_ai.tool.call.result", strings.Repeat("x", 5<<20)))) + "\n",
			check: func(t *testing.T, s *importers.Session) {
				if s.Report.Skipped["attribute values over 4 MiB (cut)"] != 1 {
					t.Errorf("Skipped = %v", s.Report.Skipped)
				}
				if r := s.Trunk.Steps[0].Tool.Result; len(r) != 4<<20 {
					t.Errorf("result %d bytes, want cut to 4 MiB", len(r))
				}
			}},
		{name: "no ids", content: exportReq(`{"name":"x","startTimeUnixNano":"1"}`, root) + "\n",
			check: func(t *testing.T, s *importers.Session) {
				if len(s.Report.Problems) != 1 || !strings.Contains(s.Report.Problems[0].Err, "without a trace or span id") {
					t.Errorf("Problems = %+v", s.Report.Problems)
				}
			}},
		{name: "pretty-printed document", content: strings.ReplaceAll(exportReq(root, llm), ",", ",\n  "),
			check: func(t *testing.T, s *importers.Session) {
				if countLLM(s.Trunk) != 1 {
					t.Errorf("want the document read whole")
				}
			}},
		{name: "Jaeger's answer", content: `{"result":` + exportReq(root, llm) + `}`,
			check: func(t *testing.T, s *importers.Session) {
				if countLLM(s.Trunk) != 1 {
					t.Errorf("want {result: ...} unwrapped")
				}
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ss, err := readString(t, tt.content, importers.Options{Strict: tt.strict})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, ss[0])
		})
	}
}

func countLLM(c *importers.Conversation) int {
	n := 0
	for _, s := range c.Steps {
		if s.LLM != nil {
			n++
		}
		if s.Fork != nil {
			for _, b := range s.Fork.Branches {
				n += countLLM(b.Conv)
			}
		}
	}
	return n
}

// TestConventions: the older GenAI names, messages as events, and usage
// reported apart (Anthropic-style) are read and normalised.
func TestConventions(t *testing.T) {
	t0 := int64(1767225600) * sec
	old := str("gen_ai.system", "anthropic") + "," + str("gen_ai.request.model", "claude") + "," + num("gen_ai.usage.prompt_tokens", 10) + "," +
		num("gen_ai.usage.completion_tokens", 3) + "," + num("gen_ai.usage.cache_read_input_tokens", 200) + "," + num("gen_ai.usage.cache_creation_input_tokens", 50)
	ev := `,"events":[{"name":"gen_ai.user.message","timeUnixNano":"` + itoa(t0) + `","attributes":[` + str("content", "hello there") + `]},` +
		`{"name":"gen_ai.choice","timeUnixNano":"` + itoa(t0+sec) + `","attributes":[` + str("finish_reason", "stop") + `,{"key":"message","value":{"kvlistValue":{"values":[` + str("content", "hi!") + `]}}}]}]`
	s := span("0000000000000002", "", "anthropic.chat", t0, t0+sec, old)
	s = s[:len(s)-1] + ev + "}"
	ss, err := readString(t, exportReq(s)+"\n", importers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var l *importers.LLM
	for _, st := range ss[0].Trunk.Steps {
		if st.LLM != nil {
			l = st.LLM
		}
	}
	if l == nil {
		t.Fatalf("no llm step: %+v", ss[0].Trunk.Steps)
	}
	if u := l.Usage; u.In != 260 || u.Out != 3 || u.Cached != 200 || !u.CachedReported || u.CacheWrite != 50 {
		t.Errorf("usage %+v, want in 260 (10 + 200 read + 50 written), out 3, cached 200", u)
	}
	if l.Content != "hi!" || !strings.Contains(string(l.Request), "hello there") {
		t.Errorf("content %q request %s: want the events' messages", l.Content, l.Request)
	}
	if got := ss[0].Tasks; len(got) != 1 || got[0] != "hello there" {
		t.Errorf("tasks %q", got)
	}
}
