package codex

import (
	"encoding/json"
	"strings"
)

// researchTools are Codex's own read-only tools (DESIGN §13; the research
// note's §3.7): they read and never change the workspace.
var researchTools = map[string]bool{
	"read_file": true, "list_dir": true, "grep_files": true, "view_image": true,
	"web_search": true, "web_search_call": true, "tool_search": true, "tool_search_call": true,
}

// shellTools are the tools whose arguments carry a shell command.
var shellTools = map[string]bool{
	"shell": true, "container.exec": true, "local_shell": true, "local_shell_call": true,
	"exec_command": true, "shell_command": true, "unified_exec": true,
}

// isResearch reports whether a Codex tool call only reads: one of Codex's
// read-only tools, a shell command every part of which only reads, or
// (for any other tool) what opt's patterns say.
func (r *reader) isResearch(name, args string) bool {
	switch {
	case researchTools[name]:
		return true
	case shellTools[name]:
		return readOnlyCommand(shellCommand(args))
	}
	return r.opt.IsResearch(name)
}

// shellCommand returns the command line of a shell tool's arguments:
// {"command": ["bash", "-lc", "rg x"]}, {"command": "rg x"}, {"cmd": "rg x"},
// or a local_shell action's command.
func shellCommand(args string) string {
	var v struct {
		Command json.RawMessage `json:"command"`
		Cmd     json.RawMessage `json:"cmd"`
	}
	if json.Unmarshal([]byte(args), &v) != nil {
		return ""
	}
	raw := v.Command
	if len(raw) == 0 {
		raw = v.Cmd
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var argv []string
	if json.Unmarshal(raw, &argv) != nil || len(argv) == 0 {
		return ""
	}
	// bash -lc SCRIPT, sh -c SCRIPT: the script is the command.
	if len(argv) >= 3 && isShell(argv[0]) && (argv[1] == "-c" || argv[1] == "-lc" || argv[1] == "-l") {
		return argv[len(argv)-1]
	}
	return strings.Join(argv, " ")
}

func isShell(p string) bool {
	switch p[strings.LastIndex(p, "/")+1:] {
	case "bash", "sh", "zsh", "dash":
		return true
	}
	return false
}

// readOnlyCommand reports whether every command of a shell line only reads
// files: cat, rg, grep, ls, find (without actions that write or run),
// sed -n (without -i), head, tail, and git log/show/diff/status, joined by
// pipes, &&, || or ;, with cd allowed between them. Redirections, command
// substitution and anything else make it not research.
func readOnlyCommand(line string) bool {
	line = strings.TrimSpace(line)
	if line == "" || strings.ContainsAny(line, "`><") || strings.Contains(line, "$(") {
		return false
	}
	read := 0
	for _, part := range splitCommands(line) {
		words := strings.Fields(part)
		if len(words) == 0 {
			continue
		}
		if words[0] == "cd" {
			continue
		}
		if !readOnlyWords(words) {
			return false
		}
		read++
	}
	return read > 0
}

// splitCommands cuts a shell line at |, ||, &&, ; and newlines (quotes are
// not parsed: a quoted separator only makes a part look odd, which makes
// the line not research, never the other way round).
func splitCommands(line string) []string {
	return strings.FieldsFunc(line, func(r rune) bool {
		return r == '|' || r == '&' || r == ';' || r == '\n'
	})
}

func readOnlyWords(w []string) bool {
	switch w[0] {
	case "cat", "rg", "grep", "ls", "head", "tail":
		return true
	case "find":
		for _, a := range w[1:] {
			switch a {
			case "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls":
				return false
			}
		}
		return true
	case "sed":
		n := false
		for _, a := range w[1:] {
			if strings.HasPrefix(a, "-i") || strings.HasPrefix(a, "--in-place") {
				return false
			}
			if a == "-n" || a == "--quiet" || a == "--silent" {
				n = true
			}
		}
		return n
	case "git":
		for i := 1; i < len(w); i++ {
			a := w[i]
			if a == "-C" || a == "-c" {
				i++ // git -C DIR, git -c KEY=VALUE
				continue
			}
			if strings.HasPrefix(a, "-") {
				continue // --no-pager
			}
			switch a {
			case "log", "show", "diff", "status":
				return true
			}
			return false
		}
	}
	return false
}
