package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/inspect-dev/inspect/ask"
	"github.com/inspect-dev/inspect/store"
)

// Exit codes (DESIGN §11), in one table.
const (
	ExitOK        = 0 // success
	ExitFindings  = 1 // findings or regressions over the --fail-on / --max-increase threshold
	ExitUsage     = 2 // usage or input error: bad flags, unknown run or node, invalid project
	ExitToolError = 3 // inspect itself failed: database unreadable, provider unreachable after retries
)

// UsageError is an input error: the user can fix it by changing the command.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ThresholdError reports that findings or regressions went over the
// threshold the user set; the output has already been written.
type ThresholdError struct{ Reason string }

func (e *ThresholdError) Error() string { return e.Reason }

// flagError marks a cobra flag-parsing error, the only kind that prints usage.
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

// exitCode maps an error to the process exit code.
func exitCode(err error) int {
	var usage *UsageError
	var input *ask.InputError
	var flag *flagError
	var threshold *ThresholdError
	var schema *store.SchemaError
	var notFound *store.NotFoundError
	var ambiguous *store.AmbiguousError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &threshold):
		return ExitFindings
	case errors.As(err, &usage), errors.As(err, &input), errors.As(err, &flag), errors.As(err, &notFound),
		errors.As(err, &ambiguous), errors.Is(err, store.ErrNoRuns):
		return ExitUsage
	case errors.As(err, &schema):
		return ExitToolError
	case errors.Is(err, context.Canceled):
		return ExitToolError
	default:
		return ExitToolError
	}
}

// explain turns known errors into a message that says what to do next.
func explain(err error) string {
	var notFound *store.NotFoundError
	var ambiguous *store.AmbiguousError
	var missing *missingDBError
	var in *inDBError
	path := ""
	if errors.As(err, &in) {
		path = in.Path
	}
	switch {
	case errors.As(err, &missing):
		return missing.Error()
	case errors.Is(err, store.ErrNoRuns):
		return "no runs recorded yet; try `" + hint(path, "demo") + "`, or `inspect run PROJECT --task ...`"
	case errors.As(err, &notFound):
		return notFound.Error() + "; try `" + hint(path, "runs") + "`"
	case errors.As(err, &ambiguous):
		return ambiguous.Error() + "; try `" + hint(path, "runs") + "`"
	}
	return err.Error()
}
