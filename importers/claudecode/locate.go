package claudecode

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Files lists what a live session grows in: the session file and its
// folder of sub-agent transcripts (importers.Watched).
func (Format) Files(path string) []string {
	return []string{path, strings.TrimSuffix(path, ".jsonl")}
}

// Newest returns the newest session file Claude Code recorded for working
// folder cwd (importers.Locator): in <root>/projects/<slug>/, where the
// roots are CLAUDE_CONFIG_DIR (comma-separated) or ~/.claude and
// ~/.config/claude, and the slug is cwd with every character other than a
// letter or digit turned into "-" (older versions turned only path
// separators, ":" and "." into "-"; both are tried).
func (Format) Newest(cwd string, getenv func(string) string) (string, error) {
	var roots []string
	if v := getenv("CLAUDE_CONFIG_DIR"); v != "" {
		for _, r := range strings.Split(v, ",") {
			if r = strings.TrimSpace(r); r != "" {
				roots = append(roots, r)
			}
		}
	} else {
		home := getenv("HOME")
		if home == "" {
			return "", fmt.Errorf("HOME is not set, so the Claude Code folder cannot be found; set CLAUDE_CONFIG_DIR or give the session file's path")
		}
		roots = []string{filepath.Join(home, ".claude"), filepath.Join(home, ".config", "claude")}
	}
	var tried []string
	var best string
	var bestTime int64
	for _, root := range roots {
		for _, slug := range slugs(cwd) {
			dir := filepath.Join(root, "projects", slug)
			tried = append(tried, dir)
			entries, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, e := range entries {
				name := e.Name()
				if !e.Type().IsRegular() || !strings.HasSuffix(name, ".jsonl") || strings.HasPrefix(name, "agent-") {
					continue
				}
				info, err := e.Info()
				if err != nil {
					continue
				}
				if t := info.ModTime().UnixNano(); best == "" || t > bestTime {
					best, bestTime = filepath.Join(dir, name), t
				}
			}
		}
	}
	if best == "" {
		return "", fmt.Errorf("no Claude Code session of %s (looked in %s); run inspect import in the folder Claude Code ran in, or give the session file's path", cwd, strings.Join(uniq(tried), ", "))
	}
	return best, nil
}

// slugs are the project folder names Claude Code gives working folder cwd.
func slugs(cwd string) []string {
	all := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, cwd)
	seps := strings.Map(func(r rune) rune {
		switch r {
		case '/', '\\', ':', '.':
			return '-'
		}
		return r
	}, cwd)
	return uniq([]string{all, seps})
}

func uniq(s []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
