package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/inspect-dev/inspect/internal/jsonskip"
)

// A request body is stored as head || system || m1 || ,m2 ... || tail,
// where the m are the elements of its top-level "messages" array (each with
// the separator before it) and head/tail are the bytes around them. Heads,
// tails (model, tools, options) and a leading system message are
// content-addressed blobs; the other messages form a chain whose links are
// shared by every request that repeats the same prefix: a conversation of N
// steps stores each message once and N small request rows, not N² messages,
// and conversations of different agents (different system prompts) share
// the messages they have in common. A body without a leading system message
// keeps its first message in the chain (system = 0).
//
// Recording costs what a call adds: the recorder remembers, per
// conversation, the previous request's bytes up to its last message, the
// ids that store them and the SHA-256 state after them; a request that
// starts with those bytes only splits, hashes and stores what follows.
// Proving that it starts with them is the one pass over the whole request
// left (a memory comparison: some 50 µs a megabyte when the bytes are not
// in the CPU's caches); the stored hash is only as good as that proof, so
// it stays.

// splitRequest cuts body into head, message pieces and tail. A body that is
// not a JSON object with a non-empty "messages" array comes back as one head.
func splitRequest(body []byte) (head []byte, msgs [][]byte, tail []byte) {
	i := jsonskip.Space(body, 0)
	if i >= len(body) || body[i] != '{' {
		return body, nil, nil
	}
	i++
	for {
		i = jsonskip.Space(body, i)
		if i >= len(body) || body[i] != '"' {
			return body, nil, nil
		}
		keyEnd, ok := jsonskip.Value(body, i)
		if !ok {
			return body, nil, nil
		}
		key := body[i:keyEnd]
		i = jsonskip.Space(body, keyEnd)
		if i >= len(body) || body[i] != ':' {
			return body, nil, nil
		}
		i = jsonskip.Space(body, i+1)
		if string(key) == `"messages"` && i < len(body) && body[i] == '[' {
			first := jsonskip.Space(body, i+1)
			pieces, end, ok := scanElements(body, first, true)
			if !ok || len(pieces) == 0 {
				return body, nil, nil
			}
			return body[:first], pieces, body[end:]
		}
		if i, ok = jsonskip.Value(body, i); !ok {
			return body, nil, nil
		}
		i = jsonskip.Space(body, i)
		if i >= len(body) || body[i] != ',' {
			return body, nil, nil
		}
		i++
	}
}

// scanElements cuts the array elements that start at i (first: i is the
// first element, else each is preceded by its comma) into pieces, each with
// the separator and space before it, up to the closing bracket; end is the
// offset of the space or bracket after the last piece.
func scanElements(body []byte, i int, first bool) (pieces [][]byte, end int, ok bool) {
	for {
		j := jsonskip.Space(body, i)
		if j >= len(body) {
			return nil, 0, false
		}
		if body[j] == ']' {
			return pieces, i, true
		}
		if !first || len(pieces) > 0 {
			if body[j] != ',' {
				return nil, 0, false
			}
			j = jsonskip.Space(body, j+1)
		}
		e, ok := jsonskip.Value(body, j)
		if !ok {
			return nil, 0, false
		}
		pieces = append(pieces, body[i:e])
		i = e
	}
}

// isSystem reports whether msg (a message piece, no separator) is a message
// of role system.
func isSystem(msg []byte) bool {
	var m struct {
		Role string `json:"role"`
	}
	return json.Unmarshal(msg, &m) == nil && m.Role == "system"
}

// pendingIDs are ids written in a transaction not yet committed; they enter
// the recorder's caches only after the commit.
type pendingIDs struct {
	blobs map[[32]byte]int64
	links map[link]int64
	conv  *convKey
	state *convState
}

// link identifies a chain entry: the entry before it and its bytes' hash.
type link struct {
	prev int64
	hash [32]byte
}

// convKey names one conversation of a run: its fork and branch path.
type convKey struct {
	fork   int64
	branch string
}

// convState is what the recorder remembers of a conversation's last
// stored request.
type convState struct {
	prefix       []byte // the request up to the end of its last message
	head, system int64  // blob ids (system 0: none)
	last         int64  // chain id of the last message
	tail         []byte
	tailID       int64
	hash         []byte // SHA-256 state after prefix (encoding.BinaryMarshaler)
}

// maxConvs bounds the conversations the recorder remembers; a forgotten one
// is split in full on its next call and remembered again.
const maxConvs = 1024

