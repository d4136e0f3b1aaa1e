// Package importers turns other tools' runs into inspect records (DESIGN
// §13). Each format lives in its own subpackage (importers/claudecode,
// importers/codex, importers/kimi, importers/openaiagents, importers/otlp)
// and only parses: it reads its files and yields a Session, the neutral
// tree every format maps to. This package owns the one mapping from a
// Session to records — sequence numbers, branch paths, depths, fork and join
// nodes, statuses, usage normalisation — and writes it through a Writer the
// store satisfies, so every importer numbers, nests and prices a run alike.
// It knows nothing of SQL, rules or rendering.
//
// A format that implements Streamer hands its session over while it reads
// it: its conversations are Live, each step comes as the reader settles it,
// and Write records it and keeps nothing of it, so memory stays bounded on
// a session of any size (DESIGN §13). The steps come in the order Write
// numbers them — a fork's branches when the fork comes — so the run is the
// one the whole tree gives (Collect builds that tree from a live session).
package importers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/record"
)

// Session is one imported run: one session file (with its sub-agents) or
// one trace.
type Session struct {
	Source  record.Source  // Format, Version, ID (the re-import key) and Path
	Title   string         // the session's own title, when the source has one
	Dir     string         // the working folder the session ran in, when the source says (absolute)
	Started time.Time      // the first thing that happened
	Ended   time.Time      // zero when the session never ended (a live file)
	Tasks   []string       // the user turns, in order
	Project record.Project // the instruction files the source names (sub-agent definitions, CLAUDE.md, AGENTS.md, profiles)
	Models  []string
	Trunk   *Conversation
	Report  Report // what was skipped or could not be read
	// RequestsLack names what the reconstructed requests of this source
	// lack ("the system prompt", "the tool definitions", "thinking blocks"),
	// for every output that shows one; nil when nothing is known to be missing.
	RequestsLack []string
	// Instructions names, per agent, the Project file that holds its
	// instructions (the trunk's CLAUDE.md or AGENTS.md, a sub-agent's
	// definition): the audit points its fixes there. An agent without an
	// entry gets fixes addressed to "the instructions of agent X".
	Instructions map[string]string
	// Close, when set, releases what the session's Live readers hold (open
	// files); Import calls it once the session is recorded or the import
	// stopped.
	Close func()
}

// Conversation is one message list driven by one agent at a time: the
// trunk, or one sub-agent's branch.
type Conversation struct {
	Agent   string // the agent that starts it ("main" when the source names none)
	Started time.Time
	Ended   time.Time     // zero: never finished (reads interrupted)
	Status  record.Status // the conversation's outcome; empty = derive (ok when ended, interrupted when not)
	Error   string
	Steps   []Step // in the order they happened
	// Live, when set, yields the steps instead (Steps stays empty): the
	// conversation is still being read. Agent is known from the start;
	// Started once the first step (or the end) has come; Ended, Status
	// and Error at the end.
	Live StepReader
	// System and Tools are the system prompt and the tool array the model
	// was given, when the source recorded them (Kimi Code, Codex base
	// instructions); they go into every reconstructed request of the
	// conversation. Empty when unknown.
	System string
	Tools  []ToolDef
}

// StepReader yields the steps of a conversation being read.
type StepReader interface {
	// Next returns the conversation's next step once the reader knows it
	// will not change, or false at its end. A step's branches, when it is a
	// fork, are Live conversations to read (to their end) before the next
	// step of this one. An error ends the import.
	Next() (Step, bool, error)
}

// ToolDef is one tool offered to the model, as the source recorded it.
type ToolDef struct {
	Name        string
	Description string
	Parameters  json.RawMessage // its JSON schema, or nil
}

// Step is one thing a conversation did: exactly one field is set. Its
// kinds are closed — these seven and no other — and Write refuses a step
// with none or several set (Check) instead of dropping it.
type Step struct {
	User    *User    // a user message that starts a turn
	LLM     *LLM     // one model response
	Tool    *Tool    // one tool call and its result
	Handoff *Handoff // the conversation changing owner
	Fork    *Fork    // one response starting sub-agents, with their join
	Final   *Final   // the conversation's final message
	Compact *Compact // the context was compacted: the model sees a summary instead of what came before
}

// Check reports whether st is one step: an error when it sets none of its
// fields, or more than one, or is a fork with a missing branch.
func (st Step) Check() error {
	var set []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"User", st.User != nil}, {"LLM", st.LLM != nil}, {"Tool", st.Tool != nil}, {"Handoff", st.Handoff != nil},
		{"Fork", st.Fork != nil}, {"Final", st.Final != nil}, {"Compact", st.Compact != nil}} {
		if f.set {
			set = append(set, f.name)
		}
	}
	switch {
	case len(set) == 0:
		return errors.New("a step with nothing set (it must be one of User, LLM, Tool, Handoff, Fork, Final, Compact)")
	case len(set) > 1:
		return fmt.Errorf("a step that is %s at once (it must be one)", strings.Join(set, " and "))
	case st.Fork != nil && slices.Contains(st.Fork.Branches, nil):
		return errors.New("a fork with a missing branch")
	}
	return nil
}

