// Command inspect records multi-agent LLM runs, draws them, audits their
// topology and lets you question any recorded model call.
package main

import (
	"os"

	// Before go-graphviz's package init: keeps a foreign $TMPDIR/go-graphviz
	// from crashing every command (see its doc).
	_ "github.com/inspect-dev/inspect/internal/gvcache"
)

func main() {
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
