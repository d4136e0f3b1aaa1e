package web_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/analysis/storesrc"
	"github.com/inspect-dev/inspect/store"
	"github.com/inspect-dev/inspect/store/layout"
	"github.com/inspect-dev/inspect/web"
)

// signalledSource is the test database, saying when the requests of a
// run are first read (the cache analysis' first step).
type signalledSource struct {
	*storesrc.Source
	once    sync.Once
	reading chan struct{}
}

func (s *signalledSource) RequestParts(ctx context.Context, run string, seqs []int64, data bool) (layout.Links, []layout.RequestParts, error) {
	s.once.Do(func() { close(s.reading) })
	return s.Source.RequestParts(ctx, run, seqs, data)
}

// heldWriter is a response whose first write waits until the requests are
// being read (or gives up after a minute, saying so).
type heldWriter struct {
	*httptest.ResponseRecorder
	reading <-chan struct{}
	once    sync.Once
	before  bool // the requests were read before the page's first byte
}

func (w *heldWriter) Write(b []byte) (int, error) {
	w.once.Do(func() {
		select {
		case <-w.reading:
			w.before = true
		case <-time.After(time.Minute):
		}
	})
	return w.ResponseRecorder.Write(b)
}

// TestRunPage_CacheStartsWithTheGraph: a large run's full cache analysis
// (the later of its parts) starts as soon as its graph is in, while the
// page is drawn and written, not after the page is out: the page's first
// byte waits for the run's requests to be read, which the server starts
// only after the page on a server that waits for the page.
func TestRunPage_CacheStartsWithTheGraph(t *testing.T) {
	_, ids := served(t, web.Options{})
	db, err := store.OpenReadOnly(context.Background(), runs.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	src := &signalledSource{Source: storesrc.New(db), reading: make(chan struct{})}
	srv := web.New(src, web.Options{Progressive: 1})
	w := &heldWriter{ResponseRecorder: httptest.NewRecorder(), reading: src.reading}
	srv.ServeHTTP(w, httptest.NewRequest("GET", "/runs/"+ids["demo"], nil))
	if w.Code != 200 || !strings.Contains(w.Body.String(), `data-part="cache"`) {
		t.Fatalf("the page: %d\n%.2000s", w.Code, w.Body.String())
	}
	if !w.before {
		t.Error("the run's requests were not read before its page was written: the cache analysis waits for the page")
	}
	// and its part is the one the page fetches
	ts := httptest.NewServer(srv)
	defer ts.Close()
	if c := mustGet(t, ts.URL, "/runs/"+ids["demo"]+"/part/cache"); !strings.Contains(c, "Where reuse broke") {
		t.Errorf("the cache part:\n%.2000s", c)
	}
}
