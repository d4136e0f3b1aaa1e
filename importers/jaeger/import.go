package jaeger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/otlp"
	"github.com/inspect-dev/inspect/record"
)

// Store is where the traces go: the runs (importers.Writer), the runs
// already imported (RunBySource) and the marks (store.DB has all three).
type Store interface {
	importers.Writer
	RunBySource(ctx context.Context, format, id string) (string, error)
	ImportMark(ctx context.Context, source string) (string, error)
	SetImportMark(ctx context.Context, source, mark string) error
}

// Mark is how far the import of one source has come, stored as JSON.
type Mark struct {
	// Until is the end of the last window searched whole, less Settle:
	// the next import searches from there.
	Until time.Time `json:"until"`
	// Open are the traces recorded running (their root span had not
	// come): fetched again by every import until they have ended.
	Open []string `json:"open,omitempty"`
}

// DefaultSince is how far back the first import of a source looks when no
// --since is given.
const DefaultSince = 24 * time.Hour

// Settle is how long before the search's end spans may still be on their
// way into Jaeger (its collector batches them): the mark stays that far
// back, so the next import searches that span of time again (the traces
// it finds already imported are not fetched again).
const Settle = 30 * time.Second

// Importer imports the traces of a Query from Client into Store.
type Importer struct {
	Client  *Client
	Store   Store
	Options importers.Options // as for any OTLP file
	// Now is the current time (tests inject it); default time.Now.
	Now func() time.Time
	// OnRun, when set, is told of each trace recorded as it is: the
	// summary keeps their count only, so an import of many traces holds
	// nothing per run.
	OnRun func(Run)
	// Progress, when set, is told of each trace fetched, skipped or found
	// already there.
	Progress func(Progress)
}

// Progress is where an import is.
type Progress struct {
	Window            time.Time // the start of the window being read
	Found, Done       int       // traces listed so far, and handled of them
	Imported, Skipped int
}

// Summary is what an import did.
type Summary struct {
	Found     int      // traces the searches listed (and the open ones fetched again)
	Imported  int      // traces recorded (new or updated), each told to OnRun
	Known     int      // already imported whole: not fetched
	TooLarge  []string // the ids of the traces over the size cap, skipped
	Gone      int      // listed, then not there when fetched (Jaeger's retention)
	Running   int      // recorded running (still receiving spans)
	Completed int      // recorded running before, ended now
	From, To  time.Time
}

// Run is one trace recorded.
type Run struct {
	importers.Result
	Trace   string
	Running bool
}

// SourceKey is the name of q's mark for the Jaeger at base: the address
// and every field that selects traces (not the time, nor the limit).
func SourceKey(base string, q Query) string {
	var b strings.Builder
	b.WriteString("jaeger " + strings.TrimSuffix(base, "/"))
	b.WriteString(" service=" + q.Service)
	if q.Operation != "" {
		b.WriteString(" operation=" + q.Operation)
	}
	keys := make([]string, 0, len(q.Attrs))
	for k := range q.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", k, q.Attrs[k])
	}
	return b.String()
}

