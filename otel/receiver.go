package otel

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/inspect-dev/inspect/internal/hostcheck"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/protobuf/encoding/protowire"
)

// ErrBusy is what a Consumer returns when it cannot take more spans now;
// the receiver answers 503 with Retry-After, which OTLP exporters retry.
var ErrBusy = errors.New("the receiver holds as many spans as it may; retry shortly")

// Consumer takes the spans of one export request. It returns how many it
// rejected and why (the partial success of the OTLP answer), or an error
// when it took none.
type Consumer func(ctx context.Context, spans []*Span) (rejected int, why string, err error)

// DefaultMaxBody bounds one export request body (after gzip).
const DefaultMaxBody = 64 << 20

// Handler is the OTLP/HTTP traces receiver (POST /v1/traces) as the OTLP
// specification describes it: bodies in protobuf (application/x-protobuf)
// or JSON (application/json), optionally gzip-compressed; 200 with an
// ExportTraceServiceResponse in the request's encoding, its partial_success
// counting the spans rejected (no trace or span id, or refused by Consume);
// 400 with a google.rpc.Status saying why for a body that is not OTLP;
// 405, 413 and 415 for the wrong method, size and media type; 503 with
// Retry-After when Consume is busy. A bad request never stops the handler.
//
// Hosts, when set, are the only Host header names (without port) it
// answers; others get 403: a receiver on loopback sets its loopback names,
// so a web page that rebinds a DNS name to 127.0.0.1 cannot post to it.
// At most MaxInFlight bodies are read and decoded at once (the others
// wait their turn), so concurrent exports of MaxBody each cannot take
// memory without bound.
type Handler struct {
	Consume     Consumer
	MaxBody     int64  // 0 = DefaultMaxBody
	Limits      Limits // caps on attribute values
	Hosts       []string
	MaxInFlight int // 0 = DefaultMaxInFlight

	once  sync.Once
	slots chan struct{}
}

// DefaultMaxInFlight is how many export bodies a Handler reads at once.
const DefaultMaxInFlight = 4

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(h.Hosts) > 0 && !hostcheck.Allowed(r.Host, h.Hosts) {
		writeStatus(w, strings.Contains(r.Header.Get("Content-Type"), "json"), http.StatusForbidden,
			"this receiver answers only requests addressed to "+strings.Join(h.Hosts, ", ")+"; send to the address it printed")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeStatus(w, false, http.StatusMethodNotAllowed, "only POST is served here: send OTLP/HTTP trace exports to /v1/traces")
		return
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var isJSON bool
	switch mt {
	case "application/json":
		isJSON = true
	case "application/x-protobuf", "application/protobuf":
	default:
		writeStatus(w, false, http.StatusUnsupportedMediaType, fmt.Sprintf("unsupported Content-Type %q: send application/x-protobuf or application/json", r.Header.Get("Content-Type")))
		return
	}
	max := h.MaxBody
	if max <= 0 {
		max = DefaultMaxBody
	}
	h.once.Do(func() {
		n := h.MaxInFlight
		if n <= 0 {
			n = DefaultMaxInFlight
		}
		h.slots = make(chan struct{}, n)
	})
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	case <-r.Context().Done():
		return // the exporter gave up waiting
	}
	var body io.Reader = http.MaxBytesReader(w, r.Body, max)
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			writeStatus(w, isJSON, http.StatusBadRequest, "the body is not gzip: "+err.Error())
			return
		}
		defer zr.Close()
		body = io.LimitReader(zr, max+1)
	default:
		writeStatus(w, isJSON, http.StatusUnsupportedMediaType, fmt.Sprintf("unsupported Content-Encoding %q: send gzip or none", enc))
		return
	}
	data, err := io.ReadAll(body)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) || int64(len(data)) > max {
		writeStatus(w, isJSON, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is over %d MiB; send smaller batches", max>>20))
		return
	}
	if err != nil {
		writeStatus(w, isJSON, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	var td ptrace.Traces
	if isJSON {
		td, err = UnmarshalJSON(data)
	} else {
		td, err = UnmarshalProto(data)
		if len(data) == 0 {
			td, err = ptrace.NewTraces(), nil // an empty message is a valid, empty export
		}
	}
	if err != nil {
		msg, ok := BodyProblem(err)
		if !ok {
			msg = err.Error()
		}
		writeStatus(w, isJSON, http.StatusBadRequest, msg)
		return
	}
	var spans []*Span
	bad := 0
	Flatten(td, h.Limits, func(s *Span) {
		if s.TraceID == "" || s.SpanID == "" {
			bad++
			return
		}
		spans = append(spans, s)
	})
	rejected, why := bad, ""
	if bad > 0 {
		why = fmt.Sprintf("%d spans without a trace or span id", bad)
	}
	if len(spans) > 0 && h.Consume != nil {
		n, msg, err := h.Consume(r.Context(), spans)
		if errors.Is(err, ErrBusy) {
			w.Header().Set("Retry-After", "1")
			writeStatus(w, isJSON, http.StatusServiceUnavailable, err.Error())
			return
		}
		if err != nil {
			writeStatus(w, isJSON, http.StatusInternalServerError, err.Error())
			return
		}
		if n > 0 {
			rejected += n
			why = strings.TrimPrefix(why+"; "+msg, "; ")
		}
	}
	resp := ptraceotlp.NewExportResponse()
	if rejected > 0 {
		resp.PartialSuccess().SetRejectedSpans(int64(rejected))
		resp.PartialSuccess().SetErrorMessage(why)
	}
	var out []byte
	if isJSON {
		out, err = resp.MarshalJSON()
		w.Header().Set("Content-Type", "application/json")
	} else {
		out, err = resp.MarshalProto()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}
	if err != nil {
		writeStatus(w, isJSON, http.StatusInternalServerError, err.Error())
		return
	}
	w.WriteHeader(http.StatusOK)
	w.Write(out)
}

// writeStatus answers code with a google.rpc.Status holding msg, in the
// request's encoding, as the OTLP specification asks of failures.
func writeStatus(w http.ResponseWriter, isJSON bool, code int, msg string) {
	rpc := 3 // INVALID_ARGUMENT
	switch code {
	case http.StatusServiceUnavailable:
		rpc = 14 // UNAVAILABLE
	case http.StatusInternalServerError:
		rpc = 13 // INTERNAL
	case http.StatusRequestEntityTooLarge:
		rpc = 8 // RESOURCE_EXHAUSTED
	case http.StatusForbidden:
		rpc = 7 // PERMISSION_DENIED
	}
	if isJSON {
		b, _ := json.Marshal(map[string]any{"code": rpc, "message": msg})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		w.Write(b)
		return
	}
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(rpc))
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, msg)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(code)
	w.Write(b)
}
