package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/alecthomas/chroma/v2/quick"
)

// Nothing heavy in package init (DESIGN §12: a command that draws nothing
// starts in ≤ 15 ms; BenchmarkStartup times it): `inspect runs --json` in a
// process of its own, with the runtime's init trace, allocates next to
// nothing in the inits of go-graphviz (its WebAssembly module is compiled by
// the first drawing), chroma (its styles and XML lexers are parsed by the
// first highlighting) and web (its templates are parsed by the first page).
// Upstream, the first two allocated 4.3 MB, 1.7 MB and 2.5 MB; web's
// templates 1.2 MB when parsed in its init.
// Allocations, not time: the check holds on a loaded machine.
func TestStartup_NothingHeavyInInit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	argv, _ := json.Marshal([]string{"runs", "--json", "--db", path})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "INSPECT_TEST_ARGS="+string(argv), "GODEBUG=inittrace=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	allocated := map[string]int64{}
	var head []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if len(head) < 5 {
			head = append(head, sc.Text())
		}
		// init PKG @0.5 ms, 0.1 ms clock, 1234 bytes, 5 allocs
		f := strings.Fields(sc.Text())
		if len(f) >= 9 && f[0] == "init" && f[8] == "bytes," {
			n, _ := strconv.ParseInt(f[7], 10, 64)
			allocated[f[1]] = n
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("inspect runs --json: %v", err)
	}
	if len(allocated) == 0 {
		t.Fatalf("no init trace read from the child process; its stderr began:\n%s", strings.Join(head, "\n"))
	}
	for _, pkg := range []string{
		"github.com/goccy/go-graphviz/internal/wasm",
		"github.com/goccy/go-graphviz/cgraph",
		"github.com/alecthomas/chroma/v2/styles",
		"github.com/alecthomas/chroma/v2/lexers",
		"github.com/inspect-dev/inspect/web",
	} {
		if got := allocated[pkg]; got > 256<<10 {
			t.Errorf("init of %s allocated %d bytes; it must defer its work to first use", pkg, got)
		}
	}
}

// The deferred loading still serves what glamour asks for: a style by name
// and an embedded XML lexer (JSON), coloured; Go lexers keep their analysers.
func TestChromaLoadsOnFirstUse(t *testing.T) {
	var b strings.Builder
	if err := quick.Highlight(&b, `{"path": "regions/eu.md"}`, "json", "terminal256", "monokai"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\x1b[") || !strings.Contains(b.String(), "regions/eu.md") {
		t.Errorf("highlighted JSON = %q, want ANSI colours around the text", b.String())
	}
}
