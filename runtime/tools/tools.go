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
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/inspect-dev/inspect/internal/regfile"
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
		return listDir(ctx, root, a.Path)
	case project.ToolFindFiles:
		var a struct {
			Pattern string `json:"pattern"`
			Path    string `json:"path"`
		}
		if err := decode(args, &a); err != nil {
			return "", err
		}
		return findFiles(ctx, root, a.Pattern, a.Path)
	case project.ToolReadFile:
		var a struct {
			Path      string `json:"path"`
			StartLine int    `json:"start_line"`
			EndLine   int    `json:"end_line"`
		}
		if err := decode(args, &a); err != nil {
			return "", err
		}
		return readFile(ctx, root, a.Path, a.StartLine, a.EndLine)
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
		return writeFile(ctx, root, a.Path, *a.Content)
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

func listDir(ctx context.Context, root *os.Root, p string) (string, error) {
	c, err := clean(p, true)
	if err != nil {
		return "", err
	}
	f, err := openChecked(root, p, c, os.O_RDONLY, 0, true)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := ctx.Err(); err != nil {
		return "", err
	}
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

func findFiles(ctx context.Context, root *os.Root, pattern, p string) (string, error) {
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
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
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
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
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

func readFile(ctx context.Context, root *os.Root, p string, start, end int) (string, error) {
	c, err := clean(p, false)
	if err != nil {
		return "", err
	}
	if start < 0 || end < 0 || (end > 0 && start > end) {
		return "", errorf("line range %d–%d is not valid; lines count from 1 and start_line ≤ end_line", start, end)
	}
	f, err := openChecked(root, p, c, os.O_RDONLY, 0, false)
	if err != nil {
		return "", err
	}
	defer f.Close()
	r := &ctxReader{ctx: ctx, r: f}
	if start == 0 && end == 0 {
		var b bytes.Buffer
		n, err := b.ReadFrom(io.LimitReader(r, maxRead+1))
		if err != nil {
			return "", readErr(ctx, p, err)
		}
		if n > maxRead {
			return b.String()[:maxRead] + fmt.Sprintf("\n… truncated at %d bytes; read the rest with start_line/end_line", maxRead), nil
		}
		return b.String(), nil
	}
	if start == 0 {
		start = 1
	}
	// Lines of any length: ReadSlice hands a long line over in pieces, so
	// a line past the buffer neither stops the count nor fills memory.
	br := bufio.NewReaderSize(r, 64<<10)
	var b strings.Builder
	line, cut := 0, false
	for {
		piece, err := br.ReadSlice('\n')
		if len(piece) > 0 {
			if line+1 >= start && (end == 0 || line+1 <= end) && !cut {
				if room := maxRead - b.Len(); len(piece) > room {
					b.Write(piece[:room])
					cut = true
				} else {
					b.Write(piece)
				}
			}
			if piece[len(piece)-1] == '\n' {
				line++
			}
		}
		if cut {
			break // nothing more will be kept
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			if len(piece) > 0 && piece[len(piece)-1] != '\n' {
				line++ // a last line without a newline
				if line >= start && (end == 0 || line <= end) && !cut {
					b.WriteByte('\n')
				}
			}
			break
		}
		if err != nil {
			return "", readErr(ctx, p, err)
		}
		if end > 0 && line >= end {
			break
		}
	}
	if line < start {
		return "", errorf("%q has %d lines; start_line %d is past the end", p, line, start)
	}
	if cut {
		if !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "… truncated at %d bytes; ask for a smaller range\n", maxRead)
	}
	return b.String(), nil
}

// openChecked opens c without blocking (a FIFO would wait for a writer
// for ever) and refuses what is not a regular file — or, with dir, a
// folder: FIFOs, sockets and devices are never read or written.
func openChecked(root *os.Root, p, c string, flag int, perm os.FileMode, dir bool) (*os.File, error) {
	f, err := root.OpenFile(c, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		if errors.Is(err, syscall.ENXIO) {
			return nil, errorf("%q is not a regular file (a FIFO or a device); tools only read and write regular files", p)
		}
		return nil, wrap(p, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, wrap(p, err)
	}
	switch {
	case dir && info.IsDir(), !dir && info.Mode().IsRegular():
		return f, nil
	case !dir && info.IsDir():
		f.Close()
		return nil, errorf("%q is a folder; use list_dir", p)
	case dir && info.Mode().IsRegular():
		f.Close()
		return nil, errorf("%q is a file, not a folder; use read_file", p)
	}
	f.Close()
	return nil, errorf("%q is not a regular file or folder (%s); tools only read and write regular files", p, regfile.Kind(info.Mode()))
}

// ctxReader stops reading when ctx is done, so a huge file honours Ctrl-C.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func readErr(ctx context.Context, p string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return wrap(p, err)
}

func writeFile(ctx context.Context, root *os.Root, p, content string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	c, err := clean(p, false)
	if err != nil {
		return "", err
	}
	if dir := path.Dir(c); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return "", wrap(p, err)
		}
	}
	f, err := openChecked(root, p, c, os.O_WRONLY|os.O_CREATE, 0o644, false)
	if err != nil {
		return "", err
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
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
// arguments are an *Error. The program runs in its own process group, which
// is killed when it exits, times out or ctx is cancelled, so a background
// grandchild cannot outlive the call. Its environment is this process's
// without the variables whose names mark secrets (SecretEnv), unless t.Env
// names them. Stdout and stderr are read bounded: past t.MaxResult bytes
// (DefaultMaxResult when 0) they are counted, not kept, and the result says
// how much was cut.
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
	limit := t.MaxResult
	if limit <= 0 {
		limit = DefaultMaxResult
	}
	ctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	prog := t.Command[0]
	if !filepath.IsAbs(prog) && strings.ContainsRune(prog, '/') {
		prog = filepath.Join(dir, prog)
	}
	cmd := exec.CommandContext(ctx, prog, t.Command[1:]...)
	cmd.Dir = dir
	cmd.Env = Environ(os.Environ(), t.Env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd) }

	// Our own pipes (files, not writers): Wait then returns when the
	// program exits, whoever still holds them, and we kill the group.
	stdin, err := newInput(args)
	if err != nil {
		return "", errorf("%s could not run: %v", t.Name, err)
	}
	defer stdin.close()
	stdout, err := newOutput(limit)
	if err != nil {
		return "", errorf("%s could not run: %v", t.Name, err)
	}
	stderr, err := newOutput(limit)
	if err != nil {
		stdout.abort()
		return "", errorf("%s could not run: %v", t.Name, err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin.child, stdout.child, stderr.child
	err = cmd.Start()
	stdin.started()
	stdout.started()
	stderr.started()
	if err != nil {
		stop := time.Now().Add(afterExit)
		stdout.wait(stop)
		stderr.wait(stop)
		return "", errorf("%s could not run: %v", t.Name, err)
	}
	err = cmd.Wait()
	killGroup(cmd) // grandchildren go with it
	// A grandchild that left the group (setsid, a daemon) may hold the
	// pipes open for ever: what the program wrote before it ended is read
	// within afterExit, and reading stops there.
	stop := time.Now().Add(afterExit)
	out, errText := stdout.wait(stop), stderr.wait(stop)
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return "", errorf("%s timed out after %s", t.Name, t.Timeout)
	case ctx.Err() != nil:
		return "", ctx.Err()
	case err != nil:
		var ee *exec.ExitError
		msg := strings.TrimSpace(errText)
		if errors.As(err, &ee) {
			if msg == "" {
				msg = strings.TrimSpace(out)
			}
			return "", errorf("%s exited with status %d: %s", t.Name, ee.ExitCode(), Truncate(msg, int64(len(msg)), maxErrorText))
		}
		return "", errorf("%s could not run: %v", t.Name, err)
	}
	if out == "" {
		out = "(no output)"
	}
	return out, nil
}

