package importers

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/inspect-dev/inspect/internal/secret"
	"github.com/inspect-dev/inspect/record"
)

// Locator is a Format that can find the newest session of a working folder
// in its tool's home (Claude Code's ~/.claude/projects, Codex's
// ~/.codex/sessions, …), for `inspect import --format NAME` without a path.
type Locator interface {
	// Newest returns the path of the newest session recorded for working
	// folder cwd, reading the tool's home from getenv (its override
	// variable, else HOME); an error that says where it looked when there
	// is none.
	Newest(cwd string, getenv func(string) string) (string, error)
}

// ToolHome is a tool's data folder as Locators find it: the override
// variable env when set, else dot under $HOME (variables read through
// getenv). tool names the tool and what the path to give instead, for
// the error when neither is set.
func ToolHome(getenv func(string) string, env, dot, tool, what string) (string, error) {
	if d := getenv(env); d != "" {
		return d, nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", fmt.Errorf("HOME is not set, so %s folder cannot be found; set %s or give %s path", tool, env, what)
	}
	return filepath.Join(home, dot), nil
}

// Watched is a Format whose sessions live in more than the file given:
// Files lists what to watch for changes (files or folders, walked) so a
// growing session is imported again. A Format without it is watched
// through its path alone.
type Watched interface {
	Files(path string) []string
}

// Result is one session imported.
type Result struct {
	RunID         string
	Source        record.Source
	Title         string
	Status        record.Status // the run's
	Conversations int           // the trunk and every branch
	Nodes         int
	Report        Report
	// Redacted counts the secrets the import replaced by [redacted], each
	// distinct value once, by the rule that found it.
	Redacted *secret.Tally
}

// EachStreamer is a Format that hands its sessions over one at a time
// as it reads them, none made before it is handed: a file of many runs
// (traces) holds only the one being written. Import prefers it to
// Streamer and Read. each is called with every session in the order a
// Read would list them; an error from each stops the reading and is
// returned. A session handed over is the caller's until each returns
// (its Close, when set, is called by the caller).
type EachStreamer interface {
	StreamEach(ctx context.Context, path string, opt Options, each func(*Session) error) error
}

// Import reads path as format f and records each session it holds through
// w (again into the same run when it was imported before), returning
// their results: ImportEach, collected.
func Import(ctx context.Context, w Writer, f Format, path string, opt Options) ([]Result, error) {
	var out []Result
	err := ImportEach(ctx, w, f, path, opt, func(r Result) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// ImportEach is Import handing each session's result to done as soon as
// it is written, holding none: an EachStreamer's sessions are made one at
// a time, a Streamer's recorded as they are read. An error from done
// stops the import and is returned.
func ImportEach(ctx context.Context, w Writer, f Format, path string, opt Options, done func(Result) error) error {
	one := func(s *Session) error {
		if s.Source.Format == "" {
			s.Source.Format = f.Name()
		}
		wr, err := write(ctx, w, s)
		if s.Close != nil {
			s.Close()
			s.Close = nil
		}
		if err != nil {
			return err
		}
		trunk := s.Trunk
		if trunk == nil {
			trunk = &Conversation{}
		}
		st, _ := convStatus(trunk)
		return done(Result{RunID: wr.id, Source: s.Source, Title: wr.redactedTitle(s.Title), Status: st,
			Conversations: wr.convs, Nodes: wr.nodes, Report: s.Report, Redacted: wr.redacted})
	}
	if ef, ok := f.(EachStreamer); ok {
		return ef.StreamEach(ctx, path, opt, one)
	}
	var sessions []*Session
	var err error
	if sf, ok := f.(Streamer); ok {
		sessions, err = sf.Stream(ctx, path, opt)
	} else {
		sessions, err = f.Read(ctx, path, opt)
	}
	if err != nil {
		return err
	}
	defer func() {
		for _, s := range sessions {
			if s != nil && s.Close != nil {
				s.Close()
			}
		}
	}()
	for i, s := range sessions {
		// A session written is let go (its texts, project and tools): a
		// file of many runs holds only their results.
		sessions[i] = nil
		if err := one(s); err != nil {
			return err
		}
	}
	return nil
}

// Watch imports path now and again whenever its files change (polled
// every interval), calling done after each import with its results, until
// ctx ends; it returns nil then. A failed re-import (a line being
// written, say) is reported through done's error and retried at the next
// change. WatchEach holds no results.
func Watch(ctx context.Context, w Writer, f Format, path string, opt Options, interval time.Duration, done func([]Result, error)) error {
	var res []Result
	return WatchEach(ctx, w, f, path, opt, interval, func(r Result) {
		res = append(res, r)
	}, func(err error) {
		done(res, err)
		res = nil
	})
}

// WatchEach is Watch handing each result to each as its session is
// written, and calling done after each import (with its error).
func WatchEach(ctx context.Context, w Writer, f Format, path string, opt Options, interval time.Duration, each func(Result), done func(error)) error {
	files := []string{path}
	if wf, ok := f.(Watched); ok {
		files = wf.Files(path)
	}
	var last string
	for {
		sig := signature(files)
		if sig != last {
			last = sig
			err := ImportEach(ctx, w, f, path, opt, func(r Result) error {
				each(r)
				return nil
			})
			if ctx.Err() != nil {
				return nil
			}
			done(err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// signature sums the sizes and modification times of files and of every
// file under the folders among them.
func signature(files []string) string {
	h := sha256.New()
	add := func(p string, info fs.FileInfo) {
		fmt.Fprintf(h, "%s\x00%d\x00%d\n", p, info.Size(), info.ModTime().UnixNano())
	}
	for _, p := range files {
		info, err := os.Stat(p)
		if err != nil {
			continue
		}
		if !info.IsDir() {
			add(p, info)
			continue
		}
		count := 0
		filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if count++; count > 10000 {
				return errors.New("enough")
			}
			if d.Type().IsRegular() {
				if info, err := d.Info(); err == nil {
					add(q, info)
				}
			}
			return nil
		})
	}
	return string(h.Sum(nil))
}

// redactedTitle is a session's title as it may be printed.
func (wr written) redactedTitle(t string) string {
	return (*secret.Redactor)(nil).Tally(t, wr.redacted)
}
