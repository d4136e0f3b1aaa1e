// Package kimicli imports sessions of the Python Kimi CLI (format
// "kimi-cli", DESIGN §13): a session folder of ~/.kimi/sessions with its
// wire.jsonl event journal, state.json (the title) and subagents/<id>/
// (each foreground or background sub-agent's own wire.jsonl, meta.json,
// prompt.txt and output), plus tasks/<id>/ for background agents. Each
// step of the journal is one llm node; Agent (Task before Kimi CLI 1.25)
// calls of one step are one fork with a branch per sub-agent; the working
// folder comes from ~/.kimi/kimi.json and its AGENTS.md files are the
// project snapshot. It only parses: importers.Write records the Session.
package kimicli

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/internal/kimi"
)

// Name is the format's name.
const Name = "kimi-cli"

// Format is the kimi-cli importer.
type Format struct{}

var (
	_ importers.Format   = Format{}
	_ importers.Streamer = Format{}
	_ importers.Locator  = Format{}
	_ importers.Watched  = Format{}
)

// Name implements importers.Format.
func (Format) Name() string { return Name }

// research are Kimi CLI's read-only tools (DESIGN §13).
var research = map[string]bool{
	"ReadFile": true, "ReadMediaFile": true, "Grep": true, "Glob": true, "SearchWeb": true, "FetchURL": true,
}

// IsResearch reports whether a Kimi CLI tool only reads: the format's own
// list, else the options' patterns.
func IsResearch(opt importers.Options, tool string) bool {
	return research[tool] || opt.IsResearch(tool)
}

func isDelegation(name string) bool { return name == kimi.ToolAgent || name == kimi.ToolTask }

// ShareDir is Kimi CLI's data folder: $KIMI_SHARE_DIR, else ~/.kimi
// (variables read through getenv).
func ShareDir(getenv func(string) string) (string, error) {
	return importers.ToolHome(getenv, "KIMI_SHARE_DIR", ".kimi", "Kimi CLI's", "the session folder's")
}

// Newest returns the folder of the newest Kimi CLI session of the working
// folder cwd (importers.Locator): the one under
// <share>/sessions/<md5(cwd)>/ whose wire.jsonl changed last (Kimi CLI
// keys a folder's sessions by the MD5 of its absolute path).
func (Format) Newest(cwd string, getenv func(string) string) (string, error) {
	share, err := ShareDir(getenv)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return "", err
	}
	sessions := filepath.Join(share, "sessions")
	bucket := filepath.Join(sessions, WorkDirKey(abs))
	if d := kimi.Newest(kimi.Sessions(bucket), "wire.jsonl"); d != "" {
		return d, nil
	}
	return "", fmt.Errorf("no Kimi CLI session of %s in %s; give the session folder's path, or set KIMI_SHARE_DIR when Kimi CLI keeps its data elsewhere", abs, bucket)
}

// Files lists what a live session grows in: its folder, walked
// (importers.Watched).
func (Format) Files(path string) []string {
	if dir, err := sessionDir(path); err == nil {
		return []string{dir}
	}
	return []string{path}
}

// WorkDirKey is the name of the folder that holds the sessions of the
// working folder dir (absolute, cleaned): the hex MD5 of its path.
func WorkDirKey(dir string) string {
	sum := md5.Sum([]byte(filepath.Clean(dir)))
	return hex.EncodeToString(sum[:])
}

// sessionDir resolves what the user named: a session folder, or a file in
// it (wire.jsonl, context.jsonl, state.json).
func sessionDir(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, errors.Unwrap(err))
	}
	dir := path
	if !fi.IsDir() {
		dir = filepath.Dir(path)
	}
	if !importers.IsFileIn(dir, filepath.Join(dir, "wire.jsonl")) {
		return "", fmt.Errorf("%s has no wire.jsonl: a Kimi CLI session folder holds wire.jsonl (the event journal this importer reads) next to context.jsonl", dir)
	}
	return dir, nil
}

// Detect reports whether path is a Kimi CLI session folder or one of its
// journal files, from the first few kilobytes of wire.jsonl.
func (Format) Detect(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	wire := path
	if fi.IsDir() {
		wire = filepath.Join(path, "wire.jsonl")
	} else if base := filepath.Base(path); base == "context.jsonl" || base == "state.json" {
		wire = filepath.Join(filepath.Dir(path), "wire.jsonl")
	}
	return detectHead(importers.Head(wire, 8<<10))
}

// detectHead: a record {"timestamp": <number>, "message": {"type": …}} in
// the head, or a metadata line alone without Kimi Code's created_at.
func detectHead(head []byte) bool {
	lines := strings.Split(string(head), "\n")
	if len(lines) > 1 {
		lines = lines[:len(lines)-1] // the last may be cut by the head's end
	}
	meta := false
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		var r struct {
			Type      string           `json:"type"`
			Version   *string          `json:"protocol_version"`
			CreatedAt *json.RawMessage `json:"created_at"`
			Timestamp *float64         `json:"timestamp"`
			Message   *struct {
				Type string `json:"type"`
			} `json:"message"`
		}
		if json.Unmarshal([]byte(l), &r) != nil {
			return false
		}
		if r.Type == "metadata" && r.Version != nil {
			if r.CreatedAt != nil {
				return false // Kimi Code's journal header
			}
			meta = true
			continue
		}
		return r.Timestamp != nil && r.Message != nil && r.Message.Type != ""
	}
	return meta
}

// Read implements importers.Format: one Session per session folder.
func (f Format) Read(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
	return importers.Collected(f.Stream(ctx, path, opt))
}

// Stream implements importers.Streamer: the session's journal is read once
// for its Agent calls, then again as its steps are recorded, each handed
// over once settled and each sub-agent's journal read when its branch is.
func (Format) Stream(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
	dir, err := sessionDir(path)
	if err != nil {
		return nil, err
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	s, err := newReader(ctx, dir, opt).stream()
	if err != nil {
		return nil, err
	}
	return []*importers.Session{s}, nil
}
