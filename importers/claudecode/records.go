package claudecode

import (
	"bytes"
	json "github.com/goccy/go-json"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
)

// entry is one line of a Claude Code transcript, with the fields the
// importer reads; big payloads stay raw until needed.
type entry struct {
	Type             string          `json:"type"`
	Subtype          string          `json:"subtype"`
	UUID             string          `json:"uuid"`
	SessionID        string          `json:"sessionId"`
	Timestamp        string          `json:"timestamp"`
	IsSidechain      bool            `json:"isSidechain"`
	AgentID          string          `json:"agentId"`
	Cwd              string          `json:"cwd"`
	Version          string          `json:"version"`
	IsMeta           bool            `json:"isMeta"`
	IsCompactSummary bool            `json:"isCompactSummary"`
	IsAPIError       bool            `json:"isApiErrorMessage"`
	RequestID        string          `json:"requestId"`
	Message          *message        `json:"message"`
	ToolUseResult    json.RawMessage `json:"toolUseResult"`
	Data             *progressData   `json:"data"`
	ParentToolUseID  string          `json:"parentToolUseID"`
	Title            string          `json:"customTitle"`
	AITitle          string          `json:"aiTitle"`
	Content          json.RawMessage `json:"content"` // system records; a queue-operation's text
	ParentUUID       string          `json:"parentUuid"`
	Operation        string          `json:"operation"`  // queue-operation: enqueue, dequeue, remove
	RequestRef       string          `json:"requestRef"` // assistant: the api-request record of its request
	Entrypoint       string          `json:"entrypoint"` // how Claude Code was started (cli, sdk-cli, …)

	raw []byte // the line (valid while it is routed), for the records read apart (api-request*)
}

// message is the API message a user or assistant line carries.
type message struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string, or blocks
	Usage   *usage          `json:"usage"`
}

// block is one content block.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // tool_result: a string, or blocks
	IsError   bool            `json:"is_error"`
}

// usage is Anthropic usage: input_tokens excludes cache reads and writes.
type usage struct {
	Input       *int64 `json:"input_tokens"`
	Output      *int64 `json:"output_tokens"`
	CacheRead   *int64 `json:"cache_read_input_tokens"`
	CacheCreate *int64 `json:"cache_creation_input_tokens"`
}

// progressData is a progress record's payload; agent_progress mirrors a
// sub-agent's messages into the parent: Message is one line of the
// sub-agent's transcript (type, message, uuid, timestamp, toolUseResult).
type progressData struct {
	Type    string          `json:"type"`
	AgentID string          `json:"agentId"`
	Message json.RawMessage `json:"message"`
}

// taskResult is a Task/Agent call's toolUseResult.
type taskResult struct {
	Status            string `json:"status"`
	AgentID           string `json:"agentId"`
	TotalDurationMs   int64  `json:"totalDurationMs"`
	TotalToolUseCount int64  `json:"totalToolUseCount"`
	Usage             *usage `json:"usage"`
	ResolvedModel     string `json:"resolvedModel"`
}

// outputResult is a TaskOutput call's toolUseResult: a background task's
// state, with its output once it finished.
type outputResult struct {
	RetrievalStatus string `json:"retrieval_status"`
	Task            *struct {
		TaskID string `json:"task_id"`
		Status string `json:"status"`
		Result string `json:"result"`
		Output string `json:"output"`
	} `json:"task"`
}

// metaFile is subagents/agent-<id>.meta.json.
type metaFile struct {
	AgentType   string `json:"agentType"`
	Description string `json:"description"`
	ToolUseID   string `json:"toolUseId"`
}

// taskInput is the input of a Task or Agent call.
type taskInput struct {
	Description  string `json:"description"`
	Prompt       string `json:"prompt"`
	SubagentType string `json:"subagent_type"`
	Background   bool   `json:"run_in_background"`
}

