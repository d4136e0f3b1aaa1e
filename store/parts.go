package store

import (
	"context"
	"encoding/json"
	"fmt"

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

	// The links the requests reach, each once: UNION stops at a loop.
	rows, err := db.r.QueryContext(ctx, `WITH RECURSIVE c(id) AS (
			SELECT r.last FROM requests r JOIN nodes n ON n.id = r.node_id WHERE `+where+` AND r.last > 0
			UNION
			SELECT chain.prev FROM chain JOIN c ON chain.id = c.id WHERE chain.prev > 0
		)
		SELECT chain.id, chain.prev, chain.data FROM chain JOIN c ON chain.id = c.id ORDER BY chain.id`, args...)
	if err != nil {
		return fail(err)
	}
	size := map[int64]int64{} // link -> bytes of the chain up to and including it
	for rows.Next() {
		var l record.MessageLink
		if err := rows.Scan(&l.ID, &l.Prev, &l.Data); err != nil {
			rows.Close()
			return fail(err)
		}
		before, ok := size[l.Prev]
		if l.Prev != 0 && !ok {
			rows.Close()
			return fail(fmt.Errorf("message %d follows message %d, which is not before it: the database is damaged", l.ID, l.Prev))
		}
		size[l.ID] = before + int64(len(l.Data))
		if err := link(l); err != nil {
			rows.Close()
			return err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fail(err)
	}

	// The blobs of heads, system messages and tails, each once.
	blobs := map[int64][]byte{}
	brows, err := db.r.QueryContext(ctx, `SELECT b.id, b.data FROM blobs b WHERE b.id IN (
			SELECT r.head FROM requests r JOIN nodes n ON n.id = r.node_id WHERE `+where+`
			UNION SELECT r.tail FROM requests r JOIN nodes n ON n.id = r.node_id WHERE `+where+`
			UNION SELECT r.system FROM requests r JOIN nodes n ON n.id = r.node_id WHERE `+where+` AND r.system > 0)`, args...)
	if err != nil {
		return fail(err)
	}
	for brows.Next() {
		var id int64
		var data []byte
		if err := brows.Scan(&id, &data); err != nil {
			brows.Close()
			return fail(err)
		}
		blobs[id] = data
	}
	brows.Close()
	if err := brows.Err(); err != nil {
		return fail(err)
	}

	qrows, err := db.r.QueryContext(ctx, `SELECT n.seq, r.head, r.system, r.last, r.tail, r.size
		FROM requests r JOIN nodes n ON n.id = r.node_id WHERE `+where+` ORDER BY n.seq`, args...)
	if err != nil {
		return fail(err)
	}
	defer qrows.Close()
	for qrows.Next() {
		var p record.RequestParts
		var system int64
		if err := qrows.Scan(&p.Seq, &p.HeadID, &system, &p.Last, &p.TailID, &p.Size); err != nil {
			return fail(err)
		}
		p.Head, p.Tail = blobs[p.HeadID], blobs[p.TailID]
		switch {
		case system > 0:
			p.SystemID, p.System = system, blobs[system]
		case system < 0:
			p.SystemInChain = true
		}
		if got := int64(len(p.Head)+len(p.System)+len(p.Tail)) + size[p.Last]; got != p.Size {
			return fail(fmt.Errorf("the request of n%d has %d bytes in its parts, %d recorded: the database is damaged", p.Seq, got, p.Size))
		}
		if err := req(p); err != nil {
			return err
		}
	}
	return qrows.Err()
}
