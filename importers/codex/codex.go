// Package codex reads OpenAI Codex CLI rollout files (format "codex"):
// ~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl, one JSON
// line each {timestamp, type, payload} of session_meta, turn_context,
// response_item, event_msg and newer record types. One rollout and the
// rollouts of the sub-agents it spawned are one Session: the response items
// between two token counts are one model response, tool calls are joined to
// their outputs by call id, the spawn_agent calls of one response are one
// fork whose branches are the children's own rollouts (found through
// session_meta.source.subagent.thread_spawn.parent_thread_id in the same
// tree), and wait's output is the join.
package codex

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
)

// Name is the format's name.
const Name = "codex"

// maxDepth bounds how deep sub-agents of sub-agents are followed.
const maxDepth = 16

// Format is the codex importer.
type Format struct{}

var (
	_ importers.Format  = Format{}
	_ importers.Locator = Format{}
	_ importers.Watched = Format{}
)

// Name returns "codex".
func (Format) Name() string { return Name }

var detectRE = regexp.MustCompile(`^\s*\{[^\n]*"type"\s*:\s*"session_meta"`)

// Detect reports whether path starts with a Codex session_meta line,
// reading at most 8 KB.
func (Format) Detect(path string) bool {
	return detectRE.Match(importers.Head(path, 8<<10))
}

// Read parses the rollout at path, and the rollouts of the sub-agents it
// spawned, into one Session (Stream collected).
func (f Format) Read(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
	return importers.Collected(f.Stream(ctx, path, opt))
}

// Stream reads the rollout at path, and the rollouts of the sub-agents it
// spawned, as one Session handed over as it is read (importers.Streamer,
// stream.go).
func (Format) Stream(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
	report := &importers.Report{}
	root, err := readThread(ctx, path, opt, report)
	if err != nil {
		return nil, err
	}
	models := append([]string(nil), root.models...)
	t := &threads{idx: &index{root: sessionsRoot(path), from: dateDir(path)}, opt: opt, report: report,
		seen: map[string]bool{root.meta.ID: true}, models: &models, open: map[*thread]bool{}}
	if err := match(ctx, root, t); err != nil {
		return nil, err
	}
	s := &importers.Session{
		Source:  record.Source{Format: Name, Version: root.meta.CLIVersion, ID: root.meta.ID, Path: path},
		Started: root.conv.Started,
		Ended:   root.conv.Ended,
		Tasks:   root.tasks,
		Models:  models,
		Trunk:   root.conv,
		// A rollout records the base instructions and the messages, not
		// the tool array sent with each request.
		RequestsLack: []string{"the tool definitions"},
	}
	// The instruction files Codex reads from the session's folder.
	opt.Instructions(s, root.meta.Cwd, []string{"AGENTS.md", "AGENTS.override.md"})
	s.Report = *report
	th := t.newThread(ctx, root, true)
	th.end = func() {
		// The sub-agents' rollouts were read as their branches were.
		s.Models = *t.models
		s.Report = *report
	}
	root.conv.Live = th
	s.Close = func() {
		for th := range t.open {
			th.close()
		}
	}
	return []*importers.Session{s}, nil
}

// match finds each spawn_agent call's child rollout (r.found): first the
// children the calls name, then the rest in start order for calls whose
// output named none (a file cut short).
func match(ctx context.Context, r *reader, t *threads) error {
	if len(r.spawns) == 0 {
		return nil
	}
	if err := t.idx.build(ctx); err != nil {
		return err
	}
	children := t.idx.children[r.meta.ID]
	used := map[string]bool{}
	byID := func(id string) *childFile {
		for _, c := range children {
			if c.meta.ID == id {
				return c
			}
		}
		return nil
	}
	found := make([]*childFile, len(r.spawns))
	for i, s := range r.spawns {
		var c *childFile
		switch {
		case s.threadID != "":
			c = byID(s.threadID)
		case s.taskName != "":
			for _, cc := range children {
				if cc.meta.path() == s.taskName || strings.TrimPrefix(cc.meta.path(), "/root/") == strings.TrimPrefix(s.taskName, "/root/") {
					c = cc
					break
				}
			}
		}
		if c != nil && !used[c.meta.ID] {
			found[i] = c
			used[c.meta.ID] = true
		}
	}
	for i, s := range r.spawns {
		if found[i] != nil || s.threadID != "" || s.failed != "" {
			continue
		}
		for _, c := range children {
			if !used[c.meta.ID] && !c.meta.parsedAt.Before(s.at.Add(-minuteSkew)) {
				found[i] = c
				used[c.meta.ID] = true
				break
			}
		}
	}
	for _, c := range children {
		if !used[c.meta.ID] {
			t.report.Skip("sub-agent rollouts no spawn_agent call of the parent names")
		}
	}
	for i, s := range r.spawns {
		s.child = found[i]
	}
	return nil
}

