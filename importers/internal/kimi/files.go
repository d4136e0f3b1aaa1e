// Package kimi holds what the two Kimi importers (importers/kimicli for the
// Python Kimi CLI, importers/kimicode for the TypeScript Kimi Code CLI)
// share beyond the event builder both drive (importers/internal/events):
// the parsing of the Agent/AgentSwarm calls' arguments and results,
// sub-agent statuses, the journals of a session's folder and what an import
// reports of them, and the newest-session lookup. It knows the events, not
// the files that hold them.
package kimi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
)

// Log collects what an import skipped or could not read into a Report,
// and opens the journals of the session's folder.
type Log struct {
	Report *importers.Report
	Opt    importers.Options
	// Dir is the session's own folder: its journals are read through it
	// (importers.OpenIn), so a symlink out of it is not followed.
	Dir string
}

// NewLog returns a Log writing into rep, reading the journals of session
// folder dir.
func NewLog(rep *importers.Report, opt importers.Options, dir string) *Log {
	return &Log{Report: rep, Opt: opt, Dir: dir}
}

// Malformed reports a line that could not be read; under Options.Strict it
// is the error that fails the import.
func (l *Log) Malformed(file string, line int, why string) error {
	return l.Report.Problem(l.Opt, file, line, errors.New(why))
}

// Note reports something missing or cut short that never fails an import
// (a live session's unfinished last line, a sub-agent file that is gone).
func (l *Log) Note(file string, line int, why string) {
	l.Report.Problems = append(l.Report.Problems, importers.Problem{File: file, Line: line, Err: why})
}

// Skip counts one record of a type (or shape) the import does not know.
func (l *Log) Skip(kind string) { l.Report.Skip(kind) }

// Seconds converts Kimi CLI's float epoch seconds to a time (zero for 0 or
// an impossible value).
func Seconds(s float64) time.Time {
	if s <= 0 || s > 1e11 || s != s {
		return time.Time{}
	}
	sec := int64(s)
	return time.Unix(sec, int64((s-float64(sec))*1e9)).UTC().Round(time.Microsecond)
}

// Millis converts Kimi Code's epoch milliseconds to a time (zero for 0 or
// an impossible value).
func Millis(ms float64) time.Time {
	if ms <= 0 || ms > 1e14 || ms != ms {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms)).UTC()
}

// Usage normalises Kimi's token counts (input_other excludes the cache reads
// and the cache creation) to DESIGN §6: In counts every input token.
func Usage(inputOther, output, cacheRead, cacheCreation int64) record.Usage {
	clamp := func(n int64) int64 { v, _ := record.ClampTokens(n); return v }
	inputOther, output, cacheRead, cacheCreation = clamp(inputOther), clamp(output), clamp(cacheRead), clamp(cacheCreation)
	return record.Usage{
		In:                 inputOther + cacheRead + cacheCreation,
		Out:                output,
		Cached:             cacheRead,
		CachedReported:     true,
		CacheWrite:         cacheCreation,
		CacheWriteReported: true,
	}
}

// maxJSON bounds a small JSON file (state.json, meta.json, kimi.json).
const maxJSON = 4 << 20

// ReadJSON decodes the small JSON file at path (of at most 4 MiB, a
// regular file: importers.ReadSmall) into v; a missing file is
// (false, nil).
func ReadJSON(path string, v any) (bool, error) {
	b, err := importers.ReadSmall(path, maxJSON)
	return decodeJSON(path, b, err, v)
}

// ReadJSONIn is ReadJSON of a file in folder dir (the session's own),
// read through it (importers.ReadSmallIn): a symlink out of it is not
// followed.
func ReadJSONIn(dir, path string, v any) (bool, error) {
	b, err := importers.ReadSmallIn(dir, path, maxJSON)
	return decodeJSON(path, b, err, v)
}

func decodeJSON(path string, b []byte, err error, v any) (bool, error) {
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("%s: %v", path, err)
	}
	return true, nil
}

// IsDir reports whether path is a directory.
func IsDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// Sessions lists the session folders in bucket (a folder of them).
func Sessions(bucket string) []string {
	entries, err := os.ReadDir(bucket)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(bucket, e.Name()))
		}
	}
	return out
}

// Newest returns the session folder of dirs whose marker file (relative
// to the session folder) changed last, or "" when none has one.
func Newest(dirs []string, marker string) string {
	var best string
	var bestAt time.Time
	for _, dir := range dirs {
		fi, err := os.Stat(filepath.Join(dir, marker))
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if best == "" || fi.ModTime().After(bestAt) || fi.ModTime().Equal(bestAt) && dir > best {
			best, bestAt = dir, fi.ModTime()
		}
	}
	return best
}

// ContentText is the text of a string or of a list of content parts
// ({"type": "text", "text": …}; other parts are left out).
func ContentText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == 'n' {
		return ""
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var sb strings.Builder
	for _, p := range parts {
		if p.Type == "text" && p.Text != "" {
			if sb.Len() > 0 {
				sb.WriteString("\n")
			}
			sb.WriteString(p.Text)
		}
	}
	return sb.String()
}

