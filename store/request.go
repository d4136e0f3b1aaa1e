package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

// A request body is stored as head || m0 || ,m1 || ,m2 ... || tail, where
// the m are the elements of its top-level "messages" array (each with the
// separator before it) and head/tail are the bytes around them. Heads and
// tails (model, tools, options) are content-addressed blobs; the messages
// form a chain whose links are shared by every request that repeats the same
// prefix: a conversation of N steps stores each message once and N small
// request rows, not N² messages.

// splitRequest cuts body into head, message pieces and tail. A body that is
// not a JSON object with a non-empty "messages" array comes back as one head.
func splitRequest(body []byte) (head []byte, msgs [][]byte, tail []byte) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return body, nil, nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return body, nil, nil
		}
		if key != "messages" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return body, nil, nil
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return body, nil, nil
		}
		var ends []int
		var first int
		for dec.More() {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return body, nil, nil
			}
			end := int(dec.InputOffset())
			if len(ends) == 0 {
				first = end - len(raw)
			}
			ends = append(ends, end)
		}
		if len(ends) == 0 {
			return body, nil, nil
		}
		start := first
		for _, end := range ends {
			msgs = append(msgs, body[start:end])
			start = end
		}
		return body[:first], msgs, body[start:]
	}
	return body, nil, nil
}

// pendingIDs are ids written in a transaction not yet committed; they enter
// the recorder's caches only after the commit.
type pendingIDs struct {
	blobs map[[32]byte]int64
	links map[link]int64
}

// link identifies a chain entry: the entry before it and its bytes' hash.
type link struct {
	prev int64
	hash [32]byte
}

func (rec *Recorder) remember(p *pendingIDs) {
	if p == nil {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.blobs) > 1<<16 { // bound the caches; the database stays the truth
		rec.blobs = map[[32]byte]int64{}
		rec.links = map[link]int64{}
	}
	for k, v := range p.blobs {
		rec.blobs[k] = v
	}
	for k, v := range p.links {
		rec.links[k] = v
	}
}

func (rec *Recorder) cached(h [32]byte) (int64, bool) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	id, ok := rec.blobs[h]
	return id, ok
}

func (rec *Recorder) cachedLink(k link) (int64, bool) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	id, ok := rec.links[k]
	return id, ok
}

func (rec *Recorder) storeRequest(ctx context.Context, tx *sql.Tx, nodeID int64, body []byte) (*pendingIDs, error) {
	p := &pendingIDs{blobs: map[[32]byte]int64{}, links: map[link]int64{}}
	blob := func(data []byte) (int64, error) {
		h := sha256.Sum256(data)
		if id, ok := rec.cached(h); ok {
			return id, nil
		}
		if id, ok := p.blobs[h]; ok {
			return id, nil
		}
		var id int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM blobs WHERE hash=?`, h[:]).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			var res sql.Result
			if res, err = tx.ExecContext(ctx, `INSERT INTO blobs (hash, data) VALUES (?,?)`, h[:], data); err == nil {
				id, err = res.LastInsertId()
			}
		}
		if err != nil {
			return 0, err
		}
		p.blobs[h] = id
		return id, nil
	}
	head, msgs, tail := splitRequest(body)
	headID, err := blob(head)
	if err != nil {
		return nil, err
	}
	tailID, err := blob(tail)
	if err != nil {
		return nil, err
	}
	var last int64
	for _, m := range msgs {
		h := sha256.Sum256(m)
		hkey := int64(binary.BigEndian.Uint64(h[:8]))
		k := link{last, h}
		if id, ok := rec.cachedLink(k); ok {
			last = id
			continue
		}
		if id, ok := p.links[k]; ok {
			last = id
			continue
		}
		var id int64
		err = tx.QueryRowContext(ctx, `SELECT id FROM chain WHERE prev=? AND hkey=? AND data=?`, last, hkey, m).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			var res sql.Result
			if res, err = tx.ExecContext(ctx, `INSERT INTO chain (prev, hkey, data) VALUES (?,?,?)`, last, hkey, m); err == nil {
				id, err = res.LastInsertId()
			}
		}
		if err != nil {
			return nil, err
		}
		p.links[k] = id
		last = id
	}
	sum := sha256.Sum256(body)
	if _, err := tx.ExecContext(ctx, `INSERT INTO requests (node_id, head, last, tail, size, sha256) VALUES (?,?,?,?,?,?)`,
		nodeID, headID, last, tailID, len(body), sum[:]); err != nil {
		return nil, err
	}
	return p, nil
}

// ErrNoRequest is returned by Request for a node that has no stored request.
var ErrNoRequest = errors.New("no recorded request")

// Request rebuilds the exact request body of llm node seq of run, and checks
// it against the stored SHA-256.
func (db *DB) Request(ctx context.Context, run string, seq int64) ([]byte, error) {
	var nodeID, head, last, tail, size int64
	var sum []byte
	err := db.r.QueryRowContext(ctx, `SELECT r.node_id, r.head, r.last, r.tail, r.size, r.sha256
		FROM requests r JOIN nodes n ON n.id = r.node_id WHERE n.run_id=? AND n.seq=?`, run, seq).
		Scan(&nodeID, &head, &last, &tail, &size, &sum)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("n%d: %w", seq, ErrNoRequest)
	}
	if err != nil {
		return nil, fmt.Errorf("load request of n%d: %w", seq, err)
	}
	out := make([]byte, 0, size)
	var hb []byte
	if err := db.r.QueryRowContext(ctx, `SELECT data FROM blobs WHERE id=?`, head).Scan(&hb); err != nil {
		return nil, fmt.Errorf("load request of n%d: %w", seq, err)
	}
	out = append(out, hb...)
	if last != 0 {
		// The walk is bounded by the recorded size: a damaged chain that
		// loops (prev pointing back) stops there, and the hash check below
		// says the file is damaged, instead of recursing for ever.
		rows, err := db.r.QueryContext(ctx, `WITH RECURSIVE c(id, prev, data, k, n) AS (
				SELECT id, prev, data, 0, length(data) FROM chain WHERE id = ?
				UNION ALL
				SELECT chain.id, chain.prev, chain.data, c.k + 1, c.n + length(chain.data) FROM chain JOIN c ON chain.id = c.prev
				WHERE c.n <= ?
			)
			SELECT data FROM c ORDER BY k DESC`, last, size)
		if err != nil {
			return nil, fmt.Errorf("load request of n%d: %w", seq, err)
		}
		for rows.Next() {
			var b []byte
			if err := rows.Scan(&b); err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, b...)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	var tb []byte
	if err := db.r.QueryRowContext(ctx, `SELECT data FROM blobs WHERE id=?`, tail).Scan(&tb); err != nil {
		return nil, fmt.Errorf("load request of n%d: %w", seq, err)
	}
	out = append(out, tb...)
	got := sha256.Sum256(out)
	if !bytes.Equal(got[:], sum) || int64(len(out)) != size {
		return nil, fmt.Errorf("request of n%d does not match its stored hash (%d bytes rebuilt, %d recorded): the database is damaged", seq, len(out), size)
	}
	return out, nil
}

// Response returns the stored response body of llm node seq, or nil.
func (db *DB) Response(ctx context.Context, run string, seq int64) ([]byte, error) {
	var b []byte
	err := db.r.QueryRowContext(ctx, `SELECT r.response FROM requests r JOIN nodes n ON n.id = r.node_id
		WHERE n.run_id=? AND n.seq=?`, run, seq).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return b, err
}
