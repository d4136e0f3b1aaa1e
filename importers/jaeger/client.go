// Package jaeger imports traces from a Jaeger query service through its
// API v3 (DESIGN §14, §18 "Fleet"): a search of /api/v3/traces by service,
// operation, attributes and time answers with the traces of a window,
// whole (a window holding as many traces as one search returns is split
// until each holds fewer, never cut; windows are sized from the last
// one's count), and each is recorded from that answer as a run through
// the OTLP importer (importers/otlp); /api/v3/traces/{id} fetches one
// alone (OTLP JSON, capped in size) when it was recorded running before,
// or is over the cap. The same trace again goes into the same run. A
// high-water mark kept in the database (Marks) makes the next import
// fetch only what is new; a trace still receiving spans is recorded
// running and fetched again until it has ended.
package jaeger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/importers/otlp"
)

// Query is what traces to import: every field but Since and Until names
// the traces (and with the address, the source whose mark is kept).
type Query struct {
	Service   string            // query.service_name; required by Jaeger
	Operation string            // query.operation_name; "" = any
	Attrs     map[string]string // query.attributes: span attributes (or tags) equal to these
	Since     time.Time         // zero: from the mark, else DefaultSince before Until
	Until     time.Time         // zero: now
	Limit     int               // at most this many traces imported; 0 = all
}

