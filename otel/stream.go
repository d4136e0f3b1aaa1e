package otel

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/inspect-dev/inspect/record"
)

// TracesURL is the OTLP/HTTP traces URL of endpoint, read as
// OTEL_EXPORTER_OTLP_ENDPOINT is: a base URL gets /v1/traces appended; a
// URL already ending in /v1/traces is kept. Only http and https are taken.
func TracesURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http:// or https:// URL (for example http://127.0.0.1:4318)", endpoint)
	}
	if !strings.HasSuffix(u.Path, "/v1/traces") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	}
	return u.String(), nil
}

// HTTPExporter is the OTel Go SDK's OTLP/HTTP exporter to the traces URL
// u (TracesURL), each request given 10 s.
func HTTPExporter(ctx context.Context, u string) (sdktrace.SpanExporter, error) {
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u), otlptracehttp.WithTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("otlp exporter for %s: %w", u, err)
	}
	return exp, nil
}

// Stream sends a run to an OTLP/HTTP endpoint while it is recorded: the
// runtime calls Start, then Node as each node is finished, then Finish.
// Export failures never stop the run: Err says what went wrong after
// Finish.
type Stream struct {
	URL     string // the traces URL (TracesURL)
	Service string // the traces' service.name (OTEL_SERVICE_NAME); "" = DefaultService

	mu  sync.Mutex
	sp  *Spanner
	err error
}

// Start opens the run's trace.
func (s *Stream) Start(ctx context.Context, run *record.Run) {
	exp, err := HTTPExporter(ctx, s.URL)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err = err
		return
	}
	s.sp = NewSpanner(ctx, run, exp, Options{Service: s.Service}, nil)
}

// Node exports a finished node (its request and response from the node).
func (s *Stream) Node(ctx context.Context, n *record.Node) {
	s.mu.Lock()
	sp := s.sp
	s.mu.Unlock()
	if sp != nil {
		sp.Node(ctx, n)
	}
}

// Finish closes the trace and flushes what is left.
func (s *Stream) Finish(ctx context.Context, status record.Status, errMsg string, ended time.Time) {
	s.mu.Lock()
	sp := s.sp
	s.mu.Unlock()
	if sp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if err := sp.Finish(ctx, status, errMsg, ended); err != nil {
		s.mu.Lock()
		s.err = fmt.Errorf("send spans to %s: %w", s.URL, err)
		s.mu.Unlock()
	}
}

// Err is the first export failure, or nil.
func (s *Stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
