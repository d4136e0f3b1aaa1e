package otel

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestEncodeSpans_ReadsBack: what a receiver keeps of its spans reads back
// as the same spans, every kind of value and event included.
func TestEncodeSpans_ReadsBack(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 123, time.UTC)
	spans := []*Span{
		{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "00f067aa0ba902b7", Name: "invoke_agent lead", Kind: "Internal",
			Start: t0, End: t0.Add(time.Second), Status: "ok", Service: "svc", Scope: "hand", ScopeVersion: "1.2",
			Attrs: Attrs{"s": "text", "i": int64(-7), "f": 1.5, "b": true, "bytes": []byte{0, 1, 2},
				"list": []any{"a", int64(1)}, "map": map[string]any{"k": "v", "n": 2.5}}},
		{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "00f067aa0ba902b8", ParentID: "00f067aa0ba902b7", Name: "chat m",
			Kind: "Client", Start: t0.Add(time.Millisecond), Status: "error", StatusMessage: "boom", Service: "svc", Scope: "hand", ScopeVersion: "1.2",
			Events: []Event{{Name: "gen_ai.user.message", Time: t0.Add(2 * time.Millisecond), Attrs: Attrs{"content": "hi"}}}},
		{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "00f067aa0ba902b9", Name: "other", Kind: "Unspecified", Start: t0, Service: "two"},
	}
	data, err := EncodeSpans(spans)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeSpans(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, spans) {
		for i := range spans {
			if i < len(got) && !reflect.DeepEqual(got[i], spans[i]) {
				t.Errorf("span %d:\n got %+v\nwant %+v", i, got[i], spans[i])
			}
		}
		if len(got) != len(spans) {
			t.Errorf("%d spans back, want %d", len(got), len(spans))
		}
	}
	if s := spans[0].Size(); s < 256 || s > 2048 {
		t.Errorf("Size of a small span = %d", s)
	}
	big := &Span{Attrs: Attrs{"pad": strings.Repeat("x", 4<<20)}}
	if s := big.Size(); s < 4<<20 || s > 4<<20+1024 {
		t.Errorf("Size of a span of 4 MiB of attributes = %d, want about 4 MiB", s)
	}
}

// TestHandler_Hosts: a receiver on loopback answers only requests
// addressed to a loopback name (issue 23, item 3): a web page that
// rebinds a DNS name to 127.0.0.1 sends its own name as Host, and gets 403.
func TestHandler_Hosts(t *testing.T) {
	got := 0
	h := &Handler{Hosts: []string{"127.0.0.1", "localhost", "::1"}, Consume: func(ctx context.Context, spans []*Span) (int, string, error) {
		got += len(spans)
		return 0, "", nil
	}}
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := exportBody(t, 2, 0, false)
	for _, tt := range []struct {
		host string
		want int
	}{{"", 200}, {"localhost:4318", 200}, {"[::1]:4318", 200}, {"evil.example:4318", 403}, {"127.0.0.1.evil.example", 403}} {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/traces", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		if tt.host != "" {
			req.Host = tt.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("Host %q: %d, want %d", tt.host, resp.StatusCode, tt.want)
		}
	}
	if got != 6 {
		t.Errorf("%d spans consumed, want those of the three loopback requests (6)", got)
	}
}
