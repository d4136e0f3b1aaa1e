// Package record is the vocabulary every inspect package speaks: a run, its
// nodes, their kinds, statuses, payloads, usage and where the run came from.
// It imports nothing of ours and knows no SQL; the store persists it.
package record

import (
	"fmt"
	"time"
)

// Kind is the closed set of node kinds a run records.
type Kind string

// The node kinds. A run is a sequence of these, numbered by Seq.
const (
	KindUser    Kind = "user"    // a user message that starts a turn; Text holds it
	KindLLM     Kind = "llm"     // one model call; LLM holds usage, calls and the exact request
	KindTool    Kind = "tool"    // one tool call (built-in or command tool); Tool holds it
	KindHandoff Kind = "handoff" // a transfer_to_<name> call that moved the conversation
	KindFork    Kind = "fork"    // a fork call that opened branches
	KindJoin    Kind = "join"    // the single tool result that closed a fork
	KindFinal   Kind = "final"   // a conversation's final message; Text holds it
)

// Kinds lists every node kind in a fixed order.
var Kinds = []Kind{KindUser, KindLLM, KindTool, KindHandoff, KindFork, KindJoin, KindFinal}

// Status is the status of a run, a node or a branch.
type Status string

// Statuses. Running is only ever seen on a run or node that is still open;
// a reader that finds the writer of a running run gone reports Interrupted.
const (
	StatusRunning     Status = "running"
	StatusOK          Status = "ok"
	StatusError       Status = "error"
	StatusExhausted   Status = "exhausted" // a step or token budget ended it before a final answer
	StatusCancelled   Status = "cancelled"
	StatusInterrupted Status = "interrupted"
)

// Statuses lists every status in a fixed order.
var Statuses = []Status{StatusRunning, StatusOK, StatusError, StatusExhausted, StatusCancelled, StatusInterrupted}

// Failed reports whether s is a failure of the work itself (error or
// exhausted), as opposed to the user or the process stopping it.
func (s Status) Failed() bool { return s == StatusError || s == StatusExhausted }

// Stopped reports whether s means the work was stopped from outside
// (cancelled by the user, or interrupted by the process dying).
func (s Status) Stopped() bool { return s == StatusCancelled || s == StatusInterrupted }

// Run is one recorded run: its identity, state and the snapshot of the project
// it ran, so nothing downstream ever needs the project folder.
type Run struct {
	ID      string
	Started time.Time
	Ended   time.Time // zero while the run is open
	Status  Status
	Error   string   // why the run ended in error or was cancelled
	Tasks   []string // the user turns, in order
	Project Project
	Options Options  // what the run was recorded with
	BaseURL string   // the provider's base URL; never a key
	Models  []string // the models the run used, sorted
	Source  Source   // where the run came from; Format "inspect" for our runtime
}

// Options are what a run was recorded with: the settings our runtime ran
// it under, and what an importer learnt of its source that every output of
// the run needs. The store keeps them with the run.
type Options struct {
	// Runtime holds the settings our runtime ran the run with; nil for an
	// imported run.
	Runtime *RuntimeOptions
	// ProjectDir is the absolute path of the project folder the run was
	// recorded from (our runtime), or the working folder of the session
	// an importer read; "" when unknown. SARIF points at the project's
	// files from a repository root with it.
	ProjectDir string
	// RequestsLack lists what an imported run's reconstructed requests
	// lack ("the system prompt", "the tool definitions", …), for every
	// output that shows one; nil for our runtime's exact requests.
	RequestsLack []string
	// Instructions names, per agent of an imported run, the project
	// snapshot file that holds its instructions ("main" → "CLAUDE.md",
	// "Explore" → ".claude/agents/Explore.md"), where the audit points its
	// fixes; nil when the source names none.
	Instructions map[string]string
	// Redacted is how many distinct values an imported run's texts held
	// that were taken for secrets and stored as [redacted]; 0 when none.
	Redacted int
}

// RuntimeOptions are the settings our runtime ran a run with.
type RuntimeOptions struct {
	// MaxForkDepth is the fork depth cap in force: agents.yaml's, or the
	// caller's override. The audit judges the run by it, not by the
	// snapshot's agents.yaml.
	MaxForkDepth int
	// MaxSteps is the model calls a conversation could make.
	MaxSteps int
	// Realtime is set when the run took real time: a provider, or the
	// scripted model waiting its latencies; unset for the scripted
	// model's virtual clock.
	Realtime bool
	// Scripted is set when the scripted model answered.
	Scripted bool
	// Script is the script the scripted model played, as it was given;
	// "" unless Scripted.
	Script string
}

// SourceInspect is the source format of runs our own runtime recorded.
const SourceInspect = "inspect"

// UnrecordedType is the agent of a sub-agent call refused before it ran
// whose requested type the source does not record (Claude Code's traces
// keep no tool input): no type that exists, and none the audit may name.
const UnrecordedType = "unrecorded-type"

