package kimicli

import (
	"context"
	"encoding/json"
	"fmt"

	"path/filepath"
	"sort"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/internal/events"
	"github.com/inspect-dev/inspect/importers/internal/kimi"
	"github.com/inspect-dev/inspect/record"
)

type reader struct {
	ctx    context.Context
	dir    string
	opt    importers.Options
	sess   *importers.Session
	log    *kimi.Log
	models map[string]bool

	// From the trunk's journal: the agent each Agent call started (as the
	// sub-agent's forwarded events say), the conversations rebuilt from
	// those events for sub-agents whose own folder is missing, and the
	// completion notices of background tasks.
	wrappedAgent map[string]string          // Agent call id -> agent id
	wrapped      map[string]*events.Builder // Agent call id -> conversation from forwarded events
	hasOwnWire   map[string]bool            // agent id -> subagents/<id>/wire.jsonl exists
	notices      map[string]notice          // background task id -> its completion notice

	scan   *scan             // the first pass over the trunk's journal
	taken  int               // delegation calls handed over so far (their index in scan.calls)
	orphan []*importers.Fork // the forks of sub-agents no call names, by start, until placed
	later  importers.Report  // what reading those found, reported last
	open   []*kimi.Journal   // the journals still being read
}

type notice struct {
	at     time.Time
	status string
	reason string
	ended  time.Time
}

// notification is a Notification record's payload.
type notification struct {
	SourceKind string `json:"source_kind"`
	SourceID   string `json:"source_id"`
	Payload    struct {
		Status   string   `json:"status"`
		TimedOut bool     `json:"timed_out"`
		Reason   *string  `json:"failure_reason"`
		Finished *float64 `json:"finished_at"`
	} `json:"payload"`
}

// notice is what a background task's completion notice says, and the
// task's id; false for another notification.
func (p notification) notice(at time.Time) (string, notice, bool) {
	if p.SourceKind != "background_task" || p.SourceID == "" {
		return "", notice{}, false
	}
	n := notice{at: at, status: p.Payload.Status}
	if p.Payload.TimedOut {
		n.status = "timed_out"
	}
	if p.Payload.Reason != nil {
		n.reason = *p.Payload.Reason
	}
	if p.Payload.Finished != nil {
		n.ended = kimi.Seconds(*p.Payload.Finished)
	}
	return p.SourceID, n, true
}

func newReader(ctx context.Context, dir string, opt importers.Options) *reader {
	s := &importers.Session{Source: record.Source{Format: Name, ID: filepath.Base(dir), Path: dir}}
	return &reader{
		ctx: ctx, dir: dir, opt: opt, sess: s,
		log:          kimi.NewLog(&s.Report, opt, dir),
		models:       map[string]bool{},
		wrappedAgent: map[string]string{},
		wrapped:      map[string]*events.Builder{},
		hasOwnWire:   map[string]bool{},
		notices:      map[string]notice{},
	}
}

func (r *reader) newBuilder(agent string) *events.Builder {
	return events.NewBuilder(agent, r.opt,
		func(tool string) bool { return IsResearch(r.opt, tool) },
		isDelegation, r.log.Skip)
}

// stream starts reading the session: its trunk Live, its header filled in
// once the trunk has been read.
func (r *reader) stream() (*importers.Session, error) {
	s := r.sess
	path := filepath.Join(r.dir, "wire.jsonl")
	sc, err := prescan(r.ctx, path, r.opt)
	if err != nil {
		return nil, err
	}
	r.scan = sc
	for k, v := range sc.notices {
		r.notices[k] = v
	}
	if err := r.orphans(); err != nil {
		r.close()
		return nil, err
	}
	trunk, err := r.openWire(path, r.newBuilder("main"), kimi.Window{}, true)
	if err != nil {
		r.close()
		return nil, err
	}
	s.Trunk = &importers.Conversation{Agent: "main", System: r.systemPrompt(filepath.Join(r.dir, "context.jsonl")), Live: trunk}
	trunk.c = s.Trunk
	trunk.end = func() { r.finish(trunk) }
	s.Close = r.close
	s.RequestsLack = []string{"the tool definitions (Kimi CLI does not record them)", "thinking blocks"}
	if s.Trunk.System == "" {
		s.RequestsLack = append([]string{"the system prompt"}, s.RequestsLack...)
	}
	return s, nil
}

