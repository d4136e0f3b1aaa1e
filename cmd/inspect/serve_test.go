package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/inspect-dev/inspect/runtime/runtimetest"
)

// TestServeRun: inspect serve on the demo's database answers on loopback,
// prints the address, applies the team's policy (.inspect.yaml: prices and
// an accepted finding) and stops on Ctrl-C.
func TestServeRun(t *testing.T) {
	f, _, errOut := testFactory(t)
	if code := run(context.Background(), f, []string{"demo"}); code != ExitOK {
		t.Fatalf("demo: exit %d: %s", code, errOut)
	}
	dir, _ := f.Getwd()
	policy := "prices:\n  gpt-4.1-mini: {input: 0.40, cached_input: 0.10, output: 1.60}\nignore:\n  - rule: fork.uneven\n    reason: the risks branch reads a long file on purpose\n"
	if err := os.WriteFile(filepath.Join(dir, ".inspect.yaml"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	// a fresh factory reads the policy (the demo's has read none)
	db := f.DBPath
	f, _, errOut = testFactory(t)
	f.DBPath, f.Getwd = db, func() (string, error) { return dir, nil }
	base, stop := startServe(t, &ServeOptions{F: f, Listen: "127.0.0.1:0"})
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Errorf("serve prints %q, want a loopback URL", base)
	}
	resp, err := http.Get(base + "runs/latest")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET the latest run: %d", resp.StatusCode)
	}
	for _, want := range []string{"missed fan-out", "cost <b>$0.0032 · analyst $0.0018 · researcher $0.0009 · writer $0.0005</b>", "accepted: the risks branch reads a long file on purpose (.inspect.yaml:",
		// the cache table prices its rows: the whole run's cost is the audit's
		`<th scope="col" class="r">Cache saved</th>`, `<th scope="row">whole run</th>`, `<td class="r">$0.0032</td>`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the served run page lacks %q", want)
		}
	}
	req, _ := http.NewRequest("GET", base, nil)
	req.Host = "rebind.example"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a request for another host name: %v %v, want 403", resp.StatusCode, err)
	}
	stop()
	if !strings.Contains(errOut.String(), "read-only, at "+base) {
		t.Errorf("serve does not print its address:\n%s", errOut)
	}
}

// TestReportRun: inspect report writes one HTML file; without -o it needs
// a redirected stdout; serve needs a --listen it can use.
func TestReportRun(t *testing.T) {
	f, _, errOut := testFactory(t)
	if code := run(context.Background(), f, []string{"demo"}); code != ExitOK {
		t.Fatalf("demo: exit %d: %s", code, errOut)
	}
	out := filepath.Join(t.TempDir(), "report.html")
	f2, _, errOut2 := testFactory(t)
	f2.DBPath = f.DBPath
	if code := run(context.Background(), f2, []string{"report", "-o", out}); code != ExitOK {
		t.Fatalf("report: exit %d: %s", code, errOut2)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `http-equiv="Content-Security-Policy"`) || !strings.Contains(string(b), "missed fan-out") {
		t.Errorf("the report:\n%.1000s", b)
	}
	f3, _, errOut3 := testFactory(t)
	f3.IO.OutTTY = true
	f3.DBPath = f.DBPath
	if code := run(context.Background(), f3, []string{"report"}); code != ExitUsage || !strings.Contains(errOut3.String(), "give -o FILE") {
		t.Errorf("report to a terminal: exit %d: %s", code, errOut3)
	}
	f4, _, errOut4 := testFactory(t)
	if code := run(context.Background(), f4, []string{"serve", "--listen", "nowhere"}); code != ExitUsage || !strings.Contains(errOut4.String(), "HOST:PORT") {
		t.Errorf("serve --listen nowhere: exit %d: %s", code, errOut4)
	}
}

// TestTimelineRun: inspect timeline piped is plain text at 80 columns (or
// --width), one row per conversation with the critical path marked.
func TestTimelineRun(t *testing.T) {
	f, _, errOut := testFactory(t)
	if code := run(context.Background(), f, []string{"demo"}); code != ExitOK {
		t.Fatalf("demo: exit %d: %s", code, errOut)
	}
	for _, w := range []int{0, 120} {
		g, out, errOut := testFactory(t)
		g.DBPath = f.DBPath
		args := []string{"timeline"}
		if w > 0 {
			args = append(args, "--width", strconv.Itoa(w))
		}
		if code := run(context.Background(), g, args); code != ExitOK {
			t.Fatalf("timeline: exit %d: %s", code, errOut)
		}
		s := out.String()
		for _, want := range []string{"critical path (*): trunk → risks", "* trunk @analyst→writer", "growth @researcher", "15.0s slowest"} {
			if !strings.Contains(s, want) {
				t.Errorf("width %d: no %q in\n%s", w, want, s)
			}
		}
		max := w
		if max == 0 {
			max = 80
		}
		for _, line := range strings.Split(s, "\n") {
			if n := utf8.RuneCountInString(line); n > max {
				t.Errorf("width %d: a line of %d columns", w, n)
			}
		}
		if strings.ContainsRune(s, 0x1b) {
			t.Error("piped output holds an escape sequence")
		}
	}
	g, _, errOut := testFactory(t)
	g.DBPath = f.DBPath
	if code := run(context.Background(), g, []string{"timeline", "--width", "-3"}); code != ExitUsage {
		t.Errorf("--width -3: exit %d: %s", code, errOut)
	}
}