// Source says where a run came from: our runtime, or another tool's files
// read by an importer.
type Source struct {
	Format  string // "inspect", or the importer's format name ("otlp", "claude-code", ...)
	Version string // the version of the tool that made the source, when it says
	ID      string // the source's own id (trace id, session id); re-imports update the run with it
	Path    string // where it was read from (a file, a folder, an endpoint); empty for our runtime
}

// IsInspect reports whether the run was recorded by our own runtime (an
// empty Format, as older files have, counts as ours).
func (s Source) IsInspect() bool { return s.Format == "" || s.Format == SourceInspect }

// Fidelity says how faithfully a stored request shows what the model saw.
type Fidelity string

// The fidelities. Exact is the byte-for-byte body sent (our runtime);
// Reconstructed is what an importer rebuilt from the source: the messages
// visible to the model, with the system prompt and tools when the source
// recorded them.
const (
	FidelityExact         Fidelity = "exact"
	FidelityReconstructed Fidelity = "reconstructed"
)

// Project is the snapshot of a project stored with its run.
type Project struct {
	Name  string // the project folder's base name
	Files []File // agents.yaml and every prompt file, sorted by path
}

// File is one file of a project snapshot.
type File struct {
	Path    string // slash-separated, relative to the project folder (e.g. "agents/analyst.md")
	SHA256  string // hex of the content's SHA-256
	Content string
}

// File returns the snapshot file at path, or nil.
func (p *Project) File(path string) *File {
	for i := range p.Files {
		if p.Files[i].Path == path {
			return &p.Files[i]
		}
	}
	return nil
}

// Node is one recorded step of a run. The common fields are set for every
// kind; exactly the kind's own struct (LLM, Tool, Handoff, Fork, Join) is
// non-nil, and Text carries the user message (user) or the answer (final).
type Node struct {
	Seq     int64  // run-unique, shown as n<Seq>; assigned by the Recorder
	Kind    Kind   // what this node is
	Branch  string // branch path of its conversation: "" for the trunk, "eu", "eu/fr" (BranchPath)
	ForkSeq int64  // seq of the fork node that opened this conversation; 0 for the trunk
	Agent   string // the agent that owned the conversation at this node
	Depth   int    // fork depth of the conversation: 0 for the trunk
	Started time.Time
	Ended   time.Time // zero while open
	Status  Status
	Error   string
	// CalledBy is the seq of the llm node whose response made this call,
	// on the nodes a response's tool calls become (tool, fork, handoff);
	// 0 when the source does not say, and on every other kind. The calls
	// of one response share it: where the stack runs them at once they
	// are one parallel call group (DESIGN §18).
	CalledBy int64 `json:",omitempty"`

	Text    string // user: the message; final: the final answer
	LLM     *LLM
	Tool    *Tool
	Handoff *Handoff
	Fork    *Fork
	Join    *Join
}

// MaxBranchPath bounds the length of a branch path in bytes (a branch's
// own name aside): a conversation nested so deep that its path would be
// longer is addressed by the fork that opened it instead of by every
// ancestor (BranchPath), so a path never repeats thousands of ancestors
// and a run's storage and every reader stay linear in its nodes at any
// fork depth.
const MaxBranchPath = 512

// BranchPath is the branch path of branch name opened by fork node
// n<forkSeq> in the conversation at path parent: name on the trunk,
// "parent/name" below it. When that would be longer than MaxBranchPath the
// path is "…n<forkSeq>/name": the ancestors are the fork's, the name stays
// whole, and the path stays unique in the run (siblings' names differ). Every
// writer (the runtime, importers) and reader (graph) addresses a branch
// through it.
func BranchPath(parent string, forkSeq int64, name string) string {
	if parent == "" {
		return name
	}
	if len(parent)+1+len(name) <= MaxBranchPath {
		return parent + "/" + name
	}
	return fmt.Sprintf("…n%d/%s", forkSeq, name)
}

// Duration is Ended-Started, or 0 while the node is open.
func (n *Node) Duration() time.Duration {
	if n.Ended.IsZero() {
		return 0
	}
	return n.Ended.Sub(n.Started)
}

// LLM is the payload of an llm node.
type LLM struct {
	Model string
	Calls []string // names of the tools the response called, in order; empty = it answered
	Usage Usage
	// Request is the exact JSON body sent. It is written at StartNode and is
	// not filled by ScanNodes (load it with DB.Request); storage shares the
	// messages it repeats with earlier requests.
	Request []byte
	// Response is the provider's response body (or the scripted model's
	// equivalent), written at FinishNode; not filled by ScanNodes (DB.Response).
	Response []byte
	Content  string // the assistant's text content, if any
	// Fidelity of Request; empty reads as exact (our runtime's requests).
	Fidelity Fidelity
	// Attempts is how many times the request was sent (retries after a
	// 429, a 5xx or a timeout included); 0 = not recorded, which reads as 1.
	Attempts int
}

