package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/inspect-dev/inspect/store"
)

// Hints are the `next:` and `try:` lines commands print, and the commands
// named in error messages. Each is a whole command line a POSIX shell runs
// as it is when pasted (DESIGN §11): the run id and --db are spelled out,
// and every argument a shell would split or expand is quoted.

// inspectLine is the command line "inspect ARGS…", each argument quoted
// for a POSIX shell when it needs it (shellQuote).
func inspectLine(args ...string) string {
	var b strings.Builder
	b.WriteString(selfCommand)
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(shellQuote(a))
	}
	return b.String()
}

// dbArgs is ["--db", path] for a database other than the default, so a
// hint reaches the same file wherever INSPECT_DB points when it is pasted.
func dbArgs(path string) []string {
	if path == "" || path == store.DefaultPath {
		return nil
	}
	return []string{"--db", path}
}

// hint is the command line "inspect VERB ARGS… [--db PATH]".
func hint(dbPath, verb string, args ...string) string {
	return inspectLine(append(append([]string{verb}, args...), dbArgs(dbPath)...)...)
}

// selfCommand is how hints spell inspect: "inspect", or the `go run` form
// that runs it again when `go run` started this process (Main sets it).
var selfCommand = "inspect"

// mainPackage is inspect's main package; modulePath its module.
const (
	mainPackage = "github.com/inspect-dev/inspect/cmd/inspect"
	modulePath  = "github.com/inspect-dev/inspect"
)

// goRunExecutable reports whether argv0 is an executable `go run` built:
// in a temporary go-build folder's exe/ (its first build), or in the build
// cache, which keeps `go run`'s executables since Go 1.24 (GOCACHE/xx/
// <64 hex digits>-d/NAME: every later run of the same build).
func goRunExecutable(argv0 string) bool {
	dir := filepath.Dir(argv0)
	if filepath.Base(dir) == "exe" && strings.Contains(filepath.ToSlash(argv0), "/go-build") {
		return true
	}
	key, shard := filepath.Base(dir), filepath.Base(filepath.Dir(dir))
	return len(key) == 66 && strings.HasSuffix(key, "-d") && isHex(key[:64]) &&
		len(shard) == 2 && isHex(shard) && key[:2] == shard
}

func isHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// goRunCommand returns the command that runs this inspect again when `go
// run` built it (goRunExecutable), for a
// shell in dir: "go run ./cmd/inspect" at the module's root, the relative
// form below it, "go run PKG@VERSION" for a module version; "" otherwise.
func goRunCommand(argv0, dir string, info *debug.BuildInfo) string {
	if !goRunExecutable(argv0) {
		return ""
	}
	if info != nil && info.Main.Version != "" && info.Main.Version != "(devel)" && !strings.Contains(info.Main.Version, "+") &&
		info.Path == mainPackage {
		return "go run " + mainPackage + "@" + info.Main.Version
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			if !strings.HasPrefix(strings.TrimSpace(string(b)), "module "+modulePath) {
				return ""
			}
			rel, err := filepath.Rel(dir, filepath.Join(d, "cmd", "inspect"))
			if err != nil {
				return ""
			}
			if rel == "." {
				return "go run ."
			}
			rel = filepath.ToSlash(rel)
			if !strings.HasPrefix(rel, "../") {
				rel = "./" + rel
			}
			return "go run " + shellQuote(rel)
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}
