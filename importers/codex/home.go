package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/importers"
)

// minuteSkew is how much earlier than its spawn call a child's own start
// may be and still be taken for that call's child (clocks of write times).
const minuteSkew = time.Minute

var datePart = regexp.MustCompile(`^\d{4}$|^\d{2}$`)

// sessionsRoot returns the folder a rollout's sub-agents are looked for
// in: the sessions folder above YYYY/MM/DD, else the rollout's own folder.
func sessionsRoot(path string) string {
	dir := filepath.Dir(path)
	d, m, y := filepath.Base(dir), filepath.Base(filepath.Dir(dir)), filepath.Base(filepath.Dir(filepath.Dir(dir)))
	if len(y) == 4 && datePart.MatchString(y) && len(m) == 2 && datePart.MatchString(m) && len(d) == 2 && datePart.MatchString(d) {
		return filepath.Dir(filepath.Dir(filepath.Dir(dir)))
	}
	return dir
}

// dateDir returns "YYYY/MM/DD" of a rollout in a date tree, else "".
func dateDir(path string) string {
	root := sessionsRoot(path)
	rel, err := filepath.Rel(root, filepath.Dir(path))
	if err != nil || rel == "." {
		return ""
	}
	return filepath.ToSlash(rel)
}

// childFile is a rollout that names a parent thread.
type childFile struct {
	path string
	meta *meta
}

// index maps parent thread ids to the rollouts of their sub-agents: each
// rollout in the sessions tree dated on or after the parent's day is read
// up to its first line, once per import.
type index struct {
	root     string
	from     string // the parent's YYYY/MM/DD: earlier days hold no child
	built    bool
	children map[string][]*childFile
}

func (x *index) build(ctx context.Context) error {
	if x.built {
		return nil
	}
	x.built = true
	x.children = map[string][]*childFile{}
	roots := []string{x.root}
	if filepath.Base(x.root) == "sessions" {
		roots = append(roots, filepath.Join(filepath.Dir(x.root), "archived_sessions"))
	}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				if p == root {
					return filepath.SkipDir
				}
				return nil
			}
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if d.IsDir() {
				if rel, rerr := filepath.Rel(root, p); rerr == nil && x.from != "" && rel != "." && root == x.root {
					rel = filepath.ToSlash(rel)
					// Skip days before the parent's: a prefix of its date that sorts lower.
					if n := len(rel); n <= len(x.from) && rel < x.from[:n] {
						return filepath.SkipDir
					}
				}
				return nil
			}
			if !strings.HasPrefix(d.Name(), "rollout-") || !strings.HasSuffix(d.Name(), ".jsonl") {
				return nil
			}
			if !d.Type().IsRegular() {
				return nil // a symlink is not followed out of the sessions' tree, a FIFO never read
			}
			m, err := firstMeta(p)
			if err != nil || m == nil {
				return nil
			}
			if parent := m.parent(); parent != "" {
				x.children[parent] = append(x.children[parent], &childFile{path: p, meta: m})
			}
			return nil
		})
		if err != nil && !errors.Is(err, filepath.SkipDir) {
			return err
		}
	}
	for _, cs := range x.children {
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].meta.parsedAt.Before(cs[j].meta.parsedAt) })
	}
	return nil
}

// firstMeta reads a rollout's first line as its session_meta, or nil.
func firstMeta(path string) (*meta, error) {
	f, err := importers.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, _, _, err := importers.NewLineReader(f).Next()
	if err != nil {
		return nil, err
	}
	var l line
	if json.Unmarshal(raw, &l) != nil || l.Type != "session_meta" {
		return nil, nil
	}
	var m meta
	if json.Unmarshal(l.Payload, &m) != nil || m.ID == "" {
		return nil, nil
	}
	m.readSource()
	m.parsedAt, _ = time.Parse(time.RFC3339Nano, m.Timestamp)
	// The index keeps a meta per rollout in the tree: only what finds a
	// child (readThread reads the child's own).
	m.BaseInstructions, m.Source, m.MultiAgentVersion = nil, nil, nil
	return &m, nil
}

// Home returns the Codex home, reading the environment through getenv:
// $CODEX_HOME, else $HOME/.codex.
func Home(getenv func(string) string) (string, error) {
	return importers.ToolHome(getenv, "CODEX_HOME", ".codex", "Codex's", "the rollout's")
}

// Files lists what a live session grows in (importers.Watched): the
// rollout and the sessions tree it is in (the folder above YYYY/MM/DD,
// else its own folder), walked, since its sub-agents write rollouts of
// their own there, in the folder of the day they start.
func (Format) Files(path string) []string {
	return []string{path, sessionsRoot(path)}
}

// Newest returns the newest rollout of a session that ran in cwd (not a
// sub-agent's) under the Codex home's sessions folder (importers.Locator).
func (Format) Newest(cwd string, getenv func(string) string) (string, error) {
	home, err := Home(getenv)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(home, "sessions")
	want := abs
	var found string
	errFound := errors.New("found")
	err = walkNewestFirst(dir, func(p string) error {
		m, err := firstMeta(p)
		if err != nil || m == nil || m.parent() != "" || m.internal != "" {
			return nil
		}
		if m.Cwd != "" && filepath.Clean(m.Cwd) == want {
			found = p
			return errFound
		}
		return nil
	})
	if found != "" {
		return found, nil
	}
	if err != nil && !errors.Is(err, errFound) {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("no Codex sessions folder at %s; set CODEX_HOME or give the rollout's path", dir)
		}
		return "", err
	}
	return "", fmt.Errorf("no Codex session of %s in %s; give the rollout's path", want, dir)
}

// walkNewestFirst calls fn for each rollout file under dir, newest first
// (folders and names sort by date and time).
func walkNewestFirst(dir string, fn func(string) error) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() > entries[j].Name() })
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			if err := walkNewestFirst(p, fn); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			continue
		}
		if strings.HasPrefix(e.Name(), "rollout-") && strings.HasSuffix(e.Name(), ".jsonl") {
			if err := fn(p); err != nil {
				return err
			}
		}
	}
	return nil
}
