package llmhttp

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// APIError is a provider's error response.
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Code and Type are the provider's error code and type, when given.
	Code, Type string
	// Message is the provider's message when the body is an error object
	// (ErrorObject), else the body's text cut at 300 bytes; the key
	// scrubbed either way.
	Message string
	// ErrorObject says the body was an error object of a known format.
	ErrorObject bool
	// Model is the model the request named.
	Model string
	// Endpoint is the URL posted to, without credentials.
	Endpoint string
	// Attempts is how many times the request was sent.
	Attempts int
	// RetryAfter is the wait the response's Retry-After asked for, 0 when
	// none.
	RetryAfter time.Duration
	// Body is the response body as received (its first MiB), scrubbed.
	Body []byte
}

// Error says who answered what: endpoint, status, code and message.
func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	s := fmt.Sprintf("%s answered %d", e.Endpoint, e.StatusCode)
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	s += ": " + msg
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return s
}

// Unauthorized reports whether the provider refused the key.
func (e *APIError) Unauthorized() bool { return e.StatusCode == http.StatusUnauthorized }

// ModelNotFound reports whether the provider does not serve the model.
func (e *APIError) ModelNotFound() bool {
	if e.Code == "model_not_found" {
		return true
	}
	return e.StatusCode == http.StatusNotFound && strings.Contains(strings.ToLower(e.Message), "model")
}

// TimeoutError is returned when the provider did not start or continue a
// response in time, after every retry.
type TimeoutError struct {
	// Endpoint is the URL posted to, without credentials.
	Endpoint string
	// After is the timeout that expired.
	After time.Duration
	// Waiting says what was awaited: "the response to start" or "more of the response".
	Waiting string
	// Attempts is how many times the request was sent.
	Attempts int
}

// Error says what was awaited, for how long, after how many attempts.
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s: no answer within %s waiting for %s (%d attempts)", e.Endpoint, e.After, e.Waiting, e.Attempts)
}

// CutOffError is a streamed answer that stopped before its end: the
// stream closed, broke or went silent before the provider said the answer
// was finished. Text is what arrived.
type CutOffError struct {
	// Endpoint is the URL posted to, without credentials.
	Endpoint string
	// Text is the part of the answer that arrived, scrubbed.
	Text string
	// Err is the read error that cut it, nil when the stream simply ended.
	Err error
}

// Error says how much of the answer arrived, and why no more did.
func (e *CutOffError) Error() string {
	why := "the stream ended before the end of the answer"
	if e.Err != nil {
		why = e.Err.Error()
	}
	return fmt.Sprintf("the answer was cut off after %d bytes (%s: %s)", len(e.Text), e.Endpoint, why)
}

// Unwrap returns the read error, if any.
func (e *CutOffError) Unwrap() error { return e.Err }

// UnreachableError is returned when the provider could not be reached
// after every retry.
type UnreachableError struct {
	Endpoint string
	Attempts int
	Err      error
}

// Error names the endpoint, the attempts and the last network error.
func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach %s (%d attempts): %v", e.Endpoint, e.Attempts, e.Err)
}

// Unwrap returns the last network error.
func (e *UnreachableError) Unwrap() error { return e.Err }
