package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestMCP_TypedResults drives `inspect mcp` with the official go-sdk client
// in another process: every tool declares an outputSchema, and each
// tool's structured content validates against it (checked with another
// JSON Schema implementation than the SDK's); show_node's structured
// content carries an llm node's request (system prompt, tools, messages)
// and response, not only its metadata; and the errors name the MCP tools
// to call, not command lines or flags. Before: no tool declared an
// outputSchema, show_node's content was the graph JSON's node alone, an
// empty database said "record a run first (`inspect demo`, …), or point
// --db, INSPECT_DB or FILE.db:RUN at an existing file", an ask of a tool
// node said "try `inspect ask RUN n2`", and a missing key "use --dry-run".
func TestMCP_TypedResults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the inspect binary")
	}
	f, _, _ := testFactory(t)
	wd, _ := f.Getwd()

	// an empty database first: what to call once there is a run
	empty := mcpSession(t, wd, nil, "--db", f.DBPath, "--allow-ask")
	for tool, args := range map[string]map[string]any{"audit": {}, "graph": {}, "show_node": {"node": "n2"}} {
		text, isErr := callTool(t, empty, tool, args, nil)
		if !isErr || !strings.Contains(text, "call list_runs") || strings.Contains(text, "--db") || strings.Contains(text, "`inspect") {
			t.Errorf("%s on an empty database: error %v, %q; want it to name list_runs and no flag", tool, isErr, text)
		}
	}
	empty.Close()

	for i := 0; i < 2; i++ {
		if _, errOut, code := inspectRun(t, f, "demo"); code != ExitOK {
			t.Fatalf("demo: exit %d: %s", code, errOut)
		}
	}
	runs := runsJSON(t, f)
	older, newer := runs[1].ID, runs[0].ID
	s := mcpSession(t, wd, nil, "--db", f.DBPath, "--allow-ask")
	list, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Schema{}
	for _, tool := range list.Tools {
		raw, _ := json.Marshal(tool.OutputSchema)
		if tool.OutputSchema == nil || !strings.Contains(string(raw), `"type":"object"`) {
			t.Errorf("tool %s declares no object outputSchema: %s", tool.Name, raw)
			continue
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		url := "mem://" + tool.Name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		if schemas[tool.Name], err = c.Compile(url); err != nil {
			t.Errorf("tool %s: its outputSchema does not compile: %v", tool.Name, err)
		}
	}
	if len(schemas) != 7 {
		t.Fatalf("%d tools with an outputSchema, want all 7", len(schemas))
	}
	structured := func(tool string, args map[string]any) map[string]any {
		t.Helper()
		res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s %v: %v %+v", tool, args, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if sch := schemas[tool]; sch != nil {
			if err := sch.Validate(v); err != nil {
				t.Errorf("%s: structured content does not validate against its outputSchema: %v", tool, err)
			}
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		return m
	}
	structured("list_runs", map[string]any{})
	structured("graph", map[string]any{"run": older})
	structured("audit", map[string]any{})
	structured("diff", map[string]any{"base": older, "new": newer})
	structured("explain_rule", map[string]any{"rule": "fork.uneven"})

	// n2 is the demo's first model call: the analyst's system prompt, its
	// tools, the task; it answered with a read_file call
	n := structured("show_node", map[string]any{"node": "n2"})
	if n["id"] != "n2" || n["kind"] != "llm" || n["request_exact"] != true {
		t.Errorf("show_node n2: id %v kind %v exact %v", n["id"], n["kind"], n["request_exact"])
	}
	req, _ := n["request"].(map[string]any)
	msgs, _ := req["messages"].([]any)
	tools, _ := req["tools"].([]any)
	first, _ := func() (map[string]any, bool) {
		if len(msgs) == 0 {
			return nil, false
		}
		m, ok := msgs[0].(map[string]any)
		return m, ok
	}()
	if len(msgs) < 2 || first["role"] != "system" || !strings.Contains(fmt.Sprint(first["content"]), "analyst") || len(tools) == 0 ||
		!strings.Contains(fmt.Sprint(msgs[len(msgs)-1]), "Q3") {
		t.Errorf("show_node n2's request: %d messages (first %v), %d tools; want the system prompt, the task and the tools", len(msgs), first, len(tools))
	}
	resp, _ := n["response"].(map[string]any)
	if !strings.Contains(fmt.Sprint(resp["choices"]), "read_file") {
		t.Errorf("show_node n2's response %v: want the read_file call it made", resp)
	}
	if n := structured("show_node", map[string]any{"node": "n3"}); n["kind"] != "tool" || n["request"] != nil {
		t.Errorf("show_node n3 (a tool call): kind %v, request %v", n["kind"], n["request"])
	}

	// ask's advice names the ask tool with its arguments, and a missing key
	// what the user does and which tool shows the request
	text, isErr := callTool(t, s, "ask", map[string]any{"node": "n3"}, nil)
	if want := fmt.Sprintf(`call ask with {"run": %q, "node": "n2"}`, newer); !isErr || !strings.Contains(text, want) || strings.Contains(text, "inspect ask") {
		t.Errorf("ask n3: error %v, %q; want it to say %s", isErr, text, want)
	}
	text, isErr = callTool(t, s, "ask", map[string]any{"node": "n2"}, nil)
	if !isErr || !strings.Contains(text, "OPENAI_API_KEY is not set in the environment inspect mcp was started with") ||
		!strings.Contains(text, "show_node n2") || strings.Contains(text, "--dry-run") {
		t.Errorf("ask n2 without a key: error %v, %q", isErr, text)
	}
}