func (rec *Recorder) remember(p *pendingIDs) {
	if p == nil {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.blobs) > 1<<16 || len(rec.links) > 1<<16 { // bound the caches; the database stays the truth
		rec.blobs = map[[32]byte]int64{}
		rec.links = map[link]int64{}
	}
	for k, v := range p.blobs {
		rec.blobs[k] = v
	}
	for k, v := range p.links {
		rec.links[k] = v
	}
	if p.conv != nil && p.state != nil {
		if len(rec.convs) >= maxConvs {
			clear(rec.convs)
		}
		rec.convs[*p.conv] = p.state
	}
}

// forget drops what the recorder remembers of a conversation that ended.
func (rec *Recorder) forget(k convKey) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	delete(rec.convs, k)
}

func (rec *Recorder) conv(k convKey) *convState {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.convs[k]
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

// requestWriter stores the parts of one request through e.
type requestWriter struct {
	e   execer
	rec *Recorder
	p   *pendingIDs
	// fresh is the chain id this request added last (0: none): a message
	// after it is new too.
	fresh int64
}

func (w *requestWriter) blob(data []byte) (int64, error) {
	if data == nil {
		data = []byte{} // an empty part, not NULL
	}
	h := sha256.Sum256(data)
	if id, ok := w.rec.cached(h); ok {
		return id, nil
	}
	if id, ok := w.p.blobs[h]; ok {
		return id, nil
	}
	id, err := w.e.queryID(stSelectBlob, h[:])
	if errors.Is(err, sql.ErrNoRows) {
		id, _, err = w.e.exec(stInsertBlob, h[:], data)
	}
	if err != nil {
		return 0, err
	}
	w.p.blobs[h] = id
	return id, nil
}

// link stores message m after chain entry prev (or finds it) and returns its id.
func (w *requestWriter) link(prev int64, m []byte) (int64, error) {
	h := sha256.Sum256(m)
	hkey := int64(binary.BigEndian.Uint64(h[:8]))
	k := link{prev, h}
	if prev == 0 || prev != w.fresh { // after this transaction's own link, nothing is there yet
		if id, ok := w.rec.cachedLink(k); ok {
			return id, nil
		}
		if id, ok := w.p.links[k]; ok {
			return id, nil
		}
		id, err := w.e.queryID(stSelectLink, prev, hkey, m)
		if err == nil {
			w.p.links[k] = id
			return id, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return 0, err
		}
	}
	id, _, err := w.e.exec(stInsertLink, prev, hkey, m)
	if err != nil {
		return 0, err
	}
	w.p.links[k] = id
	w.fresh = id
	return id, nil
}

// storeRequest stores body as the request of node nodeID (with response,
// nil while the call is open) of conversation k.
func (rec *Recorder) storeRequest(e execer, nodeID int64, k convKey, body, response []byte) (*pendingIDs, error) {
	w := &requestWriter{e: e, rec: rec, p: &pendingIDs{blobs: map[[32]byte]int64{}, links: map[link]int64{}}}
	st, err := rec.extend(w, k, body)
	if err != nil {
		return nil, err
	}
	if st == nil {
		if st, err = rec.split(w, body); err != nil {
			return nil, err
		}
	}
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(st.hash); err != nil {
		return nil, fmt.Errorf("internal error: hash state: %w", err)
	}
	h.Write(body[len(st.prefix):])
	sum := h.Sum(nil)
	if _, _, err := e.exec(stInsertRequest, nodeID, st.head, st.system, st.last, st.tailID, int64(len(body)), sum, response); err != nil {
		return nil, err
	}
	if st.last != 0 || st.system != 0 {
		w.p.conv, w.p.state = &k, st
	}
	return w.p, nil
}

// extend stores body as the previous request of conversation k plus what
// follows it, when body starts with that request's messages; nil when it
// does not (or nothing is remembered).
func (rec *Recorder) extend(w *requestWriter, k convKey, body []byte) (*convState, error) {
	prev := rec.conv(k)
	if prev == nil || len(body) <= len(prev.prefix) || !bytes.Equal(body[:len(prev.prefix)], prev.prefix) {
		return nil, nil
	}
	added, end, ok := scanElements(body, len(prev.prefix), false)
	if !ok {
		return nil, nil
	}
	st := &convState{prefix: body[:end], head: prev.head, system: prev.system, last: prev.last, tail: body[end:]}
	for _, m := range added {
		id, err := w.link(st.last, m)
		if err != nil {
			return nil, err
		}
		st.last = id
	}
	if bytes.Equal(st.tail, prev.tail) {
		st.tailID = prev.tailID
	} else {
		id, err := w.blob(st.tail)
		if err != nil {
			return nil, err
		}
		st.tailID = id
	}
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(prev.hash); err != nil {
		return nil, fmt.Errorf("internal error: hash state: %w", err)
	}
	h.Write(body[len(prev.prefix):end])
	var err error
	st.hash, err = h.(encoding.BinaryMarshaler).MarshalBinary()
	return st, err
}

// split stores body from scratch: head, system message, chain, tail.
func (rec *Recorder) split(w *requestWriter, body []byte) (*convState, error) {
	head, msgs, tail := splitRequest(body)
	st := &convState{prefix: body[:len(body)-len(tail)], tail: tail}
	var err error
	if st.head, err = w.blob(head); err != nil {
		return nil, err
	}
	if st.tailID, err = w.blob(tail); err != nil {
		return nil, err
	}
	if len(msgs) > 0 && isSystem(msgs[0]) {
		if st.system, err = w.blob(msgs[0]); err != nil {
			return nil, err
		}
		msgs = msgs[1:]
	}
	for _, m := range msgs {
		if st.last, err = w.link(st.last, m); err != nil {
			return nil, err
		}
	}
	h := sha256.New()
	h.Write(st.prefix)
	st.hash, err = h.(encoding.BinaryMarshaler).MarshalBinary()
	return st, err
}

// ErrNoRequest is returned by Request for a node that has no stored request.
var ErrNoRequest = errors.New("no recorded request")

// Request rebuilds the exact request body of llm node seq of run, and checks
// it against the stored SHA-256.
func (db *DB) Request(ctx context.Context, run string, seq int64) ([]byte, error) {
	var nodeID, head, system, last, tail, size int64
	var sum []byte
	err := db.r.QueryRowContext(ctx, `SELECT r.node_id, r.head, r.system, r.last, r.tail, r.size, r.sha256
		FROM requests r JOIN nodes n ON n.id = r.node_id WHERE n.run_id=? AND n.seq=?`, run, seq).
		Scan(&nodeID, &head, &system, &last, &tail, &size, &sum)
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
	if system > 0 {
		var sb []byte
		if err := db.r.QueryRowContext(ctx, `SELECT data FROM blobs WHERE id=?`, system).Scan(&sb); err != nil {
			return nil, fmt.Errorf("load request of n%d: %w", seq, err)
		}
		out = append(out, sb...)
	}
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

// RequestFrame returns the request of llm node seq without the messages
// after its system prompt: head || system message || tail, a JSON body with
// the same model, tools, options and system prompt and (at most) the system
// message in its list. It reads a few blobs, not the conversation: rules
// that look at what a call offered (tools, system prompt) read this. For a
// request recorded before schema v4 (system prompt in the chain) the chain's
// first message is taken when it is a system message.
func (db *DB) RequestFrame(ctx context.Context, run string, seq int64) ([]byte, error) {
	var system, last, size int64
	var head, sys, tail []byte
	err := db.r.QueryRowContext(ctx, `SELECT r.system, r.last, r.size, h.data, s.data, t.data
		FROM requests r JOIN nodes n ON n.id = r.node_id
		LEFT JOIN blobs h ON h.id = r.head LEFT JOIN blobs s ON s.id = r.system LEFT JOIN blobs t ON t.id = r.tail
		WHERE n.run_id=? AND n.seq=?`, run, seq).
		Scan(&system, &last, &size, &head, &sys, &tail)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("n%d: %w", seq, ErrNoRequest)
	}
	if err != nil {
		return nil, fmt.Errorf("load request of n%d: %w", seq, err)
	}
	if system == -1 && last != 0 {
		// Recorded before v4: the oldest link of the chain, walked within
		// the recorded size, when it is a system message.
		var first []byte
		err := db.r.QueryRowContext(ctx, `WITH RECURSIVE c(id, prev, k) AS (
				SELECT id, prev, 0 FROM chain WHERE id = ?
				UNION ALL
				SELECT chain.id, chain.prev, c.k + 1 FROM chain JOIN c ON chain.id = c.prev WHERE c.k < ?
			)
			SELECT chain.data FROM c JOIN chain ON chain.id = c.id WHERE c.prev = 0`, last, size).Scan(&first)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("load request of n%d: %w", seq, err)
		}
		if isSystem(first) {
			sys = first
		}
	}
	out := make([]byte, 0, len(head)+len(sys)+len(tail))
	return append(append(append(out, head...), sys...), tail...), nil
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