func n64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// normalised is u in inspect's terms (DESIGN §6): in counts cache reads
// and writes; cached and cache_write are reported when the line has them.
func (u *usage) normalised() record.Usage {
	if u == nil {
		return record.Usage{}
	}
	return record.Usage{
		In:                 n64(u.Input) + n64(u.CacheRead) + n64(u.CacheCreate),
		Out:                n64(u.Output),
		Cached:             n64(u.CacheRead),
		CachedReported:     u.CacheRead != nil,
		CacheWrite:         n64(u.CacheCreate),
		CacheWriteReported: u.CacheCreate != nil,
	}
}

// sameInput reports whether u and v describe the same request (input and
// cache counts equal): the parent's copy of a sub-agent's last usage.
func (u *usage) sameInput(v *usage) bool {
	return u != nil && v != nil && n64(u.Input) == n64(v.Input) && n64(u.CacheRead) == n64(v.CacheRead) && n64(u.CacheCreate) == n64(v.CacheCreate)
}

// The decoder's strings share the memory of the line they came from (it
// decodes without copying), so whatever the importer keeps is cloned first:
// a kept name must not hold a whole line, let alone a 32 MiB one.

// keep clones the strings of e that outlive its line.
func (e *entry) keep() {
	for _, p := range []*string{&e.UUID, &e.ParentUUID, &e.SessionID, &e.AgentID, &e.Cwd, &e.Version, &e.RequestID,
		&e.ParentToolUseID, &e.Title, &e.AITitle, &e.Operation, &e.RequestRef, &e.Entrypoint} {
		*p = strings.Clone(*p)
	}
	if e.Message != nil {
		e.Message.ID, e.Message.Model = strings.Clone(e.Message.ID), strings.Clone(e.Message.Model)
	}
	if e.Data != nil {
		e.Data.AgentID = strings.Clone(e.Data.AgentID)
	}
	// e.Content, e.Data.Message and e.ToolUseResult stay the line's: they
	// are read while the line is routed.
}

func (b *block) keep() {
	for _, p := range []*string{&b.Type, &b.Text, &b.Thinking, &b.ID, &b.Name, &b.ToolUseID} {
		*p = strings.Clone(*p)
	}
	b.Input = bytes.Clone(b.Input)
	b.Content = bytes.Clone(b.Content)
}

// blocks decodes content that is either a string (one text block) or an
// array of blocks.
func blocks(raw json.RawMessage) []block {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil
		}
		return []block{{Type: "text", Text: strings.Clone(s)}}
	}
	var bs []block
	if json.Unmarshal(raw, &bs) != nil {
		return nil
	}
	for i := range bs {
		bs[i].keep()
	}
	return bs
}

// resultText is the text of a tool_result's content: its string, or its
// text blocks joined by newlines (an image is "[image]").
func resultText(raw json.RawMessage, opt importers.Options) (all, first string) {
	var parts []string
	for _, b := range blocks(raw) {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "image":
			parts = append(parts, "[image]")
		}
	}
	if len(parts) > 0 {
		first = parts[0]
	}
	return opt.Clip(strings.Join(parts, "\n")), opt.Clip(first)
}

// parseTime reads a line's ISO-8601 timestamp; zero when absent or bad.
func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// knownType reports whether the importer knows record type t (it reads it
// or ignores it on purpose); any other type is skipped and counted.
func knownType(t string) bool {
	switch t {
	case "user", "assistant", "system", "progress", "summary", "queue-operation", "attachment",
		"file-history-snapshot", "ai-title", "custom-title", "agent-name", "agent-color",
		"permission-mode", "last-prompt", "pr-link", "agent-setting", "fork-context-ref",
		"api-request-shape", "api-request-blob", "api-request", // the requests as sent (request.go)
		"tools-used", "atis-latch", "cost-state": // bookkeeping of 2.1.3xx: nothing of the run's shape
		return true
	}
	return false
}

// ownResearch reports whether a tool is one of Claude Code's read-only
// tools (DESIGN §13).
func ownResearch(name string) bool {
	switch name {
	case "Read", "Grep", "Glob", "LS", "WebFetch", "WebSearch", "NotebookRead":
		return true
	}
	return false
}

// delegation reports whether a tool starts a sub-agent.
func delegation(name string) bool { return name == "Task" || name == "Agent" }
