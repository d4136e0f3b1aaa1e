// Package geminicli imports Gemini CLI sessions (format "gemini-cli",
// DESIGN §13): ~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl,
// one JSON record a line — a header {sessionId, projectHash, startTime,
// kind}, messages {id, timestamp, type: user|gemini|info|error, content,
// tokens, model, toolCalls} written again under the same id as they grow
// (a response first, then with its tool calls and their results), and
// {"$set": {...}} patches (the whole message list, lastUpdated, summary).
// A resumed session writes a new header and goes on; a compression the CLI
// applies writes the list again with its <state_snapshot> summary as a user
// message (read as a compaction), the CLI's own reply to it and the kept
// history under new ids (neither is a model call). The invoke_agent
// calls of one response are one fork; each sub-agent's chat is
// chats/<session id>/<agentId>.jsonl (kind subagent), ended by its
// complete_task call. Gemini CLI 0.61 and the single-JSON session files
// of earlier versions ({..., "messages": [...]}) are read. A session is
// streamed (importers.Streamer): each chat is read twice, a line (or a
// message of a single-JSON file) at a time, and handed over a step at a
// time, so memory follows what is open at once, not the file (read.go,
// stream.go). It only parses: importers.Write records the Session.
package geminicli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/importers"
)

// Name is the format's name.
const Name = "gemini-cli"

// Format is the gemini-cli importer.
type Format struct{}

var (
	_ importers.Format   = Format{}
	_ importers.Streamer = Format{}
	_ importers.Locator  = Format{}
	_ importers.Watched  = Format{}
)

// Name implements importers.Format.
func (Format) Name() string { return Name }

// research are Gemini CLI's read-only tools (DESIGN §13).
var research = map[string]bool{
	"read_file": true, "read_many_files": true, "list_directory": true, "glob": true, "grep_search": true,
	"search_file_content": true, "google_web_search": true, "web_fetch": true, "read_background_output": true,
	"list_background_processes": true,
}

// delegation is the tool that starts a sub-agent.
const delegation = "invoke_agent"

// header is a session file's first record (and a resumed run's).
type header struct {
	SessionID   string   `json:"sessionId"`
	ProjectHash string   `json:"projectHash"`
	StartTime   string   `json:"startTime"`
	LastUpdated string   `json:"lastUpdated"`
	Kind        string   `json:"kind"`
	Directories []string `json:"directories"`
	Summary     string   `json:"summary"`
	// Messages is the whole list in a single-JSON session file.
	Messages []json.RawMessage `json:"messages"`
}

// tokens is a response's usage as Gemini CLI records it.
type tokens struct {
	Input    int64 `json:"input"`
	Output   int64 `json:"output"`
	Cached   int64 `json:"cached"`
	Thoughts int64 `json:"thoughts"`
}

// message is one chat record.
type message struct {
	ID        string          `json:"id"`
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	Tokens    *tokens         `json:"tokens"`
	Model     string          `json:"model"`
	ToolCalls []toolCall      `json:"toolCalls"`
	at        time.Time
}

// toolCall is one call of a response, with its result once it came.
type toolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Args      json.RawMessage `json:"args"`
	Result    json.RawMessage `json:"result"`
	Status    string          `json:"status"`
	Timestamp string          `json:"timestamp"`
	AgentID   string          `json:"agentId"`
	Display   json.RawMessage `json:"resultDisplay"`
}

// Detect implements importers.Format: a JSON object whose first line
// carries sessionId and projectHash.
func (Format) Detect(path string) bool {
	head := importers.Head(path, 64<<10)
	line := head
	if i := strings.IndexByte(string(head), '\n'); i >= 0 {
		line = head[:i]
	}
	var h struct {
		SessionID   *string `json:"sessionId"`
		ProjectHash *string `json:"projectHash"`
	}
	if json.Unmarshal(line, &h) == nil && h.SessionID != nil && h.ProjectHash != nil {
		return true
	}
	// a single-JSON session file: its start names both
	s := string(head)
	return strings.HasPrefix(strings.TrimSpace(s), "{") && strings.Contains(s, `"sessionId"`) && strings.Contains(s, `"projectHash"`)
}

