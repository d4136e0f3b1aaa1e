package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/inspect-dev/inspect/record"
)

// ScanRequestParts reads the stored requests of run's llm nodes (only
// those of seqs, when seqs is not nil) as the store keeps them, without
// rebuilding any body: first link is called with every message link the
// requests reach, each once and in id order (a link's Prev comes before
// it), then req with each request's parts in seq order. What it reads is
// the run's distinct messages and blobs once, not every request's bytes;
// each request's recorded size is checked against its parts, so a
// damaged chain is refused, never followed for ever.
func (db *DB) ScanRequestParts(ctx context.Context, run string, seqs []int64, link func(record.MessageLink) error, req func(record.RequestParts) error) error {
	where := `n.run_id = ?1`
	args := []any{run}
	if seqs != nil {
		list, _ := json.Marshal(seqs)
		where += ` AND n.seq IN (SELECT value FROM json_each(?2))`
		args = append(args, string(list))
	}
	fail := func(err error) error { return fmt.Errorf("load the requests of run %s: %w", run, err) }

	// The requests (read before their blobs: a run has a few distinct
	// heads, system messages and tails, each read once).
	qrows, err := db.r.QueryContext(ctx, `SELECT n.seq, r.head, r.system, r.last, r.tail, r.size
		FROM requests r JOIN nodes n ON n.id = r.node_id WHERE `+where+` ORDER BY n.seq`, args...)
	if err != nil {
		return fail(err)
	}
	var reqs []record.RequestParts
	for qrows.Next() {
		var p record.RequestParts
		var system int64
		if err := qrows.Scan(&p.Seq, &p.HeadID, &system, &p.Last, &p.TailID, &p.Size); err != nil {
			qrows.Close()
			return fail(err)
		}
		if system < 0 {
			p.SystemInChain = true
		} else {
			p.SystemID = system
		}
		reqs = append(reqs, p)
	}
	qrows.Close()
	if err := qrows.Err(); err != nil {
		return fail(err)
	}
	// The links the requests reach, each once, read newest first by one
	// scan down from the newest last link (a run's links are mostly its
	// own, recorded together); once the scan meets only other runs'
	// links, the rest are walked by a recursive query (UNION stops at a
	// loop).
	needed := map[int64]bool{}
	hi := int64(0)
	for _, p := range reqs {
		if p.Last > 0 {
			needed[p.Last] = true
			hi = max(hi, p.Last)
		}
	}
	var links []record.MessageLink
	take := func(l record.MessageLink) {
		delete(needed, l.ID)
		links = append(links, l)
		if l.Prev > 0 {
			needed[l.Prev] = true
		}
	}
	seen := map[int64]bool{}
	if len(needed) > 0 {
		rows, err := db.r.QueryContext(ctx, `SELECT id, prev, data FROM chain WHERE id <= ? ORDER BY id DESC`, hi)
		if err != nil {
			return fail(err)
		}
		misses := 0
		for len(needed) > 0 && misses < 4096 && rows.Next() {
			var l record.MessageLink
			if err := rows.Scan(&l.ID, &l.Prev, &l.Data); err != nil {
				rows.Close()
				return fail(err)
			}
			if !needed[l.ID] {
				misses++
				continue
			}
			misses = 0
			seen[l.ID] = true
			take(l)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fail(err)
		}
	}
	if len(needed) > 0 {
		var ids []int64
		for id := range needed {
			ids = append(ids, id)
		}
		list, _ := json.Marshal(ids)
		rows, err := db.r.QueryContext(ctx, `WITH RECURSIVE c(id) AS (
				SELECT value FROM json_each(?)
				UNION
				SELECT chain.prev FROM chain JOIN c ON chain.id = c.id WHERE chain.prev > 0
			)
			SELECT chain.id, chain.prev, chain.data FROM c JOIN chain ON chain.id = c.id`, string(list))
		if err != nil {
			return fail(err)
		}
		for rows.Next() {
			var l record.MessageLink
			if err := rows.Scan(&l.ID, &l.Prev, &l.Data); err != nil {
				rows.Close()
				return fail(err)
			}
			if !seen[l.ID] {
				seen[l.ID] = true
				take(l)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fail(err)
		}
	}
	sort.Slice(links, func(i, j int) bool { return links[i].ID < links[j].ID })
	size := map[int64]int64{} // link -> bytes of the chain up to and including it
	for _, l := range links {
		before, ok := size[l.Prev]
		if l.Prev != 0 && !ok {
			return fail(fmt.Errorf("message %d follows message %d, which is not before it: the database is damaged", l.ID, l.Prev))
		}
		size[l.ID] = before + int64(len(l.Data))
		if err := link(l); err != nil {
			return err
		}
	}

	blobs := map[int64][]byte{}
	blob := func(id int64) ([]byte, error) {
		if b, ok := blobs[id]; ok {
			return b, nil
		}
		var b []byte
		if err := db.r.QueryRowContext(ctx, `SELECT data FROM blobs WHERE id = ?`, id).Scan(&b); err != nil {
			return nil, fail(fmt.Errorf("blob %d: %w", id, err))
		}
		if b == nil {
			b = []byte{}
		}
		blobs[id] = b
		return b, nil
	}
	for _, p := range reqs {
		if p.Head, err = blob(p.HeadID); err != nil {
			return err
		}
		if p.Tail, err = blob(p.TailID); err != nil {
			return err
		}
		if p.SystemID > 0 {
			if p.System, err = blob(p.SystemID); err != nil {
				return err
			}
		}
		if got := int64(len(p.Head)+len(p.System)+len(p.Tail)) + size[p.Last]; got != p.Size {
			return fail(fmt.Errorf("the request of n%d has %d bytes in its parts, %d recorded: the database is damaged", p.Seq, got, p.Size))
		}
		if err := req(p); err != nil {
			return err
		}
	}
	return nil
}
