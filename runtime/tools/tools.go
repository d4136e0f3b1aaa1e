// Package tools runs the tools an agent calls: the built-in file tools,
// confined to the project's workspace, and command tools, run as programs in
// the project folder. A failure is an *Error whose text goes back to the
// model as the tool result; nothing here ends a run.
package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/runtime/project"
)

// Error is a tool failure; its message is what the model reads.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func errorf(format string, args ...any) error { return &Error{Msg: fmt.Sprintf(format, args...)} }

// MaxResults caps list_dir and find_files output.
const MaxResults = 500

// maxRead caps one read_file result.
const maxRead = 256 << 10

// Workspace runs the built-in tools inside one folder. Paths are relative to
// it; `..`, absolute paths and symlinks that lead out are refused.
type Workspace struct {
	Dir string // absolute path of the workspace folder
}

// Call runs built-in tool name with its JSON arguments.
func (w *Workspace) Call(ctx context.Context, name, args string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(w.Dir)
	if err != nil {
		return "", errorf("the workspace folder %s cannot be opened (%v); create it", w.Dir, errors.Unwrap(err))
	}
	defer root.Close()
	switch name {
	case project.ToolListDir:
		var a struct {
			Path string `json:"path"`
		}
		if err := decode(args, &a); err != nil {
			return "", err
		}
		return listDir(root, a.Path)
	case project.ToolFindFiles:
		var a struct {
			Pattern string `json:"pattern"`
			Path    string `json:"path"`
		}
		if err := decode(args, &a); err != nil {
			return "", err
		}
		return findFiles(root, a.Pattern, a.Path)
	case project.ToolReadFile:
		var a struct {
			Path      string `json:"path"`
			StartLine int    `json:"start_line"`
			EndLine   int    `json:"end_line"`
		}
		if err := decode(args, &a); err != nil {
			return "", err
		}
		return readFile(root, a.Path, a.StartLine, a.EndLine)
	case project.ToolWriteFile:
		var a struct {
			Path    string  `json:"path"`
			Content *string `json:"content"`
		}
		if err := decode(args, &a); err != nil {
			return "", err
		}
		if a.Content == nil {
			return "", errorf("write_file needs `content`")
		}
		return writeFile(root, a.Path, *a.Content)
	}
	return "", errorf("%q is not a built-in tool", name)
}

func decode(args string, v any) error {
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	if err := json.Unmarshal([]byte(args), v); err != nil {
		return errorf("the arguments are not the JSON object this tool takes (%v); send e.g. {\"path\": \"notes.md\"}", err)
	}
	return nil
}

// clean checks a model-supplied path and returns it relative to the root.
func clean(p string, allowRoot bool) (string, error) {
	if p == "" || p == "." || p == "/" {
		if allowRoot {
			return ".", nil
		}
		return "", errorf("a path is required, relative to the workspace (e.g. notes/a.md)")
	}
	if strings.ContainsRune(p, 0) {
		return "", errorf("path %q holds a NUL byte", p)
	}
	if path.IsAbs(p) || filepath.IsAbs(p) || filepath.VolumeName(p) != "" {
		return "", errorf("containment: %q is an absolute path; tools only see the workspace, so give a path relative to it", p)
	}
	c := path.Clean(filepath.ToSlash(p))
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", errorf("containment: %q leaves the workspace; give a path inside it", p)
	}
	return c, nil
}

// wrap maps an os.Root error to a message for the model.
func wrap(p string, err error) error {
	switch {
	case err == nil:
		return nil
	case strings.Contains(err.Error(), "escapes from parent"), strings.Contains(err.Error(), "path escapes"):
		return errorf("containment: %q resolves through a symlink that leaves the workspace; it cannot be used", p)
	case errors.Is(err, fs.ErrNotExist):
		return errorf("%q does not exist; use list_dir or find_files to see what is there", p)
	case errors.Is(err, fs.ErrPermission):
		return errorf("%q is not accessible (permission denied)", p)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return errorf("%s %q: %v", pe.Op, p, pe.Err)
	}
	return errorf("%q: %v", p, err)
}