// finish fills in what the session says of itself once its trunk has
// been read.
func (r *reader) finish(trunk *wire) {
	s := r.sess
	s.Report.Problems = append(s.Report.Problems, r.later.Problems...)
	for k, n := range r.later.Skipped {
		for range n {
			s.Report.Skip(k)
		}
	}
	s.Tasks = trunk.tasks
	s.Started, s.Ended = trunk.b.Conv.Started, trunk.b.Conv.Ended
	var state struct {
		Title *string `json:"custom_title"`
	}
	if _, err := kimi.ReadJSONIn(r.dir, filepath.Join(r.dir, "state.json"), &state); err != nil {
		r.log.Note(filepath.Join(r.dir, "state.json"), 0, "unreadable, so the session has no title: "+err.Error())
	} else if state.Title != nil {
		s.Title = *state.Title
	}
	cwd := r.workDir()
	agentsMd := "AGENTS.md"
	if dir := r.opt.InstructionDir(cwd); dir != "" && !importers.IsFileIn(dir, filepath.Join(dir, agentsMd)) {
		agentsMd = "agents.md"
	}
	r.opt.Instructions(s, cwd, []string{".kimi/AGENTS.md", agentsMd})
	for m := range r.models {
		s.Models = append(s.Models, m)
	}
	sort.Strings(s.Models)
}

// workDir finds the session's working folder in <share>/kimi.json: the
// work_dirs entry whose path hashes to the session's bucket folder.
func (r *reader) workDir() string {
	bucket := filepath.Base(filepath.Dir(r.dir))
	share := filepath.Dir(filepath.Dir(filepath.Dir(r.dir)))
	if filepath.Base(filepath.Dir(filepath.Dir(r.dir))) != "sessions" {
		return ""
	}
	var meta struct {
		WorkDirs []struct {
			Path string `json:"path"`
			Kaos string `json:"kaos"`
		} `json:"work_dirs"`
	}
	if ok, err := kimi.ReadJSON(filepath.Join(share, "kimi.json"), &meta); !ok || err != nil {
		return ""
	}
	for _, wd := range meta.WorkDirs {
		key := WorkDirKey(wd.Path)
		if wd.Kaos != "" && wd.Kaos != "local" {
			key = wd.Kaos + "_" + key
		}
		if key == bucket && filepath.IsAbs(wd.Path) {
			return filepath.Clean(wd.Path)
		}
	}
	return ""
}

// line is one wire.jsonl record.
type line struct {
	Type      string          `json:"type"`
	Version   string          `json:"protocol_version"`
	Timestamp float64         `json:"timestamp"`
	Message   json.RawMessage `json:"message"`
}

// toolCall is a ToolCall record's payload.
type toolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string  `json:"name"`
		Arguments *string `json:"arguments"`
	} `json:"function"`
}

type envelope struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// readWire reads one journal into b whole.
func (r *reader) readWire(path string, b *events.Builder, w kimi.Window, trunk bool) error {
	wr, err := r.openWire(path, b, w, trunk)
	if err != nil {
		return err
	}
	defer wr.close()
	for !wr.eof {
		if err := wr.line(); err != nil {
			return err
		}
	}
	return nil
}

// record applies one journal line to b: inWindow says whether the turn it
// is in is one of the window's.
func (r *reader) record(path string, b *events.Builder, w kimi.Window, inWindow *bool, trunk bool, n int, raw []byte, unterminated bool) error {
	var at time.Time
	var env envelope
	// One decode for the usual record; the record that does not have the
	// shape is decoded again, step by step, to say what is wrong with it.
	var rec struct {
		Type      string    `json:"type"`
		Timestamp float64   `json:"timestamp"`
		Message   *envelope `json:"message"`
	}
	if json.Unmarshal(raw, &rec) == nil && rec.Type != "metadata" && rec.Message != nil && rec.Message.Type != "" {
		at, env = kimi.Seconds(rec.Timestamp), *rec.Message
	} else {
		var l line
		if err := json.Unmarshal(raw, &l); err != nil {
			if unterminated {
				r.log.CutShort(path, n)
				return nil
			}
			return r.log.Malformed(path, n, "not a JSON record: "+kimi.ShortErr(err))
		}
		if l.Type == "metadata" {
			return nil
		}
		if len(l.Message) == 0 || json.Unmarshal(l.Message, &env) != nil || env.Type == "" {
			return r.log.Malformed(path, n, `a record without "message": {"type": …}`)
		}
		at = kimi.Seconds(l.Timestamp)
	}
	if !w.Zero() && env.Type == "TurnBegin" {
		*inWindow = w.Holds(at)
	}
	if !*inWindow {
		return nil
	}
	if err := r.event(b, at, env.Type, env.Payload, trunk); err != nil {
		return r.log.Malformed(path, n, env.Type+": "+kimi.ShortErr(err))
	}
	return nil
}

