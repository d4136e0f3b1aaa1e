package otel

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/protobuf/encoding/protowire"
)

func exportBody(t *testing.T, withIDs, withoutIDs int, proto bool) []byte {
	t.Helper()
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i := 0; i < withIDs+withoutIDs; i++ {
		s := ss.AppendEmpty()
		s.SetName("chat m")
		if i < withIDs {
			s.SetTraceID([16]byte{1, 2, 3})
			s.SetSpanID([8]byte{byte(i + 1)})
		}
	}
	req := ptraceotlp.NewExportRequestFromTraces(td)
	var b []byte
	var err error
	if proto {
		b, err = req.MarshalProto()
	} else {
		b, err = req.MarshalJSON()
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gz(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

// TestHandler: the answers of the OTLP/HTTP specification, and a handler
// that keeps serving after each bad request.
func TestHandler(t *testing.T) {
	var got int
	busy := false
	h := &Handler{MaxBody: 1 << 20, Consume: func(ctx context.Context, spans []*Span) (int, string, error) {
		if busy {
			return 0, "", ErrBusy
		}
		got += len(spans)
		return 0, "", nil
	}}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, tt := range []struct {
		name        string
		method      string
		ctype, enc  string
		body        []byte
		busy        bool
		code        int
		wantInBody  string
		wantSpans   int
		wantPartial int64
	}{
		{name: "protobuf", ctype: "application/x-protobuf", body: exportBody(t, 3, 0, true), code: 200, wantSpans: 3},
		{name: "json gzip", ctype: "application/json", enc: "gzip", body: gz(exportBody(t, 2, 0, false)), code: 200, wantSpans: 2},
		{name: "partial success", ctype: "application/json", body: exportBody(t, 1, 2, false), code: 200, wantSpans: 1, wantPartial: 2, wantInBody: "without a trace or span id"},
		{name: "empty protobuf", ctype: "application/x-protobuf", body: nil, code: 200},
		{name: "GET", method: "GET", code: 405},
		{name: "text/plain", ctype: "text/plain", body: []byte("x"), code: 415, wantInBody: "application/x-protobuf"},
		{name: "brotli", ctype: "application/json", enc: "br", body: []byte("{}"), code: 415, wantInBody: "Content-Encoding"},
		{name: "not gzip", ctype: "application/json", enc: "gzip", body: []byte("{}"), code: 400, wantInBody: "not gzip"},
		{name: "not OTLP JSON", ctype: "application/json", body: []byte(`{"a":1}`), code: 400, wantInBody: "not OTLP"},
		{name: "broken JSON", ctype: "application/json", body: []byte(`{"resourceSpans":[`), code: 400, wantInBody: "not OTLP"},
		{name: "not protobuf", ctype: "application/x-protobuf", body: []byte("\xff\xff\xff\xff"), code: 400, wantInBody: "not OTLP"},
		{name: "too big", ctype: "application/json", body: bytes.Repeat([]byte(" "), 2<<20), code: 413},
		{name: "busy", ctype: "application/json", body: exportBody(t, 1, 0, false), busy: true, code: 503, wantInBody: "retry"},
		{name: "serving again", ctype: "application/json", body: exportBody(t, 1, 0, false), code: 200, wantSpans: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, busy = 0, tt.busy
			m := tt.method
			if m == "" {
				m = "POST"
			}
			req, _ := http.NewRequest(m, srv.URL+"/v1/traces", bytes.NewReader(tt.body))
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			if tt.enc != "" {
				req.Header.Set("Content-Encoding", tt.enc)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var buf bytes.Buffer
			buf.ReadFrom(resp.Body)
			if resp.StatusCode != tt.code {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, buf.String(), tt.code)
			}
			if tt.wantInBody != "" && !strings.Contains(buf.String(), tt.wantInBody) {
				t.Errorf("body %q lacks %q", buf.String(), tt.wantInBody)
			}
			if got != tt.wantSpans {
				t.Errorf("consumed %d spans, want %d", got, tt.wantSpans)
			}
			if tt.code == 503 && resp.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			if tt.code == 200 && tt.ctype == "application/json" {
				r := ptraceotlp.NewExportResponse()
				if err := r.UnmarshalJSON(buf.Bytes()); err != nil {
					t.Fatalf("answer %q: %v", buf.String(), err)
				}
				if n := r.PartialSuccess().RejectedSpans(); n != tt.wantPartial {
					t.Errorf("rejected %d, want %d", n, tt.wantPartial)
				}
			}
		})
	}
}

func TestTracesURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:4318":            "http://127.0.0.1:4318/v1/traces",
		"http://127.0.0.1:4318/":           "http://127.0.0.1:4318/v1/traces",
		"https://h/otlp/v1/traces":         "https://h/otlp/v1/traces",
		"http://localhost:4318/api/public": "http://localhost:4318/api/public/v1/traces",
	} {
		if got, err := TracesURL(in); err != nil || got != want {
			t.Errorf("TracesURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"127.0.0.1:4318", "ftp://x", ""} {
		if _, err := TracesURL(bad); err == nil {
			t.Errorf("TracesURL(%q) gave no error", bad)
		}
	}
}

func TestLooksLikeOTLP(t *testing.T) {
	pb := exportBody(t, 1, 0, true)
	js := exportBody(t, 1, 0, false)
	for _, tt := range []struct {
		name string
		head []byte
		want bool
	}{
		{"protobuf", pb, true},
		{"json", js, true},
		{"json after blank lines", append([]byte("\n\n"), js...), true},
		{"other json", []byte(`{"type":"session_meta"}`), false},
		{"text", []byte("hello\n"), false},
		{"empty", nil, false},
	} {
		if got := LooksLikeOTLP(tt.head); got != tt.want {
			t.Errorf("%s: LooksLikeOTLP = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestReceiver_BadBodySaysWhatWasWrong: a body that is not OTLP is
// answered 400 with what was wrong in the terms of the format (a field
// path, the value, what it should be; a byte offset), never the parser's
// internals (before: "ReadObject: expect { or , or } or n, but found
// \u0000, error found in #10 byte of ...|ceSpans\":[|..., bigger context
// ...", "ID.UnmarshalJSONIter: length mismatch", "proto: unexpected end of
// group").
func TestReceiver_BadBodySaysWhatWasWrong(t *testing.T) {
	srv := httptest.NewServer(&Handler{})
	defer srv.Close()
	const j, p = "application/json", "application/x-protobuf"
	for _, tt := range []struct{ ctype, body, want string }{
		{j, `{"resourceSpans":[`, "the body is not OTLP/JSON trace data: it is not valid JSON: it ends before its JSON value does"},
		{j, `not json`, "the body is not OTLP/JSON trace data: it is not valid JSON (invalid character 'o' in literal null (expecting 'u'), at byte 2)"},
		{j, `[1,2]`, `the body is not OTLP/JSON trace data: it is a JSON array, not an object {"resourceSpans": [...]}`},
		{j, `{"a":1}`, `the body is not OTLP/JSON trace data: the JSON object has no resourceSpans member (an export request is {"resourceSpans": [...]})`},
		{j, `{"resourceSpans":{}}`, "the body is not OTLP/JSON trace data: resourceSpans is a JSON object, not an array"},
		{j, `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"0102030405060708"}]}]}]}`,
			`the body is not OTLP/JSON trace data: resourceSpans[0].scopeSpans[0].spans[0].traceId is "zz", not 32 hex digits`},
		{j, `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708"},{"spanId":7}]}]}]}`,
			"the body is not OTLP/JSON trace data: resourceSpans[0].scopeSpans[0].spans[1].spanId is a JSON number, not a string of 16 hex digits"},
		{j, `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","startTimeUnixNano":"yesterday"}]}]}]}`,
			`the body is not OTLP/JSON trace data: resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano is "yesterday", not a whole number (nanoseconds since 1970)`},
		{j, `{"resourceSpans":[{"resource":{"attributes":[{"key":"a","value":"b"}]},"scopeSpans":[]}]}`,
			`the body is not OTLP/JSON trace data: resourceSpans[0].resource.attributes[0].value is a JSON string, not an object such as {"stringValue": "…"}`},
		{p, "\xff\xff\xff\xff", "the body is not OTLP/protobuf trace data: its protobuf encoding breaks at byte 0 of 4 (the body ends inside a field)"},
		{p, "hello world", "the body is not OTLP/protobuf trace data: its protobuf encoding breaks at byte 2 of 11 (bytes that are not a protobuf field)"},
		{p, `{"resourceSpans":[]}`, "the body is not OTLP/protobuf trace data: it is JSON; send it with Content-Type: application/json"},
	} {
		resp, err := http.Post(srv.URL+"/v1/traces", tt.ctype, strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("%s: status %d, want 400", tt.body, resp.StatusCode)
			continue
		}
		var got string
		if tt.ctype == j {
			var st struct{ Message string }
			if err := json.Unmarshal(buf.Bytes(), &st); err != nil {
				t.Fatalf("%s: answer %q: %v", tt.body, buf.String(), err)
			}
			got = st.Message
		} else {
			b := buf.Bytes() // google.rpc.Status: code (1), message (2)
			for len(b) > 0 {
				num, typ, n := protowire.ConsumeTag(b)
				b = b[n:]
				if typ == protowire.BytesType {
					v, n := protowire.ConsumeBytes(b)
					if num == 2 {
						got = string(v)
					}
					b = b[n:]
				} else {
					_, n := protowire.ConsumeVarint(b)
					b = b[n:]
				}
			}
		}
		if got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.body, got, tt.want)
		}
	}
}
