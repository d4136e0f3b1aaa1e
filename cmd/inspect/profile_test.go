package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCPUProfile: INSPECT_CPUPROFILE=FILE writes a profile of the whole
// process that go tool pprof reads; a file it cannot create is a clear
// error, not a stack trace.
func TestCPUProfile(t *testing.T) {
	bin := builtInspect(t)
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.prof")
	cmd := exec.Command(bin, "runs", "--json", "--db", filepath.Join(dir, "runs.db"))
	cmd.Env = append(os.Environ(), "INSPECT_CPUPROFILE="+prof)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("inspect runs: %v\n%s", err, out)
	}
	b, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	// a profile.proto, gzipped: its string table names the sample types
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the profile is not gzipped: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte("cpu")) || !bytes.Contains(raw, []byte("nanoseconds")) {
		t.Errorf("not a CPU profile (%d bytes)", len(raw))
	}

	cmd = exec.Command(bin, "runs", "--json", "--db", filepath.Join(dir, "runs.db"))
	cmd.Env = append(os.Environ(), "INSPECT_CPUPROFILE="+filepath.Join(dir, "no", "such", "dir", "cpu.prof"))
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitUsage {
		t.Fatalf("exit %v, want %d\n%s", err, ExitUsage, out)
	}
	if s := string(out); !strings.HasPrefix(s, "inspect: INSPECT_CPUPROFILE: ") || strings.Contains(s, "goroutine") {
		t.Errorf("message %q", s)
	}
}