// attach gives every fork of r its branches (attachFork); depth counts
// sub-agent levels.
func attach(ctx context.Context, r *reader, t *threads, depth int) error {
	for _, f := range r.forks {
		if err := attachFork(ctx, r, t, f, depth); err != nil {
			return err
		}
	}
	return nil
}

// attachFork reads the child rollout of each of fork's spawn_agent calls
// (a first pass, and so on down its own sub-agents) and hangs it on the
// call's branch, a thread to read when Write comes to it.
func attachFork(ctx context.Context, r *reader, t *threads, fork *importers.Fork, depth int) error {
	names := importers.BranchNames{} // the branch names the fork gave so far
	// The spawns of one fork are next to each other, the forks in order:
	// those done are let go.
	for ; r.attached < len(r.spawns) && r.spawns[r.attached].fork != fork; r.attached++ {
	}
	for ; r.attached < len(r.spawns) && r.spawns[r.attached].fork == fork; r.attached++ {
		s := r.spawns[r.attached]
		r.spawns[r.attached] = nil
		b := s.branch
		c := s.child
		switch {
		case c == nil || t.seen[c.meta.ID] || depth > maxDepth:
			b.Conv = &importers.Conversation{Agent: b.Agent, Started: s.at}
			switch {
			case s.failed != "":
				b.Conv.Status, b.Conv.Error = record.StatusError, "spawn_agent failed: "+s.failed
			case c != nil && depth > maxDepth:
				b.Conv.Status, b.Conv.Error = record.StatusInterrupted, fmt.Sprintf("sub-agents deeper than %d levels are not read", maxDepth)
			default:
				id := s.threadID
				if id == "" {
					id = s.taskName
				}
				b.Conv.Status = record.StatusInterrupted
				b.Conv.Error = strings.TrimSpace("the sub-agent's rollout file was not found " + paren(id))
			}
		default:
			child, err := readThread(ctx, c.path, t.opt, t.report)
			if err != nil {
				b.Conv = &importers.Conversation{Agent: b.Agent, Started: s.at, Status: record.StatusError,
					Error: "the sub-agent's rollout could not be read: " + err.Error()}
				break
			}
			t.seen[c.meta.ID] = true
			for _, m := range child.models {
				if !slices.Contains(*t.models, m) {
					*t.models = append(*t.models, m)
				}
			}
			if err := match(ctx, child, t); err != nil {
				return err
			}
			if err := attach(ctx, child, t, depth+1); err != nil {
				return err
			}
			b.Conv = child.conv
			if b.Agent == "default" && child.meta.role() != "" {
				b.Agent = child.meta.role()
			}
			b.Conv.Agent = b.Agent
			if s.nickname == "" {
				s.nickname = child.meta.nickname()
			}
			b.Conv.Live = t.newThread(ctx, child, false)
		}
		if s.status != "" {
			// What the parent learnt (wait, a notification) is the branch's outcome.
			b.Conv.Status = s.status
			if b.Conv.Ended.IsZero() {
				b.Conv.Ended = s.reported
			}
			if s.status != record.StatusOK {
				b.Conv.Error = s.statusErr
			} else {
				b.Conv.Error = ""
			}
		}
		b.Name = names.Unique(branchName(s))
		if s.reported.After(fork.JoinAt) {
			fork.JoinAt = s.reported
		}
	}
	return nil
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

// branchName names a branch by what Codex calls the child: its nickname,
// its task name, else its role.
func branchName(s *spawn) string {
	switch {
	case s.nickname != "":
		return s.nickname
	case s.taskName != "":
		return strings.TrimPrefix(s.taskName, "/root/")
	case s.role != "":
		return s.role
	}
	return "agent"
}