// event applies one wire message to b. Its error says the payload did not
// have the type's shape.
func (r *reader) event(b *events.Builder, at time.Time, typ string, payload json.RawMessage, trunk bool) error {
	switch typ {
	case "TurnBegin", "SteerInput":
		var p struct {
			UserInput json.RawMessage `json:"user_input"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return err
		}
		text := kimi.ContentText(p.UserInput)
		if typ == "TurnBegin" {
			b.Turn(at, text)
		} else {
			b.Steer(at, text)
		}
	case "TurnEnd":
		b.TurnEnd(at, "", "")
	case "StepBegin":
		b.Step(at)
	case "StepInterrupted":
		b.Interrupted(at)
	case "StatusUpdate":
		var p struct {
			Usage *struct {
				InputOther    int64 `json:"input_other"`
				Output        int64 `json:"output"`
				CacheRead     int64 `json:"input_cache_read"`
				CacheCreation int64 `json:"input_cache_creation"`
			} `json:"token_usage"`
			MessageID string `json:"message_id"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return err
		}
		if u := p.Usage; u != nil {
			b.Usage(at, kimi.Usage(u.InputOther, u.Output, u.CacheRead, u.CacheCreation), "", p.MessageID, false)
		}
	case "ContentPart", "TextPart":
		var p struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return err
		}
		if p.Type == "text" {
			b.Text(at, p.Text)
		}
	case "ToolCall":
		var p toolCall
		if err := json.Unmarshal(payload, &p); err != nil {
			return err
		}
		args := ""
		if p.Function.Arguments != nil {
			args = *p.Function.Arguments
		}
		b.Call(at, p.ID, p.Function.Name, args)
	case "ToolCallPart":
		var p struct {
			Part *string `json:"arguments_part"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return err
		}
		if p.Part != nil {
			b.ArgsPart(at, *p.Part)
		}
	case "ToolResult":
		var p struct {
			ID    string `json:"tool_call_id"`
			Value struct {
				IsError bool            `json:"is_error"`
				Output  json.RawMessage `json:"output"`
				Message string          `json:"message"`
				Display []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"display"`
			} `json:"return_value"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return err
		}
		out := kimi.ContentText(p.Value.Output)
		if out == "" {
			out = p.Value.Message
		}
		note := ""
		for _, d := range p.Value.Display {
			if d.Type == "brief" && d.Text != "" {
				note = d.Text
				break
			}
		}
		if note == "" && p.Value.IsError {
			note = p.Value.Message
		}
		b.Result(at, p.ID, out, p.Value.IsError, note)
	case "Notification":
		var p notification
		if err := json.Unmarshal(payload, &p); err != nil {
			return err
		}
		if id, n, ok := p.notice(at); ok {
			r.notices[id] = n
		}
	case "SubagentEvent":
		var p struct {
			CallID     string          `json:"parent_tool_call_id"`
			LegacyCall string          `json:"task_tool_call_id"`
			AgentID    string          `json:"agent_id"`
			Type       string          `json:"subagent_type"`
			Event      json.RawMessage `json:"event"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return err
		}
		if !trunk {
			return nil // sub-agents cannot start sub-agents; nothing to route
		}
		call := p.CallID
		if call == "" {
			call = p.LegacyCall
		}
		if call == "" {
			r.log.Skip("SubagentEvent without its Agent call id")
			return nil
		}
		if p.AgentID != "" {
			r.wrappedAgent[call] = p.AgentID
			own, known := r.hasOwnWire[p.AgentID]
			if !known {
				own = r.ownWire(p.AgentID)
				r.hasOwnWire[p.AgentID] = own
			}
			if own {
				return nil // its own journal has these events (and their usage) once
			}
		}
		var inner envelope
		if err := json.Unmarshal(p.Event, &inner); err != nil || inner.Type == "" {
			return fmt.Errorf(`the forwarded event is not {"type": …, "payload": …}`)
		}
		child := r.wrapped[call]
		if child == nil {
			agent := p.Type
			if agent == "" {
				agent = kimi.DefaultSubagentType
			}
			child = r.newBuilder(agent)
			r.wrapped[call] = child
		}
		return r.event(child, at, inner.Type, inner.Payload, false)
	case "CompactionEnd":
		b.Compact(at, "(the context was compacted here; Kimi CLI does not record the summary in its journal)")
	case "StepRetry", "CompactionBegin", "HookTriggered", "HookResolved",
		"MCPLoadingBegin", "MCPLoadingEnd", "ApprovalRequest", "ApprovalResponse",
		"ApprovalRequestResolved", "ToolCallRequest", "QuestionRequest", "HookRequest",
		"PlanDisplay", "BtwBegin", "BtwEnd":
		// Known and not part of the graph.
	default:
		r.log.Skip(typ)
	}
	return nil
}

// ownWire reports whether the sub-agent has its own non-empty journal.
func (r *reader) ownWire(agentID string) bool {
	if !kimi.SafeID(agentID) {
		return false
	}
	f, err := importers.OpenIn(r.dir, filepath.Join(r.dir, "subagents", agentID, "wire.jsonl"))
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	return err == nil && fi.Size() > 0
}