// SafeID reports whether an id read from a journal can name a folder.
func SafeID(id string) bool {
	return id != "" && id != "." && id != ".." && !strings.ContainsAny(id, `/\`) && len(id) < 256
}

// FirstOf returns the first non-empty string.
func FirstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// ShortErr is an error's text cut to one readable line.
func ShortErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// Window limits a sub-agent's journal to the turns one call ran when
// several calls resumed the same sub-agent: turns starting in [From, To).
type Window struct{ From, To time.Time }

// Zero reports whether the window holds everything.
func (w Window) Zero() bool { return w.From.IsZero() && w.To.IsZero() }

// Holds reports whether a turn starting at at is in the window.
func (w Window) Holds(at time.Time) bool {
	return (w.From.IsZero() || !at.Before(w.From)) && (w.To.IsZero() || at.Before(w.To))
}

// Claim is the window of the i-th of the calls (at their times, in order)
// that ran one sub-agent: from its call, less a second of clock slack, to
// the next call's. A sub-agent one call ran gets the whole journal.
func Claim(calls []time.Time, i int) Window {
	if len(calls) < 2 {
		return Window{}
	}
	w := Window{From: calls[i].Add(-time.Second)}
	if i+1 < len(calls) {
		w.To = calls[i+1].Add(-time.Second)
	}
	return w
}

// JoinAt is when a fork's last branch came back, or zero while one is
// still out.
func JoinAt(f *importers.Fork) time.Time {
	var at time.Time
	for _, b := range f.Branches {
		if b.Conv == nil || b.Conv.Ended.IsZero() {
			return time.Time{}
		}
		if b.Conv.Ended.After(at) {
			at = b.Conv.Ended
		}
	}
	return at
}

// Lines streams the non-blank lines of a journal to each, with their
// number and whether the line ends the file without a newline (a live
// session's line still being written). A line over importers.MaxLine is
// reported and skipped; each's error stops the read and is returned.
func (l *Log) Lines(ctx context.Context, path string, each func(n int, line []byte, unterminated bool) error) error {
	j, err := l.Open(ctx, path)
	if err != nil {
		return err
	}
	defer j.Close()
	for {
		n, line, unterminated, err := j.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := each(n, line, unterminated); err != nil {
			return err
		}
	}
}

// Journal reads a journal's lines one at a time, as Lines gives them.
type Journal struct {
	l    *Log
	ctx  context.Context
	path string
	f    *os.File
	lr   *importers.LineReader
}

// Open opens the journal at path.
func (l *Log) Open(ctx context.Context, path string) (*Journal, error) {
	var f *os.File
	var err error
	if l.Dir != "" {
		f, err = importers.OpenIn(l.Dir, path)
	} else {
		f, err = importers.OpenRegular(path)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %v", path, err)
	}
	return &Journal{l: l, ctx: ctx, path: path, f: f, lr: importers.NewLineReader(f)}, nil
}

// Next returns the next non-blank line (valid until the next call), its
// number and whether it ends the file without a newline; io.EOF at the
// end. A line over importers.MaxLine is reported and skipped.
func (j *Journal) Next() (n int, line []byte, unterminated bool, err error) {
	for {
		line, n, unterminated, err := j.lr.Next()
		switch {
		case errors.Is(err, io.EOF):
			return n, nil, false, io.EOF
		case errors.Is(err, importers.ErrLineTooLong):
			if err := j.l.Malformed(j.path, n, fmt.Sprintf("a line over %d MiB was skipped", importers.MaxLine>>20)); err != nil {
				return n, nil, false, err
			}
			continue
		case err != nil:
			return n, nil, false, fmt.Errorf("reading %s: %v", j.path, err)
		}
		if n%1024 == 0 {
			if err := j.ctx.Err(); err != nil {
				return n, nil, false, err
			}
		}
		return n, line, unterminated, nil
	}
}

// Close closes the journal's file.
func (j *Journal) Close() error { return j.f.Close() }

// CutShort notes a last line that does not parse because the session is
// still being written.
func (l *Log) CutShort(path string, n int) {
	l.Note(path, n, "the last line is cut short (a session still being written?); it was left out")
}

// BranchName is the one way a Kimi sub-agent's branch is named, in both
// formats: the title the delegating call gave it (its description, or
// the task's or meta.json's), else the sub-agent's id, else
// "call-<call id>" — never an id for one branch and a title for its
// sibling when both have titles. A slash, which would read as a branch
// path, becomes a dash.
func BranchName(title, agentID, callID string) string {
	if t := strings.TrimSpace(title); t != "" {
		return strings.ReplaceAll(t, "/", "-")
	}
	if agentID != "" {
		return agentID
	}
	return "call-" + callID
}