// At is when the step started (zero when the source gave no time).
func (st Step) At() time.Time {
	switch {
	case st.User != nil:
		return st.User.At
	case st.LLM != nil:
		return st.LLM.Started
	case st.Tool != nil:
		return st.Tool.Started
	case st.Handoff != nil:
		return st.Handoff.At
	case st.Fork != nil:
		return st.Fork.At
	case st.Final != nil:
		return st.Final.At
	case st.Compact != nil:
		return st.Compact.At
	}
	return time.Time{}
}

// Compact is a context compaction: from here on the model sees Summary (as
// a user message) in place of the conversation so far. It records no node
// of its own; the call that wrote the summary, when the source has it, is an
// LLM step before it.
type Compact struct {
	At      time.Time
	Summary string
}

// User is a user turn.
type User struct {
	At   time.Time
	Text string
}

// LLM is one model response (Claude Code: one message.id across its
// lines; Codex: a response closed by its token count; Kimi: a step; Agents
// SDK: a generation/response span; OTel: a chat span).
type LLM struct {
	Started, Ended time.Time
	Model          string
	Agent          string       // set when it differs from the conversation's current agent
	Usage          record.Usage // normalised: In includes cache reads and writes
	Calls          []string     // the tool names the response called, in order (fork tool included)
	Content        string       // its text
	Status         record.Status
	Error          string
	// Request is the reconstructed request (a Chat Completions body of the
	// messages visible to the model, with system and tools when the source
	// recorded them); nil when nothing can be rebuilt. Response is the
	// response as the source recorded it, or nil.
	Request, Response []byte

	// ID is the source's id of the response (Claude Code's message.id),
	// when it has one: the steps its calls became name it as their
	// Response. "" = none.
	ID string
}

// Tool is one tool call joined to its result by call id.
type Tool struct {
	Started, Ended time.Time
	CallID         string
	Name           string
	Args           string // JSON text as the model sent it
	Result         string
	Research       bool // DESIGN §13's read-only tools of the format, else the configured name patterns
	Status         record.Status
	Error          string

	// Response is the ID of the LLM step whose response made this call,
	// when the source gives one; "" = the response it follows (Write links
	// a response to the tool, fork and hand-off steps right after it).
	Response string
	// Agent is set when the call's agent is not the conversation's current
	// owner (a LangGraph node that ran after another, no hand-off between
	// them), as LLM.Agent.
	Agent string
}

// Handoff is an owner change (an Agents SDK hand-off span; a transfer_to_*
// tool followed by another agent taking over).
type Handoff struct {
	At       time.Time
	From, To string
	Reason   string
	// Status and Error are the hand-off's own outcome when the source
	// reports one (the Agents SDK's "Multiple handoffs requested": it took
	// this one and dropped the others); empty = ok.
	Status record.Status
	Error  string
	// Tools is what the new owner can call, when the source names it
	// (the Agents SDK's agent span: its tools and hand-offs); nil = the
	// conversation's tools stay as they were.
	Tools []ToolDef
}

// Fork is one model response that started sub-agents: one branch per
// sub-agent in call order; the join is where their results came back.
type Fork struct {
	At       time.Time
	Tool     string // the delegation tool that played fork (Task, Agent, spawn_agent, ...)
	Context  string // none for fresh children, inherit for children seeded with the parent's turns
	Branches []*Branch
	JoinAt   time.Time // when the results came back; zero = never (interrupted)
	// Detached: the parent went on while the sub-agents ran (Claude Code's
	// background agents): the calls returned at once (Branch.Launched) and
	// the join comes where the results reached the parent, after the
	// parent's own steps made meanwhile — Write places it among the
	// conversation's later steps by time. Unset: the join follows the
	// branches at once, the parent having waited for them.
	Detached bool

	// Response is the ID of the LLM step whose delegation calls made the
	// fork, as Tool.Response.
	Response string
}

// Branch is one sub-agent of a fork.
type Branch struct {
	Name         string // unique among its siblings (the importer makes it so)
	Agent        string
	Instructions string // the prompt the parent gave it
	CallID       string // the delegation call's id
	// Tool is the delegation tool this branch's call named when it is not
	// the fork's (the Agents SDK's agents as tools: one tool per agent).
	Tool   string
	Args   string // the delegation call's arguments as the model sent them (JSON); empty = rebuilt from the fields above
	Answer string // what came back to the parent
	// Launched is what the call itself returned at once when the fork is
	// Detached (the launch acknowledgement the model read); the Answer
	// came later.
	Launched string
	// ID is the sub-agent's own id in the source (Claude Code's agentId),
	// when the source gives one; it names the sub-agent, not the path.
	ID string
	// Started is when the sub-agent began, when the source says so apart
	// from its steps (Claude Code's parent record: the result's time minus
	// the reported duration); zero: at the fork. Set once its
	// conversation has been read.
	Started time.Time
	Conv    *Conversation
}

