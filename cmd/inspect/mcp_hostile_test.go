package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/inspect-dev/inspect/ask/asktest"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/store"
)

// A client of `inspect mcp` chooses tool arguments, not inspect's flags
// (issue 22): a run reference of "-o/some/file" once overwrote that file
// through a read-only tool, "--db=OTHER.db" read another database and
// "--config=EVIL.yaml" another policy, because every tool re-entered the
// command line with the client's strings. TestMCP_HostileArguments gives
// such strings as every string argument of every tool, through the
// official go-sdk client talking to a built `inspect mcp` process with a
// throwaway HOME, working folder and TMPDIR, and proves that nothing is
// written, no other database or policy file is read, no other provider is
// called, and each answer is either a validation error that names the
// argument or the normal answer for the default database.

// hostileFolders are the folders of one hostile session: the process's
// HOME, working folder (the default database, its .inspect.yaml, OTHER.db,
// EVIL.yaml), TMPDIR, and a folder the hostile paths point into.
type hostileFolders struct{ home, wd, tmp, target string }

func (h hostileFolders) all() []string { return []string{h.home, h.wd, h.tmp, h.target} }

// fileState is what a snapshot knows of one path: its type and mode, and
// for a regular file its size, modification time and content hash.
type fileState struct {
	mode  fs.FileMode
	size  int64
	mtime time.Time
	sum   [32]byte
}

// snapshot records every path under the folders (a FIFO is recorded, never
// opened).
func snapshot(t *testing.T, dirs ...string) map[string]fileState {
	t.Helper()
	snap := map[string]fileState{}
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := e.Info()
			if err != nil {
				return err
			}
			st := fileState{mode: fi.Mode()}
			if fi.Mode().IsRegular() {
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				st.size, st.mtime, st.sum = fi.Size(), fi.ModTime(), sha256.Sum256(b)
			}
			snap[p] = st
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return snap
}

// changed lists the paths created, removed or changed between two
// snapshots, except those may accepts (as changed, or also as created or
// removed when appear is set).
func changed(before, after map[string]fileState, may func(string) bool, appear bool) []string {
	ok := func(p string) bool { return may != nil && may(p) }
	var out []string
	for p, a := range after {
		b, was := before[p]
		switch {
		case !was && !(appear && ok(p)):
			out = append(out, "created "+p)
		case !was:
		case a != b && a.mode.IsDir() && b.mode.IsDir():
			// a folder's mtime moves with what is created in it: reported there
		case a != b && !ok(p):
			out = append(out, "changed "+p)
		}
	}
	for p := range before {
		if _, is := after[p]; !is && !(appear && ok(p)) {
			out = append(out, "removed "+p)
		}
	}
	sort.Strings(out)
	return out
}

// readWatch tells whether files were read since the last look: it sets
// each file's access time far into the past, and the filesystem (relatime,
// strictatime) moves it on the next read. A filesystem mounted noatime
// cannot tell; the watch then says so once and the content markers alone
// tell a read.
type readWatch struct {
	t     *testing.T
	paths []string
	works bool
}

var longAgo = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func newReadWatch(t *testing.T, paths ...string) *readWatch {
	w := &readWatch{t: t, paths: paths}
	w.reset()
	if _, err := os.ReadFile(paths[0]); err != nil {
		t.Fatal(err)
	}
	w.works = len(w.read()) == 1
	if !w.works {
		t.Logf("this filesystem does not update access times (noatime): reads are told by content markers only")
	}
	w.reset()
	return w
}

func (w *readWatch) reset() {
	for _, p := range w.paths {
		fi, err := os.Stat(p)
		if err != nil {
			w.t.Fatal(err)
		}
		if err := os.Chtimes(p, longAgo, fi.ModTime()); err != nil {
			w.t.Fatal(err)
		}
	}
}

