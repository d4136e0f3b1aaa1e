package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store/layout"
)

// RequestParts reads the stored requests of run's llm nodes (only those
// of seqs, when seqs is not nil) as the store keeps them, without
// rebuilding any body: every message link the requests reach, each once
// and in id order (a link's Prev comes before it), and each request's
// parts in seq order. What it reads is the run's distinct messages and
// blobs once, not every request's bytes; each request's recorded size is
// checked against its parts, so a damaged chain is refused, never followed
// for ever. With data false the links come without their bytes (Data nil;
// Size and Sep say what they are), for a reader that needs the bytes of
// only a few (ScanMessages).
func (db *DB) RequestParts(ctx context.Context, run string, seqs []int64, data bool) (layout.Links, []layout.RequestParts, error) {
	fail := func(err error) (layout.Links, []layout.RequestParts, error) {
		return nil, nil, fmt.Errorf("load the requests of run %s: %w", run, err)
	}

	// The requests (read before their blobs: a run has a few distinct
	// heads, system messages and tails, each read once).
	var reqs []layout.RequestParts
	var err error
	if seqs != nil {
		list, _ := json.Marshal(seqs)
		reqs, err = db.requestRows(ctx, `n.run_id = ?1 AND n.seq IN (SELECT value FROM json_each(?2))`, run, string(list))
	} else {
		reqs, err = db.requestHalves(ctx, run)
	}
	if err != nil {
		return fail(err)
	}
	links, err := db.requestLinks(ctx, reqs, data)
	if err != nil {
		return fail(err)
	}
	size := make([]int64, len(links)) // bytes of the chain up to and including each link
	for i, l := range links {
		before := int64(0)
		if l.Prev != 0 {
			j, ok := links.Index(l.Prev)
			if !ok || j >= i {
				return fail(fmt.Errorf("message %d follows message %d, which is not before it: the database is damaged", l.ID, l.Prev))
			}
			before = size[j]
		}
		size[i] = before + l.Size
	}

	blobs := map[int64][]byte{}
	blob := func(id int64) ([]byte, error) {
		if b, ok := blobs[id]; ok {
			return b, nil
		}
		var b []byte
		if err := db.r.QueryRowContext(ctx, `SELECT data FROM blobs WHERE id = ?`, id).Scan(&b); err != nil {
			return nil, fmt.Errorf("blob %d: %w", id, err)
		}
		if b == nil {
			b = []byte{}
		}
		blobs[id] = b
		return b, nil
	}
	for i := range reqs {
		p := &reqs[i]
		if p.Head, err = blob(p.HeadID); err != nil {
			return fail(err)
		}
		if p.Tail, err = blob(p.TailID); err != nil {
			return fail(err)
		}
		if p.SystemID > 0 {
			if p.System, err = blob(p.SystemID); err != nil {
				return fail(err)
			}
		}
		chain := int64(0)
		if p.Last != 0 {
			if i, ok := links.Index(p.Last); ok {
				chain = size[i]
			}
		}
		if got := int64(len(p.Head)+len(p.System)+len(p.Tail)) + chain; got != p.Size {
			return fail(fmt.Errorf("the request of n%d has %d bytes in its parts, %d recorded: the database is damaged", p.Seq, got, p.Size))
		}
	}
	return links, reqs, nil
}

// requestHalves reads the request rows of every llm node of run, in seq
// order: on more than one CPU the two halves of a large run at once, on
// two connections, as graph.Load reads its nodes (the rows are most of
// what a cache analysis reads, and it reads them while the graph loads).
func (db *DB) requestHalves(ctx context.Context, run string) ([]layout.RequestParts, error) {
	var last sql.NullInt64
	if err := db.r.QueryRowContext(ctx, `SELECT max(seq) FROM nodes WHERE run_id = ?`, run).Scan(&last); err != nil {
		return nil, err
	}
	mid := last.Int64 / 2
	if mid < int64(halvesFrom)/2 || mid < 1 || runtime.GOMAXPROCS(0) < 2 {
		return db.requestRows(ctx, `n.run_id = ?1`, run)
	}
	var first, second []layout.RequestParts
	var eg errgroup.Group
	eg.Go(func() (err error) {
		first, err = db.requestRows(ctx, `n.run_id = ?1 AND n.seq <= ?2`, run, mid)
		return err
	})
	eg.Go(func() (err error) {
		second, err = db.requestRows(ctx, `n.run_id = ?1 AND n.seq > ?2`, run, mid)
		return err
	})
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	return append(first, second...), nil
}

// halvesFrom is the number of nodes from which requestHalves reads a
// run's requests in two halves at once.
var halvesFrom = 20_000

// requestRows reads the request rows of the llm nodes n that where
// selects (with args ?1, ?2), in seq order.
func (db *DB) requestRows(ctx context.Context, where string, args ...any) ([]layout.RequestParts, error) {
	var reqs []layout.RequestParts
	err := db.rawQuery(ctx, `SELECT n.seq, r.head, r.system, r.last, r.tail, r.size, n.started_ns, n.ended_ns, n.status, n.name, n.fidelity
		FROM requests r JOIN nodes n ON n.id = r.node_id WHERE `+where+` ORDER BY n.seq`, args, func(r *rowReader) error {
		var p layout.RequestParts
		p.Seq, p.HeadID = r.int64(), r.int64()
		system := r.int64()
		p.Last, p.TailID, p.Size = r.int64(), r.int64(), r.int64()
		started, ended := r.int64(), r.nullInt64()
		p.Status, p.Model, p.Fidelity = record.Status(r.string()), r.string(), record.Fidelity(r.string())
		p.SystemInChain, p.SystemID = system < 0, max(system, 0)
		p.Started = time.Unix(0, started)
		if ended.Valid {
			p.Ended = time.Unix(0, ended.Int64)
		}
		reqs = appendDoubling(reqs, p)
		return nil
	})
	return reqs, err
}

