#!/usr/bin/env bash
# .ci/fuzz.sh — runs every fuzz target for a fixed number of inputs
# (FUZZTIME, default 20000x each: a few seconds), after its seed corpus. A
# count rather than a duration: with a duration, Go reports "context deadline
# exceeded" as a failure when the deadline falls while a worker is busy on a
# loaded machine, with no failing input to show for it. A failing input is written by Go
# to <package>/testdata/fuzz/<Target>/ and fails this script: commit it
# with the fix, so the corpus keeps every crasher found.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-20000x}
targets=(
  "./runtime/project FuzzLoad"        # the agents.yaml loader
  "./runtime/scripted FuzzParse"      # the script parser
  "./chat FuzzRead"                   # the request/response readers
  "./mermaid FuzzEscape"              # the Mermaid escaper
  "./mermaid FuzzDOTQuote"            # the DOT escaper
  "./internal/termsafe FuzzString"    # the terminal sanitizer
  "./internal/secret FuzzRedactor"    # the secret redactor
  "./chat FuzzAppendString"           # the JSON string encoder of exact requests
  "./importers/claudecode FuzzRead"   # Claude Code session, sub-agent file, .meta.json
  "./importers/otlp FuzzRead"         # OTLP files: JSON lines, JSON, protobuf; whole and streamed
  "./importers/codex FuzzRead"        # Codex rollouts
  "./importers/openaiagents FuzzRead" # Agents SDK trace exports
  "./internal/jsonskip FuzzValue"     # the JSON value skipper of request pieces
)
# importers/kimicli and importers/kimicode FuzzRead run only their seed
# corpus, with go test ./...: each input is a folder of three files written
# and read, about 30 inputs a second on 2 cores, so 20000 would take over
# ten minutes each.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" > "$log" 2>&1 || {
    cat "$log" >&2
    echo "fuzz: $name in $pkg failed; the input is under $pkg/testdata/fuzz/$name" >&2
    exit 1
  }
  echo "fuzz: $name ok ($FUZZTIME)" >&2
done
