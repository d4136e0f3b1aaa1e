#!/usr/bin/env bash
# .ci/regression.sh — the regression test of docs/ci.md, run on a fixture.
#
# It does exactly the workflow's steps: record the scripted project into a
# fresh database, audit it (fail on an error-level finding), then diff it
# against the baseline database committed in the repo, failing on a new
# warning or on tokens/elapsed growing past the limits. The markdown report
# goes to $GITHUB_STEP_SUMMARY when set, else to stdout.
#
# Override with PROJECT=fixtures/<name> BASELINE=path.db, and INSPECT=path
# to use a built binary instead of building ./cmd/inspect. Rebuild the
# baseline (after an intended change) with:
#   go run ./cmd/inspect run fixtures/fanout-compact \
#     --script fixtures/fanout-compact/script.yaml --db testdata/ci/fanout-compact.db
# (remove the old file first, so the database holds one run).
set -euo pipefail
cd "$(dirname "$0")/.."

PROJECT=${PROJECT:-fixtures/fanout-compact}
BASELINE=${BASELINE:-testdata/ci/fanout-compact.db}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

INSPECT=${INSPECT:-}
if [ -z "$INSPECT" ]; then
  go build -o "$work/inspect" ./cmd/inspect
  INSPECT="$work/inspect"
fi
export INSPECT_DB="$work/runs.db"
summary=${GITHUB_STEP_SUMMARY:-/dev/stdout}

"$INSPECT" run "$PROJECT" --script "$PROJECT/script.yaml"
"$INSPECT" audit --fail-on error
"$INSPECT" diff "$BASELINE:latest" latest --format markdown \
  --max-increase tokens=10%,elapsed=20% --fail-on warning >> "$summary"
echo "regression: $PROJECT matches $BASELINE" >&2