// Exact reports whether Request is the exact body that was sent.
func (l *LLM) Exact() bool { return l.Fidelity == "" || l.Fidelity == FidelityExact }

// Usage is the token usage of one model call, normalised: In counts every
// input token, cache reads and cache writes included (sources that report
// them apart, as Anthropic's do, are added up by their importer).
type Usage struct {
	In                 int64
	Out                int64
	Cached             int64 // cache reads; meaningful only when CachedReported
	CachedReported     bool  // the provider (or the scripted cache simulation) reported Cached
	CacheWrite         int64 // cache creation tokens; meaningful only when CacheWriteReported
	CacheWriteReported bool
	Reasoning          int64 // reasoning tokens (part of Out); meaningful only when ReasoningReported
	ReasoningReported  bool
}

// WeightedTokens is zut's weighted tokens of a call (DESIGN §15): uncached
// input, cache writes and output in full, cache reads at 25%. in counts
// every input token, reads and writes included; the uncached input is in
// minus reads and writes, never below 0. The one definition: Usage.Weighted
// and the prompt-cache totals (package cache) call it.
func WeightedTokens(in, reads, writes, out int64) float64 {
	uncached := max(in-reads-writes, 0)
	return float64(uncached+writes+out) + float64(reads)/4
}

// Weighted is u's weighted tokens (WeightedTokens) from what the provider
// reported: an unreported cache read or write counts as none.
func (u Usage) Weighted() float64 {
	var reads, writes int64
	if u.CachedReported {
		reads = u.Cached
	}
	if u.CacheWriteReported {
		writes = u.CacheWrite
	}
	return WeightedTokens(u.In, reads, writes, u.Out)
}

// MaxTokens bounds every token count of one model call. No model takes or
// gives a trillion tokens in one call, so a count outside [0, MaxTokens] is
// impossible: a script giving one is refused, a provider's is clamped and
// flagged, a stored one reads clamped. Sums of clamped counts over any
// realistic number of calls cannot overflow an int64.
const MaxTokens int64 = 1 << 40

// ClampTokens returns n within [0, MaxTokens] and whether it had to move.
func ClampTokens(n int64) (int64, bool) {
	switch {
	case n < 0:
		return 0, true
	case n > MaxTokens:
		return MaxTokens, true
	}
	return n, false
}

// Clamp bounds every count of u with ClampTokens and names the counts
// that were out of range ("in=-5"), for the flag a provider's usage gets.
func (u *Usage) Clamp() []string {
	var bad []string
	for _, f := range []struct {
		name string
		n    *int64
	}{{"in", &u.In}, {"out", &u.Out}, {"cached", &u.Cached}, {"cache_write", &u.CacheWrite}, {"reasoning", &u.Reasoning}} {
		if v, moved := ClampTokens(*f.n); moved {
			bad = append(bad, fmt.Sprintf("%s=%d", f.name, *f.n))
			*f.n = v
		}
	}
	return bad
}

// Tool is the payload of a tool node.
type Tool struct {
	CallID   string // the model's tool call id
	Name     string
	Args     string // the arguments as the model sent them (JSON text)
	Result   string // what the tool returned to the model (also the error text when it failed)
	Research bool   // a research tool (read_file, list_dir, find_files, readOnly command tools)
}

// Handoff is the payload of a handoff node.
type Handoff struct {
	From   string
	To     string
	Reason string
}

// Fork is the payload of a fork node.
type Fork struct {
	Context  string // inherit, compact or none
	Branches []ForkBranch
	// Tool is the delegation tool that played fork in an imported run
	// (Claude Code's Task or Agent, Codex's spawn_agent, Kimi's Agent);
	// empty for our runtime's fork.
	Tool string `json:",omitempty"`
	// Detached is set when the parent went on while the branches ran
	// (Claude Code's background sub-agents): the parent's own nodes made
	// meanwhile come between the fork and its join, which is where the
	// results reached it. Unset: the parent waited, the join follows the
	// branches.
	Detached bool `json:",omitempty"`
}

// ForkBranch is one branch as the fork call declared it.
type ForkBranch struct {
	Name         string
	Agent        string // resolved: the forking agent when the call omitted it
	Instructions string
}

// Join is the payload of a join node.
type Join struct {
	ForkSeq  int64 // the fork this join closes
	Branches []JoinBranch
}

// JoinBranch is one branch's outcome, in declared order.
type JoinBranch struct {
	Name     string
	Agent    string
	Status   Status
	Duration time.Duration // from Started (else the fork) to the branch's end
	Answer   string        // the branch's final message, or its error
	// Started is when the branch began when that is not the fork's time
	// (an imported sub-agent that started after the call, as Claude
	// Code's siblings may, staggered); zero: at the fork.
	Started time.Time `json:",omitzero"`
}