// Client talks to one Jaeger query service.
type Client struct {
	// Base is the query service's address (http://host:16686).
	Base string
	HTTP *http.Client
	// Auth, when set, adds the credentials to each request (a bearer
	// token or basic auth for a Jaeger behind a proxy); they are never
	// part of an error or of the mark.
	Auth func(*http.Request)
	// Depth is how many traces one search returns at most
	// (query.num_traces / query.search_depth); default DefaultDepth.
	Depth int
	// MaxBytes caps one trace's OTLP JSON; a larger trace is skipped
	// (ErrTooLarge). Default DefaultMaxBytes.
	MaxBytes int64
	// Retries is how many times a failed request is tried again (network
	// errors, 429, 5xx), waiting Backoff, then twice that, and so on (at
	// most a minute; Retry-After when the answer gives it). Default 5
	// retries from 500ms; a negative Retries tries once.
	Retries int
	Backoff time.Duration
	// OnRetry is told of each retry before its wait, with the try's
	// error (a *RequestError).
	OnRetry func(what string, err error, wait time.Duration)
	// Sleep waits d (injected by tests); default a timer honouring ctx.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Defaults of Client.
const (
	DefaultDepth    = 100
	DefaultMaxBytes = 64 << 20
)

// ErrTooLarge is the error of a trace over Client.MaxBytes.
var ErrTooLarge = errors.New("trace over the size cap")

// StatusError is an answer of Jaeger other than 200 (after the retries).
type StatusError struct {
	Code int
	Body string // the start of the answer, as Jaeger gave it
}

func (e *StatusError) Error() string {
	msg := strings.TrimSpace(e.Body)
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return fmt.Sprintf("jaeger answered %d %s: %s", e.Code, http.StatusText(e.Code), msg)
}

// RequestError is a request to Jaeger that failed for good: after its
// retries, or at once for an answer no retry changes. It says what was
// asked and what went wrong in a sentence, no chain of Go errors.
type RequestError struct {
	What    string        // "fetching trace 4bf9…", "searching traces from … to …"
	Tries   int           // how many times it was sent
	Timeout time.Duration // > 0: the last try got no answer in this time
	Err     error         // the last try's error: a *StatusError, or what the connection said
}

func (e *RequestError) Error() string {
	var why string
	var se *StatusError
	switch {
	case e.Timeout > 0:
		why = fmt.Sprintf("no answer within %s", e.Timeout)
	case errors.As(e.Err, &se):
		why = se.Error()
	default:
		why = "no answer: " + e.Err.Error()
	}
	if e.Tries > 1 {
		why += fmt.Sprintf(" (tried %d times)", e.Tries)
	}
	return e.What + ": " + why
}

func (e *RequestError) Unwrap() error { return e.Err }

// Found is a trace a search listed.
type Found struct {
	ID    string
	Start time.Time // its first span's start
	// Trace is the trace whole as the search answered it (Jaeger's
	// search returns whole traces), nil when it is to be fetched on its
	// own: over MaxBytes, or an answer that had values cut.
	Trace *otlp.Trace
}

// Search lists the traces of q with a span starting in [from, to), oldest
// first, window by window in time order: the first window is all of it;
// one holding as many traces as a search returns (Depth) may hold more,
// so it is halved and searched again, and each next window is sized from
// the last one's count to hold about half a search's worth. A window of
// one microsecond still full is an error (raise Depth), never a silent
// cut.
func (c *Client) Search(ctx context.Context, q Query, from, to time.Time, fn func([]Found) error) error {
	depth := c.depth()
	span := to.Sub(from)
	for cur := from; cur.Before(to); {
		end := cur.Add(span)
		if span <= 0 || end.After(to) {
			end = to
		}
		found, err := c.search(ctx, q, cur, end, end.Sub(cur) <= time.Microsecond)
		if err != nil {
			return err
		}
		w := end.Sub(cur)
		if len(found) >= depth {
			if w <= time.Microsecond {
				return fmt.Errorf("jaeger holds %d or more traces starting at %s, as many as one search returns: raise the search depth", depth, cur.UTC().Format(time.RFC3339Nano))
			}
			span = (w / 2).Truncate(time.Microsecond)
			if span < time.Microsecond {
				span = time.Microsecond
			}
			continue
		}
		if err := fn(found); err != nil {
			return err
		}
		cur = end
		// about depth/2 traces next time, growing at most 4 times
		factor := 4.0
		if len(found) > 0 {
			factor = min(max(float64(depth)/2/float64(len(found)), 0.5), 4)
		}
		span = time.Duration(float64(w) * factor).Truncate(time.Microsecond)
		if span < time.Microsecond {
			span = time.Microsecond
		}
	}
	return nil
}

// search is one search of [from, to): the traces it lists, oldest first
// (for a full answer, only as many empty ones unless exact). Jaeger's
// window is inclusive at both ends; a trace starting at to is left to the
// next window.
func (c *Client) search(ctx context.Context, q Query, from, to time.Time, exact bool) ([]Found, error) {
	v := url.Values{}
	v.Set("query.service_name", q.Service)
	if q.Operation != "" {
		v.Set("query.operation_name", q.Operation)
	}
	v.Set("query.start_time_min", from.UTC().Format(time.RFC3339Nano))
	v.Set("query.start_time_max", to.Add(-time.Nanosecond).UTC().Format(time.RFC3339Nano))
	depth := strconv.Itoa(c.depth())
	v.Set("query.num_traces", depth)   // Jaeger 1.x and 2.x up to 2.1x
	v.Set("query.search_depth", depth) // the newer name
	keys := make([]string, 0, len(q.Attrs))
	for k := range q.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v.Set("query.attributes["+k+"]", q.Attrs[k])
	}
	what := fmt.Sprintf("searching traces from %s to %s", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	body, err := c.get(ctx, what, "/api/v3/traces?"+v.Encode(), 0)
	var se *StatusError
	if errors.As(err, &se) && se.Code == http.StatusNotFound {
		return nil, nil // Jaeger's "No traces found"
	}
	if err != nil {
		return nil, err
	}
	if n := countTraces(body); n >= c.depth() && !exact {
		// full: the caller splits the window and drops this answer, so it
		// is not parsed (only its count matters; a link's trace id may
		// count too, so a window that cannot be split is parsed)
		out := make([]Found, n)
		return out, nil
	}
	traces, st, err := otlp.ReadTraces(ctx, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("read jaeger's search answer: %w", err)
	}
	maxBytes := c.maxBytes()
	out := make([]Found, 0, len(traces))
	for _, t := range traces {
		f := Found{ID: t.ID, Start: t.Start(), Trace: t}
		if st.Truncated > 0 || t.Bytes() > maxBytes {
			f.Trace = nil // fetched alone: its size checked, its cut values counted
		}
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out, nil
}

// countTraces counts the distinct trace ids of an OTLP/JSON answer's
// spans ("traceId":"<32 hex>") without parsing it: a lower bound would
// do, as a search answer holding fewer than the depth is parsed whole.
func countTraces(body []byte) int {
	key := []byte(`"traceId":"`)
	ids := map[string]struct{}{}
	for rest := body; ; {
		i := bytes.Index(rest, key)
		if i < 0 || len(rest) < i+len(key)+33 {
			return len(ids)
		}
		rest = rest[i+len(key):]
		if rest[32] == '"' {
			ids[string(rest[:32])] = struct{}{}
		}
		rest = rest[32:]
	}
}

func (c *Client) maxBytes() int64 {
	if c.MaxBytes > 0 {
		return c.MaxBytes
	}
	return DefaultMaxBytes
}

// Trace fetches trace id whole: its OTLP JSON, ErrTooLarge (wrapped, with
// the size read) over MaxBytes, a *StatusError of 404 when Jaeger has it
// no longer.
func (c *Client) Trace(ctx context.Context, id string) ([]byte, error) {
	return c.get(ctx, "fetching trace "+id, "/api/v3/traces/"+url.PathEscape(id), c.maxBytes())
}

func (c *Client) depth() int {
	if c.Depth > 0 {
		return c.Depth
	}
	return DefaultDepth
}

// get GETs path, retrying what may pass (network errors, timeouts, 429,
// 5xx); max > 0 caps the answer's size. A failure is a *RequestError
// saying what (the request's purpose), an ErrTooLarge, or ctx's error.
func (c *Client) get(ctx context.Context, what, path string, max int64) ([]byte, error) {
	retries, wait := c.Retries, c.Backoff
	if retries == 0 {
		retries = 5
	}
	if wait <= 0 {
		wait = 500 * time.Millisecond
	}
	for attempt := 0; ; attempt++ {
		body, retryAfter, err := c.once(ctx, path, max)
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err == nil || errors.Is(err, ErrTooLarge) {
			return body, err
		}
		re := &RequestError{What: what, Tries: attempt + 1, Err: err}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			re.Timeout = c.client().Timeout
		}
		if !retryable(err) || attempt >= retries {
			return nil, re
		}
		d := wait << attempt
		if d > time.Minute || d <= 0 {
			d = time.Minute
		}
		if retryAfter > 0 {
			d = retryAfter
		}
		if c.OnRetry != nil {
			re.Tries = 1 // this try's error alone
			c.OnRetry(what, re, d)
		}
		if err := c.sleep(ctx, d); err != nil {
			return nil, err
		}
	}
}

func (c *Client) once(ctx context.Context, path string, max int64) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(c.Base, "/")+path, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/json")
	if c.Auth != nil {
		c.Auth(req)
	}
	resp, err := c.client().Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is said by the caller, without any credentials
		}
		return nil, 0, &netError{err}
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if max > 0 {
		r = io.LimitReader(resp.Body, max+1)
	}
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, 0, &netError{err}
	}
	if resp.StatusCode != http.StatusOK {
		head := body
		if len(head) > 1000 {
			head = head[:1000]
		}
		var ra time.Duration
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 && s <= 600 {
			ra = time.Duration(s) * time.Second
		}
		return nil, ra, &StatusError{Code: resp.StatusCode, Body: string(head)}
	}
	if max > 0 && int64(len(body)) > max {
		return nil, 0, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
	}
	return body, 0, nil
}

// DefaultTimeout is how long one request may take when Client.HTTP is
// not set.
const DefaultTimeout = 2 * time.Minute

func (c *Client) client() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return defaultHTTP
}

var defaultHTTP = &http.Client{Timeout: DefaultTimeout}

// netError is a request that got no answer.
type netError struct{ err error }

func (e *netError) Error() string { return e.err.Error() }
func (e *netError) Unwrap() error { return e.err }

func retryable(err error) bool {
	var ne *netError
	if errors.As(err, &ne) {
		return true // get stops first when ctx has ended
	}
	var se *StatusError
	return errors.As(err, &se) && (se.Code == http.StatusTooManyRequests || se.Code >= 500)
}

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