// DefaultMaxResult caps a tool result, built-in or command, unless a
// command tool sets maxResult in agents.yaml. The error text of a failed
// command is capped at maxErrorText.
const (
	DefaultMaxResult = 256 << 10
	maxErrorText     = 2000
)

// Truncate cuts s to at most max bytes (at a UTF-8 boundary) and says how
// much was cut; total is the full size when more was seen than s holds.
// Anything within max comes back unchanged.
func Truncate(s string, total int64, max int) string {
	if total < int64(len(s)) {
		total = int64(len(s))
	}
	if total <= int64(max) {
		return s
	}
	keep := s
	if len(keep) > max {
		n := max
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		keep = s[:n]
	}
	return fmt.Sprintf("%s\n… [truncated: %d of %d bytes cut; the first %d kept. Ask for less, or raise maxResult for this tool in agents.yaml]", keep, total-int64(len(keep)), total, len(keep))
}

// SecretEnv reports whether an environment variable's name marks a secret:
// *_KEY, *_TOKEN, *_SECRET or anything with PASSWORD (any case).
func SecretEnv(name string) bool {
	n := strings.ToUpper(name)
	return strings.HasSuffix(n, "_KEY") || strings.HasSuffix(n, "_TOKEN") || strings.HasSuffix(n, "_SECRET") || strings.Contains(n, "PASSWORD")
}

