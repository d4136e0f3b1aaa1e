// Package all is the registry of every import format: cmd/inspect detects
// and names formats through it. A new importer adds itself to Formats.
package all

import (
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/claudecode"
	"github.com/inspect-dev/inspect/importers/codex"
	"github.com/inspect-dev/inspect/importers/geminicli"
	"github.com/inspect-dev/inspect/importers/kimicli"
	"github.com/inspect-dev/inspect/importers/kimicode"
	"github.com/inspect-dev/inspect/importers/openaiagents"
	"github.com/inspect-dev/inspect/importers/otlp"
)

// Formats returns every import format, in the order detection tries them
// (the most specific first).
func Formats() []importers.Format {
	return []importers.Format{otlp.Format{}, openaiagents.Format{}, codex.Format{}, geminicli.Format{}, claudecode.Format{}, kimicli.Format{}, kimicode.Format{}}
}
