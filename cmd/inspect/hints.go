package main

import (
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
	b.WriteString("inspect")
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