// Environ is env ("NAME=value" pairs) without the secret-looking variables
// (SecretEnv), except those named in allow.
func Environ(env, allow []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if SecretEnv(name) && !slices.Contains(allow, name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// killGroup kills the process group a command leads.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// input feeds a command's stdin through a pipe of our own.
type input struct {
	child, w *os.File
	data     string
}

func newInput(data string) (*input, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &input{child: r, w: w, data: data}, nil
}

// started closes the child's end in this process and writes the data.
func (in *input) started() {
	in.child.Close()
	go func() {
		io.WriteString(in.w, in.data) // EPIPE when the program does not read: fine
		in.w.Close()
	}()
}

func (in *input) close() { in.w.Close() }

// output collects a command's stdout or stderr through a pipe of our own,
// keeping the first limit bytes and counting the rest.
type output struct {
	child, r *os.File
	limit    int
	buf      bytes.Buffer
	total    int64
	done     chan struct{}
}

func newOutput(limit int) (*output, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &output{child: w, r: r, limit: limit, done: make(chan struct{})}, nil
}

// started closes the child's end in this process and starts reading.
func (o *output) started() {
	o.child.Close()
	go func() {
		defer close(o.done)
		chunk := make([]byte, 32<<10)
		for {
			n, err := o.r.Read(chunk)
			o.total += int64(n)
			if room := o.limit - o.buf.Len(); room > 0 {
				o.buf.Write(chunk[:min(n, room)])
			}
			if err != nil {
				return
			}
		}
	}()
}

// afterExit is how long a command's output is still read once its
// process group is dead, for a writer outside the group to close it.
const afterExit = time.Second

// wait returns what was read, truncated with a note, once every writer
// has closed the pipe — or, at the latest, at stop (the
// process group is dead by then: a writer still holding the pipe left
// the group, and what it writes is no part of the result). Closing the
// read end ends the reading goroutine's Read (the pipe is non-blocking,
// in Go's poller).
func (o *output) wait(stop time.Time) string {
	t := time.NewTimer(time.Until(stop))
	defer t.Stop()
	select {
	case <-o.done:
	case <-t.C:
		o.r.Close()
		<-o.done
	}
	o.r.Close()
	return Truncate(o.buf.String(), o.total, o.limit)
}

func (o *output) abort() {
	o.child.Close()
	o.r.Close()
}