// read returns the files read since the last reset, and resets them.
func (w *readWatch) read() []string {
	var out []string
	for _, p := range w.paths {
		fi, err := os.Stat(p)
		if err != nil {
			w.t.Fatal(err)
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && time.Unix(st.Atim.Unix()).After(longAgo) {
			out = append(out, filepath.Base(p))
		}
	}
	if len(out) > 0 {
		w.reset()
	}
	return out
}

// hostileCall is one tool with valid arguments and the names of its string
// and string-list arguments.
type hostileCall struct {
	tool    string
	valid   map[string]any
	strings []string
	lists   []string
}

var hostileCalls = []hostileCall{
	{"list_runs", map[string]any{}, []string{"status", "source", "agent", "since", "until", "grep", "tag"}, nil},
	{"graph", map[string]any{}, []string{"run"}, nil},
	{"audit", map[string]any{}, []string{"run"}, []string{"set"}},
	{"show_node", map[string]any{"node": "n2"}, []string{"run", "node"}, nil},
	{"diff", map[string]any{"base": "latest", "new": "latest"}, []string{"base", "new"}, nil},
	{"explain_rule", map[string]any{"rule": "fork.uneven"}, []string{"rule"}, nil},
}

var hostileAsk = hostileCall{"ask", map[string]any{"node": "n4"}, []string{"run", "node", "question"}, nil}

// hostileValues are the strings a client might give to reach inspect's
// flags: output paths, another database, another policy, a baseline or
// prompt file, another provider.
func hostileValues(h hostileFolders, other, evil, evilURL string) []string {
	return []string{
		"-o" + filepath.Join(h.target, "dash-o.mmd"),
		"-o" + filepath.Join(h.target, "dash-o.json"),
		"--output=" + filepath.Join(h.target, "output.json"),
		"--out=" + filepath.Join(h.target, "out.txt"),
		"-orelative.mmd",
		"--db=" + other,
		"--db=OTHER.db",
		"--db=" + filepath.Join(h.target, "created.db"),
		"--config=" + evil,
		"--config=EVIL.yaml",
		"OTHER.db:latest",
		other + ":latest",
		"OTHER.db",
		"--baseline=" + evil,
		"--prompt=" + evil,
		"--base-url=" + evilURL,
		"--sarif-root=" + h.target,
	}
}

// hostile is one hostile session's world.
type hostile struct {
	hostileFolders
	demo     string // the default database's run
	other    string // OTHER.db, a database of its own
	otherRun string // its run
	evil     string // EVIL.yaml, a policy of its own
	watch    *readWatch
	evilHits atomic.Int32 // requests to another provider
	evilURL  string
}

// evilMarker is in EVIL.yaml's content only: an answer holding it read the file.
const evilMarker = "evil-policy-was-read-5d1c"

// newHostile records the default database (one demo run) with a price
// table in .inspect.yaml, OTHER.db (a run of its own) and EVIL.yaml (every
// finding of the demo accepted with a marker reason), and starts a
// provider that must never be called.
func newHostile(t *testing.T) *hostile {
	t.Helper()
	root := t.TempDir()
	h := &hostile{hostileFolders: hostileFolders{home: filepath.Join(root, "home"), wd: filepath.Join(root, "work"),
		tmp: filepath.Join(root, "tmp"), target: filepath.Join(root, "target")}}
	for _, d := range h.all() {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, _, _ := testFactory(t)
	f.DBPath = filepath.Join(h.wd, "runs.db")
	f.Getwd = func() (string, error) { return h.wd, nil }
	if _, errOut, code := inspectRun(t, f, "demo"); code != ExitOK {
		t.Fatalf("demo: exit %d: %s", code, errOut)
	}
	h.demo = runsJSON(t, f)[0].ID
	writePolicy(t, f, "prices:\n  gpt-4.1-mini: {input: 0.40, cached_input: 0.10, output: 1.60}\n")
	f.Close()

	ctx := context.Background()
	h.other = filepath.Join(h.wd, "OTHER.db")
	db, err := store.Open(ctx, h.other)
	if err != nil {
		t.Fatal(err)
	}
	if h.otherRun, err = graphtest.Record(ctx, db, graphtest.Synthetic(40)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	h.evil = filepath.Join(h.wd, "EVIL.yaml")
	var evil strings.Builder
	evil.WriteString("currency: EUR\nprices:\n  gpt-4.1-mini: {input: 900, output: 900}\nthresholds:\n  uneven-ratio: 97\nignore:\n")
	for _, r := range rules.All {
		fmt.Fprintf(&evil, "  - rule: %s\n    reason: %s\n", r.ID, evilMarker)
	}
	if err := os.WriteFile(h.evil, []byte(evil.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	h.watch = newReadWatch(t, h.evil, h.other)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.evilHits.Add(1)
		http.Error(w, "not the user's provider", http.StatusTeapot)
	}))
	t.Cleanup(srv.Close)
	h.evilURL = srv.URL
	return h
}

// values are the strings a client might give to reach inspect's flags:
// output paths, another database, another policy, a baseline or prompt
// file, another provider.
func (h *hostile) values() []string {
	return []string{
		"-o" + filepath.Join(h.target, "dash-o.mmd"),
		"-o" + filepath.Join(h.target, "dash-o.json"),
		"--output=" + filepath.Join(h.target, "output.json"),
		"--out=" + filepath.Join(h.target, "out.txt"),
		"-orelative.mmd",
		"--db=" + h.other,
		"--db=OTHER.db",
		"--db=" + filepath.Join(h.target, "created.db"),
		"--config=" + h.evil,
		"--config=EVIL.yaml",
		"OTHER.db:latest",
		h.other + ":latest",
		"OTHER.db",
		"--baseline=" + h.evil,
		"--prompt=" + h.evil,
		"--base-url=" + h.evilURL,
		"--sarif-root=" + h.target,
	}
}

// env is the environment of an `inspect mcp` process of h.
func (h *hostile) env(extra ...string) []string {
	return append([]string{"HOME=" + h.home, "TMPDIR=" + h.tmp, "XDG_CACHE_HOME=", "XDG_CONFIG_HOME=", "XDG_DATA_HOME=",
		"INSPECT_DB=", "INSPECT_CONFIG="}, extra...)
}

// call calls tool with args and checks the answer: a tool error whose
// text names the argument (name: …), or a normal answer; in both, nothing
// of OTHER.db or EVIL.yaml was read, and every run the structured content
// names is the demo run.
func (h *hostile) call(t *testing.T, s *mcp.ClientSession, c hostileCall, arg string, args map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: args})
	what := fmt.Sprintf("%s %s=%q", c.tool, arg, args[arg])
	if read := h.watch.read(); len(read) > 0 {
		t.Errorf("%s: read %s", what, strings.Join(read, " and "))
	}
	if err != nil {
		t.Errorf("%s: call failed: %v", what, err)
		return
	}
	var text strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	sc, _ := json.Marshal(res.StructuredContent)
	all := text.String() + "\n" + string(sc)
	if strings.Contains(all, h.otherRun) {
		t.Errorf("%s: the answer names OTHER.db's run %s: OTHER.db was read\n%.600s", what, h.otherRun, all)
	}
	if strings.Contains(all, evilMarker) {
		t.Errorf("%s: the answer holds EVIL.yaml's content: it was read\n%.600s", what, all)
	}
	if res.IsError {
		if !strings.HasPrefix(text.String(), arg+": ") {
			t.Errorf("%s: error %q does not say which argument was wrong (want %q first)", what, firstLine(text.String()), arg+": ")
		}
		return
	}
	runs := namedRuns(c.tool, res.StructuredContent)
	for _, id := range runs {
		if id != h.demo {
			t.Errorf("%s: answered about run %q, not the default database's %s", what, id, h.demo)
		}
	}
	if c.tool != "list_runs" && c.tool != "explain_rule" && c.tool != "show_node" && len(runs) == 0 {
		t.Errorf("%s: a normal answer names no run: %.300s", what, sc)
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// namedRuns are the run ids a tool's structured content names.
func namedRuns(tool string, sc any) []string {
	b, _ := json.Marshal(sc)
	var v struct {
		Run  json.RawMessage `json:"run"`
		Runs []struct {
			ID string `json:"id"`
		} `json:"runs"`
		Base struct {
			Run string `json:"run"`
		} `json:"base"`
		New struct {
			Run string `json:"run"`
		} `json:"new"`
	}
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	var ids []string
	switch tool {
	case "list_runs":
		for _, r := range v.Runs {
			ids = append(ids, r.ID)
		}
	case "diff":
		ids = append(ids, v.Base.Run, v.New.Run)
	case "graph":
		var r struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(v.Run, &r) == nil {
			ids = append(ids, r.ID)
		}
	case "audit", "ask":
		var id string
		if json.Unmarshal(v.Run, &id) == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// sweep gives every hostile value as each string argument of each call (the
// others valid), one argument at a time.
func (h *hostile) sweep(t *testing.T, s *mcp.ClientSession, calls ...hostileCall) {
	t.Helper()
	for _, c := range calls {
		for _, v := range h.values() {
			for _, arg := range append(append([]string(nil), c.strings...), c.lists...) {
				args := map[string]any{}
				for k, x := range c.valid {
					args[k] = x
				}
				args[arg] = v
				if slices.Contains(c.lists, arg) {
					args[arg] = []string{v}
				}
				h.call(t, s, c, arg, args)
			}
		}
	}
}

func TestMCP_HostileArguments(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the inspect binary")
	}
	h := newHostile(t)
	dbFile := filepath.Join(h.wd, "runs.db")
	// SQLite's shared-memory index of the default database moves when it
	// is read; that file alone may change (not be created or removed)
	shm := func(p string) bool { return p == dbFile+"-shm" }

	// the read-only tools: nothing anywhere changes, the default database included
	before := snapshot(t, h.all()...)
	h.watch.reset()
	s := mcpSession(t, h.wd, h.env(), "--db", dbFile)
	h.sweep(t, s, hostileCalls...)
	s.Close()
	for _, c := range changed(before, snapshot(t, h.all()...), shm, false) {
		t.Errorf("read-only tools: %s", c)
	}

	// ask: it may store its answers with the run in the default database,
	// and change nothing else
	prov := asktest.New(t, askTestKey)
	prov.Register("question", asktest.ToolChoiceNone, asktest.Answer(asktest.Reply{Content: "Because nothing told me they were independent."}))
	before = snapshot(t, h.all()...)
	h.watch.reset()
	s = mcpSession(t, h.wd, h.env("OPENAI_API_KEY="+askTestKey, "OPENAI_BASE_URL="+prov.URL), "--db", dbFile, "--allow-ask")
	h.sweep(t, s, hostileAsk)
	s.Close()
	isDefaultDB := func(p string) bool { return p == dbFile || p == dbFile+"-wal" || shm(p) }
	for _, c := range changed(before, snapshot(t, h.all()...), isDefaultDB, true) {
		t.Errorf("ask: %s", c)
	}
	// what it stored: the answers to the hostile questions, as questions,
	// with the demo run's n4
	ctx := context.Background()
	db, err := store.OpenReadOnly(ctx, dbFile)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	asks, err := db.Asks(ctx, h.demo, 4)
	if err != nil {
		t.Fatal(err)
	}
	var questions []string
	for _, a := range asks {
		questions = append(questions, a.Question)
	}
	if want := h.values(); !reflect.DeepEqual(questions, want) {
		t.Errorf("asks stored with n4: %q\nwant the hostile questions %q", questions, want)
	}
	if n := h.evilHits.Load(); n > 0 {
		t.Errorf("another provider was called %d time(s)", n)
	}
}

// TestMCP_AllowDB: a database file the user named with --allow-db is
// readable as FILE.db:RUN (spelled as the client likes), only read, never
// asked into; any other file stays refused.
func TestMCP_AllowDB(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the inspect binary")
	}
	h := newHostile(t)
	dbFile := filepath.Join(h.wd, "runs.db")
	other2 := filepath.Join(h.target, "SECOND.db")
	if err := os.WriteFile(other2, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, h.all()...)
	s := mcpSession(t, h.wd, h.env("OPENAI_API_KEY="+askTestKey, "OPENAI_BASE_URL="+h.evilURL), "--db", dbFile, "--allow-db", "OTHER.db", "--allow-ask")

	var g struct {
		Run struct {
			ID string `json:"id"`
		} `json:"run"`
	}
	for _, ref := range []string{"OTHER.db:latest", "./OTHER.db:" + h.otherRun[:6], h.other, h.other + ":"} {
		if text, isErr := callTool(t, s, "graph", map[string]any{"run": ref}, &g); isErr || g.Run.ID != h.otherRun {
			t.Errorf("graph %s: %v %+v %.200s", ref, isErr, g, text)
		}
	}
	var d struct {
		Base struct {
			Run string `json:"run"`
		} `json:"base"`
		New struct {
			Run string `json:"run"`
		} `json:"new"`
	}
	if text, isErr := callTool(t, s, "diff", map[string]any{"base": "OTHER.db:latest", "new": "latest"}, &d); isErr || d.Base.Run != h.otherRun || d.New.Run != h.demo {
		t.Errorf("diff OTHER.db:latest latest: %v %+v %.300s", isErr, d, text)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"graph", map[string]any{"run": other2 + ":latest"}, "run: "},
		{"diff", map[string]any{"base": "SECOND.db", "new": "latest"}, "base: "},
		{"ask", map[string]any{"run": "OTHER.db:latest", "node": "n2"}, "run: OTHER.db is a database the user allowed for reading"},
	} {
		if text, isErr := callTool(t, s, c.tool, c.args, nil); !isErr || !strings.HasPrefix(text, c.want) {
			t.Errorf("%s %v: %v %q; want an error starting %q", c.tool, c.args, isErr, text, c.want)
		}
	}
	list, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		if tool.Name == "graph" && !strings.Contains(tool.Description, "FILE.db:RUN for OTHER.db (the files the user allowed; no other)") {
			t.Errorf("graph's description does not name the allowed file: %q", tool.Description)
		}
	}
	s.Close()
	// reading a WAL database makes SQLite keep its index files beside it
	// (as inspect graph FILE.db:RUN does); the databases stay unchanged
	walFiles := func(p string) bool {
		return p == dbFile+"-shm" || p == h.other+"-shm" || p == h.other+"-wal"
	}
	after := snapshot(t, h.all()...)
	for _, c := range changed(before, after, walFiles, true) {
		t.Errorf("--allow-db: %s", c)
	}
	if st, ok := after[h.other+"-wal"]; ok && st.size != 0 {
		t.Errorf("--allow-db: OTHER.db-wal holds %d bytes: something was written", st.size)
	}
	if n := h.evilHits.Load(); n > 0 {
		t.Errorf("the provider was called %d time(s)", n)
	}
}