// Final is a conversation's final message, or the end of one trunk turn.
type Final struct {
	At   time.Time
	Text string
	// Status is how this turn ended when it did not end with an answer
	// (a turn the user interrupted is cancelled); empty = ok. The last
	// final of a conversation takes the conversation's status instead when
	// that is not ok.
	Status record.Status
	Error  string
	// Agent is set when the agent that answered is not the conversation's
	// current owner (a LangGraph node after another), as LLM.Agent.
	Agent string
}

// Report says what an import skipped or could not read.
type Report struct {
	Skipped  map[string]int // unknown record types (or attributes) -> how many were skipped
	Problems []Problem      // malformed lines, in file order
}

// Problem is one input line or record that could not be read.
type Problem struct {
	File string
	Line int
	Err  string
}

// Format is one importer: a parser of one tool's files into Sessions.
type Format interface {
	// Name is the format's name as --format and record.Source.Format spell it.
	Name() string
	// Detect reports whether path looks like this format, reading at most a
	// few kilobytes of it.
	Detect(path string) bool
	// Read parses path (and the files it names: sub-agent files, children's
	// rollouts) into sessions: whole trees, their texts capped. A malformed
	// line is a Problem in the session's Report (an error instead when
	// opt.Strict); an unknown record type is counted in Report.Skipped.
	Read(ctx context.Context, path string, opt Options) ([]*Session, error)
}

// Streamer is a Format that can hand its sessions over while it reads
// them, so that importing one keeps bounded memory whatever its size.
type Streamer interface {
	// Stream is Read with each session's Trunk Live. Source is final when
	// it returns; the session's other fields (Title, Started, Ended, Tasks,
	// Project, Models, Report, RequestsLack, Instructions) once the trunk
	// has ended. Close releases the files a session still reads.
	Stream(ctx context.Context, path string, opt Options) ([]*Session, error)
}

// Options tune a Read.
type Options struct {
	Strict bool // a malformed line fails the import instead of being reported
	// Research says whether a tool of this format counts as research when
	// the format's own list (DESIGN §13) does not name it; nil = the default
	// name patterns (read*, get*, list*, search*, find*, fetch*, lookup*, query*).
	Research func(tool string) bool
	// Project is the folder the sessions' instruction files (CLAUDE.md,
	// AGENTS.md, sub-agent definitions) are read from, as the user named it
	// (inspect import --project); absolute. "" = the session's working
	// folder when it is Here, else none (InstructionDir).
	Project string
	// Here is the folder the import runs in (absolute): a session that ran
	// there has its instruction files read from it without --project.
	Here string
	// MaxText caps every text an import keeps — a message, a response's
	// text, a tool's arguments or result, a sub-agent's instructions or
	// answer — so a node's memory stays bounded whatever the session
	// (Clip); 0 = DefaultMaxText. OTLP attribute values have the receiver's
	// own cap (otel.Limits).
	MaxText int
}

// DefaultMaxText is the text cap of an import when Options.MaxText is 0:
// the runtime's cap of a tool result (DESIGN §11).
const DefaultMaxText = 256 << 10

// TextCap is the cap of one text kept: MaxText, else DefaultMaxText.
func (o Options) TextCap() int {
	if o.MaxText > 0 {
		return o.MaxText
	}
	return DefaultMaxText
}

// Clip cuts s to TextCap bytes (on a UTF-8 boundary) and says how much was
// cut: "…" then a line "[N more bytes not imported]".
func (o Options) Clip(s string) string {
	max := o.TextCap()
	if len(s) <= max {
		return s
	}
	cut := Truncate(s, max)
	return cut + "\n[" + strconv.Itoa(len(s)-len(cut)+len("…")) + " more bytes not imported]"
}

// DefaultResearchPatterns are the name patterns a tool counts as research
// by when neither the format's list nor the configuration says (DESIGN
// §13, §17): a trailing * matches any rest, case-insensitively.
var DefaultResearchPatterns = []string{"read*", "get*", "list*", "search*", "find*", "fetch*", "lookup*", "query*"}

// IsResearch reports whether a tool the format's own list does not name
// counts as research: opt.Research when set, else DefaultResearchPatterns.
func (o Options) IsResearch(tool string) bool {
	if o.Research != nil {
		return o.Research(tool)
	}
	return MatchResearch(DefaultResearchPatterns, tool)
}

// MatchResearch reports whether tool matches one of patterns: a pattern
// ending in * matches every name starting with the rest, any other pattern
// only that name; both case-insensitively.
func MatchResearch(patterns []string, tool string) bool {
	name := strings.ToLower(tool)
	for _, p := range patterns {
		p = strings.ToLower(p)
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		} else if name == p {
			return true
		}
	}
	return false
}