func listDir(root *os.Root, p string) (string, error) {
	c, err := clean(p, true)
	if err != nil {
		return "", err
	}
	f, err := root.Open(c)
	if err != nil {
		return "", wrap(p, err)
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return "", wrap(p, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	var b strings.Builder
	for i, e := range entries {
		if i == MaxResults {
			fmt.Fprintf(&b, "… %d more entries; use find_files to narrow down\n", len(entries)-MaxResults)
			break
		}
		switch {
		case e.IsDir():
			fmt.Fprintf(&b, "%s/\n", e.Name())
		case e.Type()&fs.ModeSymlink != 0:
			fmt.Fprintf(&b, "%s (symlink)\n", e.Name())
		default:
			size := int64(0)
			if info, err := e.Info(); err == nil {
				size = info.Size()
			}
			fmt.Fprintf(&b, "%s (%d bytes)\n", e.Name(), size)
		}
	}
	if b.Len() == 0 {
		return "(empty folder)", nil
	}
	return b.String(), nil
}

func findFiles(root *os.Root, pattern, p string) (string, error) {
	if pattern == "" {
		return "", errorf("find_files needs `pattern`: a plain substring of the path, such as \"eu\" or \".md\" (no globs)")
	}
	c, err := clean(p, true)
	if err != nil {
		return "", err
	}
	if _, err := root.Stat(c); err != nil {
		return "", wrap(p, err)
	}
	needle := strings.ToLower(pattern)
	var out []string
	more := 0
	err = fs.WalkDir(root.FS(), c, func(fp string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are skipped
		}
		if d.IsDir() || !strings.Contains(strings.ToLower(fp), needle) {
			return nil
		}
		if len(out) == MaxResults {
			more++
			return nil
		}
		out = append(out, fp)
		return nil
	})
	if err != nil {
		return "", wrap(p, err)
	}
	if len(out) == 0 {
		return fmt.Sprintf("no file path contains %q", pattern), nil
	}
	s := strings.Join(out, "\n") + "\n"
	if more > 0 {
		s += fmt.Sprintf("… %d more; narrow the pattern\n", more)
	}
	return s, nil
}

func readFile(root *os.Root, p string, start, end int) (string, error) {
	c, err := clean(p, false)
	if err != nil {
		return "", err
	}
	info, err := root.Stat(c)
	if err != nil {
		return "", wrap(p, err)
	}
	if info.IsDir() {
		return "", errorf("%q is a folder; use list_dir", p)
	}
	if start < 0 || end < 0 || (end > 0 && start > end) {
		return "", errorf("line range %d–%d is not valid; lines count from 1 and start_line ≤ end_line", start, end)
	}
	f, err := root.Open(c)
	if err != nil {
		return "", wrap(p, err)
	}
	defer f.Close()
	if start == 0 && end == 0 {
		var b bytes.Buffer
		n, err := b.ReadFrom(io.LimitReader(f, maxRead+1))
		if err != nil {
			return "", wrap(p, err)
		}
		if n > maxRead {
			return b.String()[:maxRead] + fmt.Sprintf("\n… truncated at %d bytes; read the rest with start_line/end_line", maxRead), nil
		}
		return b.String(), nil
	}
	if start == 0 {
		start = 1
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxRead)
	var b strings.Builder
	line := 0
	for sc.Scan() {
		line++
		if line < start {
			continue
		}
		if end > 0 && line > end {
			break
		}
		b.WriteString(sc.Text())
		b.WriteByte('\n')
		if b.Len() > maxRead {
			b.WriteString("… truncated; ask for a smaller range\n")
			break
		}
	}
	if line < start {
		return "", errorf("%q has %d lines; start_line %d is past the end", p, line, start)
	}
	return b.String(), nil
}

func writeFile(root *os.Root, p, content string) (string, error) {
	c, err := clean(p, false)
	if err != nil {
		return "", err
	}
	if dir := path.Dir(c); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return "", wrap(p, err)
		}
	}
	f, err := root.OpenFile(c, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return "", wrap(p, err)
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return "", wrap(p, err)
	}
	if err := f.Close(); err != nil {
		return "", wrap(p, err)
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(content), c), nil
}

// RunCommand runs command tool t in the project folder dir: args go to stdin
// as JSON, stdout is the result. A non-zero exit, a timeout or unusable
// arguments are an *Error. OPENAI_API_KEY is removed from its environment.
func RunCommand(ctx context.Context, dir string, t *project.CommandTool, args string) (string, error) {
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	if !json.Valid([]byte(args)) {
		return "", errorf("the arguments are not valid JSON; send a JSON object matching the tool's parameters")
	}
	// The program is looked up from inside dir (cmd.Dir), so both must be
	// absolute: a relative dir would be applied twice (tp/tp/tools/x.sh).
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	ctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	prog := t.Command[0]
	if !filepath.IsAbs(prog) && strings.ContainsRune(prog, '/') {
		prog = filepath.Join(dir, prog)
	}
	cmd := exec.CommandContext(ctx, prog, t.Command[1:]...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(args)
	cmd.WaitDelay = time.Second
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_API_KEY=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return "", errorf("%s timed out after %s", t.Name, t.Timeout)
	case err != nil:
		var ee *exec.ExitError
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = msg[:2000] + "…"
		}
		if errors.As(err, &ee) {
			if msg == "" {
				msg = strings.TrimSpace(stdout.String())
			}
			return "", errorf("%s exited with status %d: %s", t.Name, ee.ExitCode(), msg)
		}
		return "", errorf("%s could not run: %v", t.Name, err)
	}
	out := stdout.String()
	if out == "" {
		out = "(no output)"
	}
	return out, nil
}