// appendDoubling is append with the capacity doubled when full (append
// grows a large slice by a quarter, and so copies it many times over).
func appendDoubling[T any](s []T, v T) []T {
	if len(s) == cap(s) {
		s = slices.Grow(s, max(len(s), 256))
	}
	return append(s, v)
}

// linkColumns are the chain's columns a MessageLink is scanned from,
// without the bytes or with them.
const (
	linkColumns     = `chain.id, chain.prev, length(chain.data), CASE WHEN substr(chain.data, 1, 2) = x'2c7b' THEN 1 WHEN substr(chain.data, 1, 1) = x'7b' THEN 0 ELSE -1 END`
	linkDataColumns = `chain.id, chain.prev, length(chain.data), chain.data`
)

// readLink reads one row of linkColumns (data false) or linkDataColumns.
func readLink(r *rowReader, data bool) layout.MessageLink {
	l := layout.MessageLink{ID: r.int64(), Prev: r.int64(), Size: r.int64()}
	if !data {
		l.Sep = r.int()
		return l
	}
	l.Data = r.bytes()
	switch d := l.Data; {
	case len(d) > 0 && d[0] == '{':
		l.Sep = 0
	case len(d) > 1 && d[0] == ',' && d[1] == '{':
		l.Sep = 1
	default:
		l.Sep = -1
	}
	return l
}

// requestLinks reads the links reqs reach, each once, in id order. They
// are read newest first by one scan down from the newest last link (a
// run's links are mostly its own, recorded together), keeping the ids
// still wanted in a heap (a link wants its prev, which is older); once
// the scan meets only other runs' links, the rest are walked by a
// recursive query (UNION stops at a loop).
func (db *DB) requestLinks(ctx context.Context, reqs []layout.RequestParts, data bool) (layout.Links, error) {
	cols := linkColumns
	if data {
		cols = linkDataColumns
	}
	var want idHeap
	for _, p := range reqs {
		if p.Last > 0 {
			want = append(want, p.Last)
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	want.init()
	var links layout.Links // newest first
	var missing []int64    // wanted ids the scan passed without meeting
	misses := 0
	err := db.rawQuery(ctx, `SELECT `+cols+` FROM chain WHERE id <= ? ORDER BY id DESC`, []any{want[0]}, func(r *rowReader) error {
		l := readLink(r, data)
		if r.err != nil {
			return r.err
		}
		for len(want) > 0 && want[0] > l.ID { // not in the table below its successor: damaged, or walked below
			missing = append(missing, want.pop())
		}
		switch {
		case len(want) == 0 || want[0] != l.ID:
			misses++
		default:
			misses = 0
			for len(want) > 0 && want[0] == l.ID {
				want.pop()
			}
			links = appendDoubling(links, l)
			if l.Prev > 0 {
				want.push(l.Prev)
			}
		}
		if len(want) == 0 || misses >= 4096 {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	slices.Reverse(links)
	missing = append(missing, want...)
	if len(missing) == 0 {
		return links, nil
	}
	list, _ := json.Marshal(missing)
	var more []layout.MessageLink
	err = db.rawQuery(ctx, `WITH RECURSIVE c(id) AS (
			SELECT value FROM json_each(?)
			UNION
			SELECT chain.prev FROM chain JOIN c ON chain.id = c.id WHERE chain.prev > 0
		)
		SELECT `+cols+` FROM c JOIN chain ON chain.id = c.id`, []any{string(list)}, func(r *rowReader) error {
		l := readLink(r, data)
		if _, taken := links.Index(l.ID); !taken && r.err == nil {
			more = append(more, l)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	links = append(links, more...)
	sort.Slice(links, func(i, j int) bool { return links[i].ID < links[j].ID })
	return links, nil
}

// ScanMessages calls fn with each link of ids that the chain holds, with
// its bytes, in id order: the bytes a reader of RequestParts without
// data needs of a few.
func (db *DB) ScanMessages(ctx context.Context, ids []int64, fn func(layout.MessageLink) error) error {
	if len(ids) == 0 {
		return nil
	}
	list, _ := json.Marshal(ids)
	var fnErr error
	err := db.rawQuery(ctx, `SELECT `+linkDataColumns+` FROM chain WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`, []any{string(list)}, func(r *rowReader) error {
		l := readLink(r, true)
		if r.err != nil {
			return r.err
		}
		fnErr = fn(l)
		return fnErr
	})
	switch {
	case fnErr != nil:
		return fnErr
	case err != nil:
		return fmt.Errorf("load messages: %w", err)
	}
	return nil
}

// idHeap is a max-heap of link ids.
type idHeap []int64

func (h *idHeap) init() {
	for i := len(*h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *idHeap) push(id int64) {
	*h = append(*h, id)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p] >= a[i] {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *idHeap) pop() int64 {
	a := *h
	top := a[0]
	a[0] = a[len(a)-1]
	*h = a[:len(a)-1]
	h.down(0)
	return top
}

func (h idHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		if r := l + 1; r < len(h) && h[r] > h[l] {
			l = r
		}
		if h[i] >= h[l] {
			return
		}
		h[i], h[l] = h[l], h[i]
		i = l
	}
}