// TestServeRun_OTLP: inspect serve --otlp on a database that does not
// exist yet receives the spans the OTel Go SDK's exporter sends from
// `inspect run --otlp-endpoint` (another database), records the trace as a
// run the pages show, refuses a post addressed to another host name, and
// on Ctrl-C says how many traces it recorded.
func TestServeRun_OTLP(t *testing.T) {
	f, _, errOut := testFactory(t)
	base, stop := startServe(t, &ServeOptions{F: f, Listen: "127.0.0.1:0", OTLP: true})
	if !strings.Contains(errOut.String(), "recording the OTLP traces posted to "+base+"v1/traces") {
		t.Errorf("serve --otlp does not say where it receives:\n%s", errOut)
	}

	// a page rebinding a name to 127.0.0.1 cannot record into the database
	req, _ := http.NewRequest("POST", base+"v1/traces", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	req.Host = "rebind.example"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("an OTLP post for another host name: %v %v, want 403", resp.StatusCode, err)
	}

	runner, _, runErr := testFactory(t)
	dir := filepath.Join(t.TempDir(), "handoff-chain")
	if err := runtimetest.CopyDir(filepath.Join("..", "..", "fixtures", "handoff-chain"), dir); err != nil {
		t.Fatal(err)
	}
	if code := run(t.Context(), runner, []string{"run", dir, "--script", filepath.Join(dir, "script.yaml"), "--otlp-endpoint", strings.TrimSuffix(base, "/")}); code != ExitOK {
		t.Fatalf("run --otlp-endpoint: exit %d: %s", code, runErr)
	}

	// the trace arrives as its spans do: wait for the run page to show every agent
	var id string
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, code := inspectRun(t, f, "runs", "--json")
		var runs []struct {
			ID     string `json:"id"`
			Source string `json:"source"`
		}
		if code == ExitOK && json.Unmarshal([]byte(out), &runs) == nil && len(runs) == 1 && runs[0].Source == "otlp" {
			id = runs[0].ID
			page := mustGetPage(t, base+"runs/"+id)
			if strings.Contains(page, "intake") && strings.Contains(page, "billing") && strings.Contains(page, "refunds") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the trace was not recorded as a run in 30s: %s\n%s", out, errOut)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if runs := mustGetPage(t, base); !strings.Contains(runs, "/runs/"+id) {
		t.Errorf("the runs page does not list the received run %s", id)
	}
	stop()
	if !strings.Contains(errOut.String(), "stopped: 1 traces recorded") {
		t.Errorf("serve --otlp does not say what it recorded:\n%s", errOut)
	}
}

// startServe runs serveRun with opts until the returned stop (Ctrl-C) is
// called, and returns the URL it serves.
func startServe(t *testing.T, opts *ServeOptions) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	opts.Ready = func(u string) { urls <- u }
	go func() { done <- serveRun(ctx, opts) }()
	var base string
	select {
	case base = <-urls:
	case err := <-done:
		cancel()
		t.Fatalf("serve ended: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("serve did not start")
	}
	stop := func() {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve after Ctrl-C: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("serve did not stop")
		}
	}
	return base, stop
}

// mustGetPage fetches url and fails the test unless it answers 200.
func mustGetPage(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// TestServeRun_NoDatabase: serve without a database (a new user's first
// command) opens on an empty page that says how to record or import a first
// run, naming the file, creates nothing, and shows the run once one is
// recorded there (before: it refused to start).
func TestServeRun_NoDatabase(t *testing.T) {
	f, _, errOut := testFactory(t)
	f.DBPath = filepath.Join(t.TempDir(), "first", "runs.db")
	base, stop := startServe(t, &ServeOptions{F: f, Listen: "127.0.0.1:0"})
	defer stop()
	get := func() string {
		t.Helper()
		resp, err := http.Get(base)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET /: %d\n%s", resp.StatusCode, b)
		}
		return string(b)
	}
	page := get()
	for _, want := range []string{"No runs recorded in this database yet.", "<code>inspect demo --db " + f.DBPath + "</code>",
		"<code>inspect import SESSION --db " + f.DBPath + "</code>", "shows the run once it is recorded"} {
		if !strings.Contains(page, want) {
			t.Errorf("the empty page lacks %q:\n%s", want, page)
		}
	}
	if _, err := os.Stat(f.DBPath); err == nil {
		t.Error("serve created the database")
	}
	if !strings.Contains(errOut.String(), f.DBPath+" does not exist yet: the page says how to record or import a first run") {
		t.Errorf("serve does not say the database is missing:\n%s", errOut)
	}
	recordInto(t, f.DBPath, "fanout-compact", "0123456789ab")
	if page := get(); !strings.Contains(page, `data-run="0123456789ab"`) || strings.Contains(page, "No runs recorded in this database yet.") {
		t.Errorf("the run recorded after serve started is not listed:\n%s", page)
	}
}
