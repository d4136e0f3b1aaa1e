package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps failures; Fatal stops the check as
// t.Fatal would, through a panic that try recovers.
type recorder struct {
	testing.TB
	errs []string
}

type stop struct{}

func (r *recorder) Helper()                      {}
func (r *recorder) Errorf(f string, args ...any) { r.errs = append(r.errs, fmt.Sprintf(f, args...)) }
func (r *recorder) Fatalf(f string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(f, args...))
	panic(stop{})
}
func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

func try(fn func()) {
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(stop); !ok {
				panic(v)
			}
		}
	}()
	fn()
}

func TestCheck(t *testing.T) {
	t.Chdir(t.TempDir())
	r := &recorder{TB: t}
	try(func() { Check(r, "sub/out.txt", []byte("a\nb\nc\n"), true) })
	if b, err := os.ReadFile(filepath.Join("testdata", "sub", "out.txt")); err != nil || string(b) != "a\nb\nc\n" {
		t.Fatalf("-update wrote %q, %v", b, err)
	}
	try(func() { Check(r, "sub/out.txt", []byte("a\nb\nc\n"), false) })
	if len(r.errs) != 0 {
		t.Errorf("equal output failed: %v", r.errs)
	}
	try(func() { Check(r, "sub/out.txt", []byte("a\nB\nc\n"), false) })
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "-b\n+B\n") || !strings.Contains(r.errs[0], "-update") {
		t.Errorf("a changed line: %q, want a unified diff and the -update hint", r.errs)
	}
	r.errs = nil
	try(func() { Check(r, "missing.txt", []byte("x"), false) })
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "-update to create it") {
		t.Errorf("missing golden: %q, want one failure that says how to create it", r.errs)
	}
}