// Import fetches the traces of q new since the source's mark (or since
// q.Since) and records each as a run. The mark advances as each window
// is read whole, so an import stopped by an error keeps what it recorded
// and the next resumes where it stopped.
func (im *Importer) Import(ctx context.Context, q Query) (Summary, error) {
	now := time.Now
	if im.Now != nil {
		now = im.Now
	}
	key := SourceKey(im.Client.Base, q)
	var mark Mark
	if text, err := im.Store.ImportMark(ctx, key); err != nil {
		return Summary{}, err
	} else if text != "" {
		if err := json.Unmarshal([]byte(text), &mark); err != nil {
			return Summary{}, fmt.Errorf("the stored mark of %s is unreadable: %w", key, err)
		}
	}
	to := q.Until
	if to.IsZero() {
		to = now()
	}
	from := q.Since
	if from.IsZero() {
		from = to.Add(-DefaultSince)
	}
	if !mark.Until.IsZero() && mark.Until.After(from) {
		from = mark.Until
	}
	sum := Summary{From: from, To: to}
	p := Progress{Window: from}
	tell := func() {
		if im.Progress != nil {
			im.Progress(p)
		}
	}
	save := func() error {
		text, err := json.Marshal(mark)
		if err != nil {
			return err
		}
		return im.Store.SetImportMark(ctx, key, string(text))
	}
	full := func() bool { return q.Limit > 0 && sum.Imported >= q.Limit }

	// The traces recorded running: fetched again first.
	open := map[string]bool{}
	for _, id := range mark.Open {
		open[id] = true
	}
	seen := map[string]bool{}
	for _, id := range mark.Open {
		if full() {
			break
		}
		seen[id] = true
		sum.Found++
		p.Found++
		r, err := im.one(ctx, id, &sum)
		p.Done++
		if err != nil {
			return sum, err
		}
		if r != nil {
			p.Imported++
			if !r.Running {
				delete(open, id)
				sum.Completed++
			}
		} else {
			p.Skipped++
			delete(open, id) // too large, or gone: not asked again
		}
		tell()
	}
	mark.Open = sortedKeys(open)
	if err := save(); err != nil {
		return sum, err
	}

	errFull := errors.New("limit reached")
	var last time.Time // the start of the last trace handled
	err := im.Client.Search(ctx, q, from, to, func(found []Found) error {
		for _, f := range found {
			if seen[f.ID] {
				continue
			}
			seen[f.ID] = true
			sum.Found++
			p.Found++
		}
		tell()
		for _, f := range found {
			if open[f.ID] {
				continue // fetched above
			}
			if full() {
				return errFull
			}
			p.Window = f.Start
			if run, err := im.Store.RunBySource(ctx, otlp.Name, f.ID); err != nil {
				return err
			} else if run != "" {
				sum.Known++
				p.Done++
				last = f.Start
				tell()
				continue
			}
			var r *Run
			var err error
			if f.Trace != nil {
				r, err = im.record(ctx, f.Trace, 0, &sum) // the search's answer holds it whole
			} else {
				r, err = im.one(ctx, f.ID, &sum)
			}
			p.Done++
			if err != nil {
				return err
			}
			if r != nil {
				p.Imported++
				if r.Running {
					open[f.ID] = true
				}
			} else {
				p.Skipped++
			}
			last = f.Start
			tell()
		}
		// This window is read whole: the next import starts at its last
		// trace (those of that moment are known by id then).
		if last.After(mark.Until) {
			mark.Until = last
		}
		mark.Open = sortedKeys(open)
		return save()
	})
	switch {
	case errors.Is(err, errFull):
		// Stopped inside a window: the mark is the last trace handled
		// (the traces of that moment are known by id next time).
		if !last.IsZero() && last.After(mark.Until) {
			mark.Until = last
		}
		mark.Open = sortedKeys(open)
		return sum, save()
	case err != nil:
		if !last.IsZero() && last.After(mark.Until) {
			mark.Until = last
		}
		mark.Open = sortedKeys(open)
		if serr := save(); serr != nil {
			return sum, errors.Join(err, serr)
		}
		return sum, err
	}
	until := to
	if settled := now().Add(-Settle); until.After(settled) {
		until = settled
	}
	if until.After(mark.Until) {
		mark.Until = until
	}
	mark.Open = sortedKeys(open)
	return sum, save()
}

// one fetches trace id alone and records it: nil (and no error) when it
// is over the size cap or gone.
func (im *Importer) one(ctx context.Context, id string, sum *Summary) (*Run, error) {
	body, err := im.Client.Trace(ctx, id)
	var se *StatusError
	switch {
	case errors.Is(err, ErrTooLarge):
		sum.TooLarge = append(sum.TooLarge, id)
		return nil, nil
	case errors.As(err, &se) && se.Code == http.StatusNotFound:
		sum.Gone++
		return nil, nil
	case err != nil:
		return nil, err // a *RequestError: it names the trace
	}
	traces, st, err := otlp.ReadTraces(ctx, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("read trace %s: %w", id, err)
	}
	var t *otlp.Trace
	for _, x := range traces {
		if x.ID == id {
			t = x
		}
	}
	if t == nil {
		sum.Gone++
		return nil, nil
	}
	return im.record(ctx, t, st.Truncated, sum)
}

// record records trace t as a run (running when its root has not come);
// truncated is how many of its attribute values were cut.
func (im *Importer) record(ctx context.Context, t *otlp.Trace, truncated int, sum *Summary) (*Run, error) {
	id := t.ID
	s := otlp.Build(t, im.Options)
	s.Source.Path = strings.TrimSuffix(im.Client.Base, "/") + "/api/v3/traces/" + id
	if truncated > 0 {
		s.Report.Skipped["attribute values over the size cap (cut)"] += truncated
	}
	running := !t.Ended()
	w := importers.Writer(im.Store)
	if running {
		w = runningWriter{im.Store}
	}
	res, err := importers.Import(ctx, w, sessionFormat{s}, "", im.Options)
	if err != nil {
		return nil, err
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("trace %s: nothing recorded", id)
	}
	r := &Run{Result: res[0], Trace: id, Running: running}
	if running {
		r.Status = record.StatusRunning
		sum.Running++
	}
	sum.Imported++
	if im.OnRun != nil {
		im.OnRun(*r)
	}
	return r, nil
}

// sessionFormat hands importers.Import one session already built.
type sessionFormat struct{ s *importers.Session }

func (sessionFormat) Name() string       { return otlp.Name }
func (sessionFormat) Detect(string) bool { return false }
func (f sessionFormat) Read(context.Context, string, importers.Options) ([]*importers.Session, error) {
	return []*importers.Session{f.s}, nil
}

// runningWriter records a trace whose root span has not come as running
// (no end): the import that finds it ended completes it.
type runningWriter struct{ importers.Writer }

func (w runningWriter) ImportRun(ctx context.Context, r *record.Run, nodes func(add func(*record.Node) error) error) error {
	return w.Writer.ImportRun(ctx, r, func(add func(*record.Node) error) error {
		if err := nodes(add); err != nil {
			return err
		}
		r.Status, r.Error, r.Ended = record.StatusRunning, "", time.Time{}
		return nil
	})
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
