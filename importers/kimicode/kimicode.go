// Package kimicode imports sessions of the TypeScript Kimi Code CLI
// (format "kimi-code", DESIGN §13): a session folder of
// ~/.kimi-code/sessions with state.json (title, the agents and who started
// each) and one journal per agent, agents/main/wire.jsonl for the trunk and
// agents/agent-N/wire.jsonl for each sub-agent (kiki's shape). Each step of
// a journal is one llm node with the usage of its usage.record; the Agent
// and AgentSwarm calls of one step are one fork with a branch per sub-agent,
// found through task.started (or the call's result, or state.json); the
// working folder and the AGENTS.md files the session loaded come from its
// config records. It only parses: importers.Write records the Session.
package kimicode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/internal/kimi"
)

// Name is the format's name.
const Name = "kimi-code"

// Format is the kimi-code importer.
type Format struct{}

var (
	_ importers.Format   = Format{}
	_ importers.Locator  = Format{}
	_ importers.Watched  = Format{}
	_ importers.Streamer = Format{}
)

// Name implements importers.Format.
func (Format) Name() string { return Name }

// research are Kimi Code's read-only tools, with the Kimi CLI names its
// legacy-session migration keeps (DESIGN §13).
var research = map[string]bool{
	"Read": true, "ReadMediaFile": true, "Grep": true, "Glob": true, "WebSearch": true, "FetchURL": true,
	"ReadFile": true, "SearchWeb": true,
}

// IsResearch reports whether a Kimi Code tool only reads: the format's own
// list, else the options' patterns.
func IsResearch(opt importers.Options, tool string) bool {
	return research[tool] || opt.IsResearch(tool)
}

func isDelegation(name string) bool { return name == kimi.ToolAgent || name == kimi.ToolAgentSwarm }

// Home is Kimi Code's data folder: $KIMI_CODE_HOME, else ~/.kimi-code
// (variables read through getenv).
func Home(getenv func(string) string) (string, error) {
	return importers.ToolHome(getenv, "KIMI_CODE_HOME", ".kimi-code", "Kimi Code's", "the session folder's")
}

var nonSlug = regexp.MustCompile(`[^a-z0-9._-]+`)

// WorkDirKey is the name of the folder holding the sessions of the working
// folder dir, as Kimi Code spells it: wd_<slug of its base name>_<first 12
// hex of the SHA-256 of its path>.
func WorkDirKey(dir string) string {
	norm := strings.TrimRight(filepath.ToSlash(filepath.Clean(dir)), "/")
	base := norm[strings.LastIndexByte(norm, '/')+1:]
	slug := strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(base), "-"), "-")
	if len(slug) > 40 {
		slug = strings.Trim(slug[:40], "-")
	}
	if slug == "" || slug == "." || slug == ".." {
		slug = "workspace"
	}
	sum := sha256.Sum256([]byte(norm))
	return "wd_" + slug + "_" + hex.EncodeToString(sum[:])[:12]
}

// Newest returns the folder of the newest Kimi Code session of the working
// folder cwd (importers.Locator): of the sessions in
// <home>/sessions/<WorkDirKey(cwd)>/ and those session_index.jsonl lists
// for cwd, the one whose main journal changed last.
func (Format) Newest(cwd string, getenv func(string) string) (string, error) {
	home, err := Home(getenv)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return "", err
	}
	sessions := filepath.Join(home, "sessions")
	dirs := kimi.Sessions(filepath.Join(sessions, WorkDirKey(abs)))
	dirs = append(dirs, indexed(filepath.Join(home, "session_index.jsonl"), abs)...)
	if d := kimi.Newest(dirs, filepath.Join("agents", "main", "wire.jsonl")); d != "" {
		return d, nil
	}
	return "", fmt.Errorf("no Kimi Code session of %s in %s; give the session folder's path, or set KIMI_CODE_HOME when Kimi Code keeps its data elsewhere", abs, filepath.Join(sessions, WorkDirKey(abs)))
}

// Files lists what a live session grows in: its folder, walked
// (importers.Watched).
func (Format) Files(path string) []string {
	if dir, err := sessionDir(path); err == nil {
		return []string{dir}
	}
	return []string{path}
}

// indexed lists the session folders session_index.jsonl gives for workDir.
func indexed(index, workDir string) []string {
	f, err := importers.OpenRegular(index)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	lr := importers.NewLineReader(f)
	for {
		line, _, _, err := lr.Next()
		if errors.Is(err, io.EOF) || err != nil && !errors.Is(err, importers.ErrLineTooLong) {
			break
		}
		var e struct {
			SessionDir string `json:"sessionDir"`
			WorkDir    string `json:"workDir"`
		}
		if json.Unmarshal(line, &e) != nil || e.SessionDir == "" || !filepath.IsAbs(e.SessionDir) {
			continue
		}
		if filepath.Clean(e.WorkDir) == workDir {
			out = append(out, filepath.Clean(e.SessionDir))
		}
	}
	return out
}

// sessionDir resolves what the user named: a session folder, its
// state.json, or one of its agents' wire.jsonl.
func sessionDir(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, errors.Unwrap(err))
	}
	dir := path
	if !fi.IsDir() {
		dir = filepath.Dir(path)
		if filepath.Base(path) == "wire.jsonl" && filepath.Base(filepath.Dir(dir)) == "agents" {
			dir = filepath.Dir(filepath.Dir(dir))
		}
	}
	if !importers.IsFileIn(dir, filepath.Join(dir, "agents", "main", "wire.jsonl")) {
		return "", fmt.Errorf("%s has no agents/main/wire.jsonl: a Kimi Code session folder holds state.json and one journal per agent under agents/", dir)
	}
	return dir, nil
}

// Detect reports whether path is a Kimi Code session folder, its
// state.json, or an agent's journal, from the first few kilobytes.
func (Format) Detect(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	wire := path
	switch {
	case fi.IsDir():
		wire = filepath.Join(path, "agents", "main", "wire.jsonl")
	case filepath.Base(path) == "state.json":
		wire = filepath.Join(filepath.Dir(path), "agents", "main", "wire.jsonl")
	}
	return detectHead(importers.Head(wire, 8<<10))
}

// detectHead: a metadata line with created_at, or a record with a dotted
// top-level "type" and a numeric "time".
func detectHead(head []byte) bool {
	lines := strings.Split(string(head), "\n")
	if len(lines) > 1 {
		lines = lines[:len(lines)-1]
	}
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		var r struct {
			Type      string           `json:"type"`
			Version   *string          `json:"protocol_version"`
			CreatedAt *json.RawMessage `json:"created_at"`
			Time      *float64         `json:"time"`
		}
		if json.Unmarshal([]byte(l), &r) != nil {
			return false
		}
		if r.Type == "metadata" {
			return r.Version != nil && r.CreatedAt != nil
		}
		return r.Time != nil && strings.Contains(r.Type, ".")
	}
	return false
}

// Read implements importers.Format: one Session per session folder.
func (f Format) Read(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
	return importers.Collected(f.Stream(ctx, path, opt))
}

// Stream implements importers.Streamer: the session's journals are read
// once, depth-first as their sub-agents were started, for everything but
// the steps; then again as the steps are recorded, each handed over once
// settled and each sub-agent's journal read when its branch is.
func (Format) Stream(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
	dir, err := sessionDir(path)
	if err != nil {
		return nil, err
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	s, err := newReader(ctx, dir, opt).session()
	if err != nil {
		return nil, err
	}
	return []*importers.Session{s}, nil
}