// Newest implements importers.Locator: the newest session file of the
// working folder cwd, found through the .project_root file Gemini CLI
// keeps in each project's folder of ~/.gemini/tmp ($GEMINI_CLI_HOME, else
// HOME, is the home).
func (Format) Newest(cwd string, getenv func(string) string) (string, error) {
	home, err := importers.ToolHome(getenv, "GEMINI_CLI_HOME", "", "Gemini CLI's", "the session file's")
	if err != nil {
		return "", err
	}
	tmp := filepath.Join(home, ".gemini", "tmp")
	projects, _ := os.ReadDir(tmp)
	var best string
	var bestAt time.Time
	for _, p := range projects {
		root, err := importers.ReadSmall(filepath.Join(tmp, p.Name(), ".project_root"), 64<<10)
		if err != nil || filepath.Clean(strings.TrimSpace(string(root))) != filepath.Clean(cwd) {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(tmp, p.Name(), "chats", "session-*.json*"))
		for _, f := range files {
			if info, err := os.Stat(f); err == nil && info.Mode().IsRegular() && info.ModTime().After(bestAt) {
				best, bestAt = f, info.ModTime()
			}
		}
	}
	if best == "" {
		return "", fmt.Errorf("no Gemini CLI session of %s under %s", cwd, tmp)
	}
	return best, nil
}

// userText reads a user message's content: its text, and whether it only
// carries function responses (tool results going back to the model).
func userText(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, false
	}
	var parts []struct {
		Text             *string         `json:"text"`
		FunctionResponse json.RawMessage `json:"functionResponse"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var texts []string
	responses := len(parts) > 0
	for _, p := range parts {
		if p.Text != nil {
			texts = append(texts, *p.Text)
		}
		if len(p.FunctionResponse) == 0 {
			responses = false
		}
	}
	return strings.Join(texts, "\n"), responses
}

// contentText reads a message's content: a string or parts with text.
func contentText(raw json.RawMessage) string {
	t, _ := userText(raw)
	return t
}

// resultText reads a tool call's result [{functionResponse: {response:
// {output} or {error}}}]: its text, and whether it is an error.
func resultText(raw json.RawMessage) (string, bool) {
	var parts []struct {
		FunctionResponse struct {
			Response struct {
				Output json.RawMessage `json:"output"`
				Error  json.RawMessage `json:"error"`
			} `json:"response"`
		} `json:"functionResponse"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var out []string
	failed := false
	for _, p := range parts {
		r := p.FunctionResponse.Response
		switch {
		case len(r.Error) > 0:
			out, failed = append(out, jsonText(r.Error)), true
		case len(r.Output) > 0:
			out = append(out, jsonText(r.Output))
		case p.Text != "":
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n"), failed
}

// jsonText is a JSON string's text, or the JSON itself.
func jsonText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// completeText is complete_task's answer: {result: {response}} (or the
// arguments as they came).
func completeText(args json.RawMessage) string {
	var a struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(args, &a) != nil || len(a.Result) == 0 {
		return string(args)
	}
	var r struct {
		Response *string `json:"response"`
	}
	if json.Unmarshal(a.Result, &r) == nil && r.Response != nil {
		return *r.Response
	}
	return jsonText(a.Result)
}

// isSnapshot reports whether a user text is a compression's summary, a
// <state_snapshot> block and nothing else.
func isSnapshot(text string) bool {
	t := strings.TrimSpace(text)
	return strings.HasPrefix(t, "<state_snapshot>") && strings.HasSuffix(t, "</state_snapshot>")
}

// workspace reads the first workspace folder the session context names.
func workspace(text string) string {
	_, rest, ok := strings.Cut(text, "**Workspace Directories:**")
	if !ok {
		return ""
	}
	for _, line := range strings.Split(rest, "\n") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok && filepath.IsAbs(p) {
			return p
		}
	}
	return ""
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// uniqueName makes name unique among a fork's branches.
func uniqueName(bs []*importers.Branch, name string) string {
	taken := func(n string) bool {
		for _, o := range bs {
			if o.Name == n {
				return true
			}
		}
		return false
	}
	if !taken(name) {
		return name
	}
	for i := 2; ; i++ {
		if n := fmt.Sprintf("%s-%d", name, i); !taken(n) {
			return n
		}
	}
}
