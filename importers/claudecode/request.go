package claudecode

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sort"
	"strings"
	"unicode/utf16"

	json "github.com/goccy/go-json"
	"github.com/inspect-dev/inspect/internal/jsonskip"
)

// Exact requests (DESIGN §18). Claude Code 2.1.3xx records what each model
// call sent, apart from its transcript lines:
//
//   - api-request-shape: the system prompt and the tools, once per distinct
//     pair (shapeHash);
//   - api-request-blob: one message as sent, once per distinct message
//     (hash: the SHA-256 of its JSON with sorted keys) — a message the
//     transcript already holds (a user or assistant line, or consecutive
//     ones merged) is not written again;
//   - api-request: one call — its parameters (model, betas, max_tokens,
//     thinking, …), the earlier call it extends (base, keeping its first
//     keep messages), the hashes of the messages it adds (tail), where
//     cache_control goes (cacheControl paths), and requestDigest, the
//     SHA-256 of the sorted-key JSON of the body without its billing block,
//     metadata and stream flag, betas included.
//
// The body is rebuilt as Claude Code sends it: model, messages (a user or
// system message of one plain text block as a string), system (the billing
// block, then the shape's), tools, the parameters but betas (a header), and
// "stream":true; cache_control where the paths say. It is used only when
// its digest is requestDigest. It lacks metadata.user_id, whose device and
// account ids the session does not keep. The billing block is derived as
// 2.1.332 writes it (cc_version with the fingerprint of the first prompt,
// cc_entrypoint, cc_is_subagent); the requestDigest does not cover it.

// apiState is one transcript's api-request records read so far.
type apiState struct {
	shapes map[string]*apiShape
	blobs  map[string]*apiMsg // since the previous api-request
	// cands are the messages of the lines since the previous api-request
	// (each line's, and consecutive lines' merged), by hash: a tail may
	// name one instead of a blob.
	cands map[string]*apiMsg
	asst  *apiMsg // the assistant message being read (its lines merged)
	asID  string
	user  *apiMsg // the user lines since the last assistant line, merged
	// reqs are the latest calls' messages, by api-request id (a few kept:
	// a call extends the one before it).
	reqs  map[string][]*apiMsg
	order []string
	// pending is the latest call not yet taken by a response; byID the
	// calls a response may name (requestRef), until taken.
	pending *apiReq
	byID    map[string]*apiReq
}

// apiShape is a system prompt and tools as sent.
type apiShape struct {
	system                  [][]byte // the system array's elements
	tools                   [][]byte // the tools array's elements; nil: no tools key
	canonSystem, canonTools [][]byte
}

// apiMsg is one message as sent.
type apiMsg struct {
	members []member // its keys in order (role, content)
	role    string
	blocks  [][]byte // content's blocks, when content is a list
	str     bool     // content is a string
	// plain: a user or system message of one text block with nothing but
	// type and text, sent as a string when no cache_control goes on it.
	plain []byte // the text's JSON string
	// canon is its sorted-key JSON, content as a list (a string as one
	// text block): the form requestDigest covers; hashes are its own
	// form's (hashes), and for a string content that list form's too.
	canon  []byte
	hashes []string
}

// apiReq is one call's request, ready to be written once its response
// takes it.
type apiReq struct {
	id       string
	params   []member
	shape    *apiShape
	msgs     []*apiMsg
	cc       []cacheMark
	billing  string
	digestOK bool
}

type member struct {
	key string
	val []byte
}

type cacheMark struct {
	path []any // "system"|"messages"|"tools", index, ["content", index]
	val  []byte
}

func newAPIState() *apiState {
	return &apiState{shapes: map[string]*apiShape{}, blobs: map[string]*apiMsg{}, cands: map[string]*apiMsg{},
		reqs: map[string][]*apiMsg{}, byID: map[string]*apiReq{}}
}

// apiRecord is the part of an api-* record the rebuild reads.
type apiRecord struct {
	Type         string          `json:"type"`
	ShapeHash    string          `json:"shapeHash"`
	Shape        json.RawMessage `json:"shape"`
	Hash         string          `json:"hash"`
	Message      json.RawMessage `json:"message"`
	ID           string          `json:"id"`
	Version      string          `json:"version"`
	QuerySource  string          `json:"querySource"`
	Params       json.RawMessage `json:"params"`
	Base         string          `json:"base"`
	Keep         int             `json:"keep"`
	Tail         []string        `json:"tail"`
	CacheControl []struct {
		Path  []any           `json:"path"`
		Value json.RawMessage `json:"value"`
	} `json:"cacheControl"`
	Digest string `json:"requestDigest"`
}

// record reads one api-request-shape, api-request-blob or api-request line.
func (a *apiState) record(line []byte, cv *conv) {
	var rec apiRecord
	if json.Unmarshal(line, &rec) != nil {
		cv.rep.Skip(rec.Type + " not read")
		return
	}
	switch rec.Type {
	case "api-request-shape":
		var sh struct {
			System json.RawMessage `json:"system"`
			Tools  json.RawMessage `json:"tools"`
		}
		if json.Unmarshal(bytes.Clone(rec.Shape), &sh) != nil || rec.ShapeHash == "" {
			return
		}
		s := &apiShape{}
		var ok bool
		if s.system, ok = elems(sh.System); !ok {
			return
		}
		if len(sh.Tools) > 0 {
			if s.tools, ok = elems(sh.Tools); !ok {
				return
			}
			if s.tools == nil {
				s.tools = [][]byte{}
			}
		}
		for _, e := range s.system {
			s.canonSystem = append(s.canonSystem, canonical(e))
		}
		for _, e := range s.tools {
			s.canonTools = append(s.canonTools, canonical(e))
		}
		a.shapes[rec.ShapeHash] = s
	case "api-request-blob":
		if m := newAPIMsg(bytes.Clone(rec.Message)); m != nil && rec.Hash != "" {
			a.blobs[rec.Hash] = m
		}
	case "api-request":
		a.request(&rec, cv)
	}
}

// request rebuilds one call's request from the records read before it.
func (a *apiState) request(rec *apiRecord, cv *conv) {
	fail := func(why string) {
		cv.rep.Skip("api-request not rebuilt: " + why)
		a.pending = nil
	}
	shape := a.shapes[rec.ShapeHash]
	if shape == nil {
		fail("its shape is not in the file")
		return
	}
	var msgs []*apiMsg
	if rec.Keep > 0 {
		base, ok := a.reqs[rec.Base]
		if !ok || len(base) < rec.Keep {
			fail("the call it extends is not in the file")
			return
		}
		msgs = append(msgs, base[:rec.Keep]...)
	}
	for _, h := range rec.Tail {
		m := a.blobs[h]
		if m == nil {
			m = a.cands[h]
		}
		if m == nil {
			m = a.earlier(h)
		}
		if m == nil {
			fail("a message it names is not in the file")
			return
		}
		msgs = append(msgs, m)
	}
	clear(a.cands) // each is in this call's messages now, when it names it
	clear(a.blobs)
	a.remember(rec.ID, msgs)
	params, ok := members(bytes.Clone(rec.Params))
	if !ok {
		fail("its parameters are not an object")
		return
	}
	r := &apiReq{id: rec.ID, params: params, shape: shape, msgs: msgs}
	for _, c := range rec.CacheControl {
		r.cc = append(r.cc, cacheMark{path: c.Path, val: bytes.Clone(c.Value)})
	}
	r.billing = billing(rec.Version, cv.entrypoint, cv.sub || strings.HasPrefix(rec.QuerySource, "agent:"), msgs)
	digest, ok := r.digest()
	if !ok || digest != rec.Digest {
		fail("the rebuilt body is not the one its digest names")
		return
	}
	r.digestOK = true
	a.pending = r
	if r.id != "" {
		a.byID[r.id] = r
	}
}

// earlier finds a message of the calls remembered by its hash (a call
// that starts over, resuming a sub-agent, names them again).
func (a *apiState) earlier(h string) *apiMsg {
	for i := len(a.order) - 1; i >= 0; i-- {
		for _, m := range a.reqs[a.order[i]] {
			if slices.Contains(m.hashes, h) {
				return m
			}
		}
	}
	return nil
}

// remember keeps a call's messages for the calls that extend it: the last
// few only, so memory holds about one context's worth.
func (a *apiState) remember(id string, msgs []*apiMsg) {
	if id == "" {
		return
	}
	a.reqs[id] = msgs
	a.order = append(a.order, id)
	if len(a.order) > 8 {
		delete(a.reqs, a.order[0])
		a.order = a.order[1:]
	}
}

// take hands the request of the response starting now to it: the call it
// names (requestRef), else the latest one not taken yet.
func (a *apiState) take(ref string) *apiReq {
	r := a.byID[ref]
	if r == nil {
		r = a.pending
	}
	if r == nil {
		return nil
	}
	delete(a.byID, r.id)
	if a.pending == r {
		a.pending = nil
	}
	if len(a.byID) > 16 { // calls no response took (retried, failed)
		clear(a.byID)
	}
	return r
}

// line notes a transcript line's message as one a later call may name:
// an assistant line (merged with the earlier lines of its response) or a
// user line (alone, and merged with the user lines since the last
// assistant line).
func (a *apiState) line(e *entry) {
	if e.Message == nil || len(e.Message.Content) == 0 {
		return
	}
	content := e.Message.Content
	switch e.Type {
	case "assistant":
		a.user = nil
		bs, ok := elems(content)
		if !ok || bs == nil {
			return
		}
		if a.asst == nil || a.asID != e.Message.ID || e.Message.ID == "" {
			a.asst, a.asID = &apiMsg{role: "assistant"}, e.Message.ID
		}
		a.asst = a.asst.with(bs)
		a.cand(a.asst)
	case "user":
		a.asst = nil
		if m := newAPIMsg(buildMsg("user", content)); m != nil {
			a.cand(m)
		}
		bs, ok := elems(content)
		if !ok {
			return
		}
		if bs == nil { // a string: one text block
			bs = [][]byte{append(append([]byte(`{"type":"text","text":`), bytes.TrimSpace(content)...), '}')}
		}
		if a.user == nil {
			a.user = &apiMsg{role: "user"}
		}
		a.user = a.user.with(bs)
		a.cand(a.user)
	}
}

func (a *apiState) cand(m *apiMsg) {
	if len(a.cands) > 4096 { // a file whose calls name none of them
		clear(a.cands)
	}
	for _, h := range m.hashes {
		a.cands[h] = m
	}
}

// with is m with more content blocks (a new message: calls that named m keep it).
func (m *apiMsg) with(bs [][]byte) *apiMsg {
	blocks := append(append([][]byte{}, m.blocks...), cloneAll(bs)...)
	return newAPIMsg(buildList(m.role, blocks))
}

func cloneAll(bs [][]byte) [][]byte {
	out := make([][]byte, len(bs))
	for i, b := range bs {
		out[i] = bytes.Clone(b)
	}
	return out
}

// buildMsg is {"role":R,"content":C}.
func buildMsg(role string, content []byte) []byte {
	b := []byte(`{"role":`)
	b = appendJSString(b, role)
	b = append(b, `,"content":`...)
	return append(append(b, bytes.TrimSpace(content)...), '}')
}

func buildList(role string, blocks [][]byte) []byte {
	return buildMsg(role, append(append([]byte{'['}, bytes.Join(blocks, []byte{','})...), ']'))
}

// newAPIMsg reads a message as sent; nil when it is not one.
func newAPIMsg(raw []byte) *apiMsg {
	ms, ok := members(raw)
	if !ok {
		return nil
	}
	m := &apiMsg{members: ms}
	for _, mb := range ms {
		switch mb.key {
		case "role":
			_ = json.Unmarshal(mb.val, &m.role)
		case "content":
			if len(mb.val) > 0 && mb.val[0] == '"' {
				m.str = true
				continue
			}
			if m.blocks, ok = elems(mb.val); !ok {
				return nil
			}
		}
	}
	if (m.role == "user" || m.role == "system") && len(m.blocks) == 1 {
		if bm, ok := members(m.blocks[0]); ok && len(bm) == 2 {
			var typ string
			for _, x := range bm {
				if x.key == "type" {
					_ = json.Unmarshal(x.val, &typ)
				}
			}
			for _, x := range bm {
				if x.key == "text" && typ == "text" && len(x.val) > 0 && x.val[0] == '"' {
					m.plain = x.val
				}
			}
		}
	}
	m.canon = canonical(raw)
	m.hashes = []string{hexSum(m.canon)}
	if m.str {
		var list []byte
		for _, mb := range m.members {
			if mb.key == "content" {
				list = append(append([]byte(`[{"type":"text","text":`), mb.val...), "}]"...)
			}
		}
		m.canon = canonical(m.rebuilt(list))
		m.hashes = append(m.hashes, hexSum(m.canon))
	}
	return m
}

// rebuilt is m's JSON with content replaced.
func (m *apiMsg) rebuilt(content []byte) []byte {
	b := []byte{'{'}
	for k, mb := range m.members {
		if k > 0 {
			b = append(b, ',')
		}
		b = appendJSString(b, mb.key)
		b = append(b, ':')
		if mb.key == "content" {
			b = append(b, content...)
		} else {
			b = append(b, mb.val...)
		}
	}
	return append(b, '}')
}

// body is the request as Claude Code sent it, metadata.user_id left out.
func (r *apiReq) body() []byte {
	var b bytes.Buffer
	b.WriteString(`{"model":`)
	b.Write(r.param("model"))
	b.WriteString(`,"messages":[`)
	for i, m := range r.msgs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(r.message(i, m))
	}
	b.WriteString(`],"system":[`)
	bill := []byte(`{"type":"text","text":`)
	bill = appendJSString(bill, r.billing)
	b.Write(append(bill, '}'))
	for i, e := range r.shape.system {
		b.WriteByte(',')
		b.Write(withCache(e, r.mark("system", i)))
	}
	b.WriteByte(']')
	if r.shape.tools != nil {
		b.WriteString(`,"tools":[`)
		for i, e := range r.shape.tools {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(withCache(e, r.mark("tools", i)))
		}
		b.WriteByte(']')
	}
	for _, p := range r.params {
		if p.key == "model" || p.key == "betas" {
			continue
		}
		b.WriteByte(',')
		b.Write(appendJSString(nil, p.key))
		b.WriteByte(':')
		b.Write(p.val)
	}
	b.WriteString(`,"stream":true}`)
	return b.Bytes()
}

// message is message i as sent: with cache_control on the blocks the
// paths name, else a plain one as a string.
func (r *apiReq) message(i int, m *apiMsg) []byte {
	var marks map[int][]byte
	for _, c := range r.cc {
		if len(c.path) == 4 && c.path[0] == "messages" && index(c.path[1]) == i && c.path[2] == "content" {
			if marks == nil {
				marks = map[int][]byte{}
			}
			marks[index(c.path[3])] = c.val
		}
	}
	var b []byte
	b = append(b, '{')
	for k, mb := range m.members {
		if k > 0 {
			b = append(b, ',')
		}
		b = appendJSString(b, mb.key)
		b = append(b, ':')
		switch {
		case mb.key != "content" || m.str:
			b = append(b, mb.val...)
		case marks == nil && m.plain != nil:
			b = append(b, m.plain...)
		default:
			b = append(b, '[')
			for j, blk := range m.blocks {
				if j > 0 {
					b = append(b, ',')
				}
				b = append(b, withCache(blk, marks[j])...)
			}
			b = append(b, ']')
		}
	}
	return append(b, '}')
}

// mark is the cache_control value a path puts on element i of the body's
// key array ("system", "tools"), or nil.
func (r *apiReq) mark(key string, i int) []byte {
	for _, c := range r.cc {
		if len(c.path) == 2 && c.path[0] == key && index(c.path[1]) == i {
			return c.val
		}
	}
	return nil
}

func (r *apiReq) param(key string) []byte {
	for _, p := range r.params {
		if p.key == key {
			return p.val
		}
	}
	return []byte("null")
}

// digest is the SHA-256 Claude Code writes as requestDigest: of the
// sorted-key JSON of the request before its billing block, metadata and
// stream flag are added, with its betas.
func (r *apiReq) digest() (string, bool) {
	for _, c := range r.cc { // every path must name a block the request has
		if !r.marks(c.path) {
			return "", false
		}
	}
	parts := map[string][]byte{}
	for _, p := range r.params {
		if p.key != "betas" {
			parts[p.key] = canonical(p.val)
		}
	}
	parts["betas"] = canonical(r.param("betas"))
	var msgs [][]byte
	for i, m := range r.msgs {
		c := m.canon
		for _, mk := range r.cc {
			if len(mk.path) == 4 && mk.path[0] == "messages" && index(mk.path[1]) == i {
				c = canonical(r.message(i, m))
				break
			}
		}
		msgs = append(msgs, c)
	}
	parts["messages"] = canonArray(msgs)
	sys := append([][]byte{}, r.shape.canonSystem...)
	for i := range sys {
		if v := r.mark("system", i); v != nil {
			sys[i] = canonical(withCache(r.shape.system[i], v))
		}
	}
	parts["system"] = canonArray(sys)
	if r.shape.tools != nil {
		tools := append([][]byte{}, r.shape.canonTools...)
		for i := range tools {
			if v := r.mark("tools", i); v != nil {
				tools[i] = canonical(withCache(r.shape.tools[i], v))
			}
		}
		parts["tools"] = canonArray(tools)
	}
	keys := make([]string, 0, len(parts))
	for k := range parts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	h.Write([]byte{'{'})
	for i, k := range keys {
		if i > 0 {
			h.Write([]byte{','})
		}
		h.Write(appendJSString(nil, k))
		h.Write([]byte{':'})
		h.Write(parts[k])
	}
	h.Write([]byte{'}'})
	return hex.EncodeToString(h.Sum(nil)), true
}

// marks reports whether a cacheControl path names a block of the request.
func (r *apiReq) marks(path []any) bool {
	switch {
	case len(path) == 2 && path[0] == "system":
		i := index(path[1])
		return i >= 0 && i < len(r.shape.system)
	case len(path) == 2 && path[0] == "tools":
		i := index(path[1])
		return i >= 0 && i < len(r.shape.tools)
	case len(path) == 4 && path[0] == "messages" && path[2] == "content":
		i, j := index(path[1]), index(path[3])
		return i >= 0 && i < len(r.msgs) && !r.msgs[i].str && j >= 0 && j < len(r.msgs[i].blocks)
	}
	return false
}

func index(v any) int {
	if f, ok := v.(float64); ok && f == float64(int(f)) {
		return int(f)
	}
	return -1
}

// withCache is JSON object o with a cache_control member added (o itself
// when v is nil).
func withCache(o, v []byte) []byte {
	if v == nil {
		return o
	}
	o = bytes.TrimSpace(o)
	b := append([]byte{}, o[:len(o)-1]...)
	if len(bytes.TrimSpace(o[1:len(o)-1])) > 0 {
		b = append(b, ',')
	}
	b = append(b, `"cache_control":`...)
	return append(append(b, compact(v)...), '}')
}

func compact(v []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}

// billing is the billing block's text 2.1.332 sends first in system:
// cc_version is the version and a fingerprint of the first prompt (the
// SHA-256 of a salt, its 5th, 8th and 21st UTF-16 units and the version),
// cc_entrypoint how Claude Code was started, cc_is_subagent on a
// sub-agent's calls.
func billing(version, entrypoint string, sub bool, msgs []*apiMsg) string {
	first := ""
	if len(msgs) > 0 {
		first = firstPrompt(msgs[0])
	}
	units := utf16.Encode([]rune(first))
	var chars []uint16
	for _, i := range []int{4, 7, 20} {
		if i < len(units) {
			chars = append(chars, units[i])
		} else {
			chars = append(chars, '0')
		}
	}
	sum := sha256.Sum256([]byte("59cf53e54c78" + string(utf16.Decode(chars)) + version))
	s := "x-anthropic-billing-header: cc_version=" + version + "." + hex.EncodeToString(sum[:])[:3] + "; cc_entrypoint=" + entrypoint + ";"
	if sub {
		s += " cc_is_subagent=true;"
	}
	return s
}

// firstPrompt is a message's first text that is not a system reminder.
func firstPrompt(m *apiMsg) string {
	var texts []string
	for _, mb := range m.members {
		if mb.key != "content" {
			continue
		}
		if m.str {
			var s string
			_ = json.Unmarshal(mb.val, &s)
			texts = append(texts, s)
		}
	}
	for _, blk := range m.blocks {
		var b struct{ Type, Text string }
		if json.Unmarshal(blk, &b) == nil && b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	for _, t := range texts {
		if !strings.HasPrefix(t, "<system-reminder>") {
			return t
		}
	}
	return ""
}

// The JSON the records hold is JavaScript's JSON.stringify: compact, keys
// in insertion order, strings escaped only where JSON must. Hashes and
// digests are of its sorted-key form.

// canonical is v's JSON with every object's keys sorted, written as
// JSON.stringify writes it; v itself when it does not parse.
func canonical(v []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if dec.Decode(&x) != nil {
		return v
	}
	return appendCanon(nil, x)
}

func appendCanon(b []byte, x any) []byte {
	switch v := x.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case json.Number:
		return append(b, v...)
	case string:
		return appendJSString(b, v)
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanon(b, e)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSString(b, k)
			b = append(b, ':')
			b = appendCanon(b, v[k])
		}
		return append(b, '}')
	}
	return append(b, "null"...)
}

func canonArray(es [][]byte) []byte {
	return append(append([]byte{'['}, bytes.Join(es, []byte{','})...), ']')
}

// appendJSString writes s as JSON.stringify does: quotes, backslashes and
// control characters escaped (\b \f \n \r \t, else \u00xx), nothing else.
func appendJSString(b []byte, s string) []byte {
	const hexd = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			b = append(b, '\\', '"')
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// members cuts a JSON object into its members in order; false when raw is
// not an object.
func members(raw []byte) ([]member, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '{' {
		return nil, false
	}
	var out []member
	i := jsonskip.Space(raw, 1)
	if i < len(raw) && raw[i] == '}' {
		return out, true
	}
	for i < len(raw) {
		e, ok := jsonskip.Value(raw, i)
		if !ok || raw[i] != '"' {
			return nil, false
		}
		var key string
		if json.Unmarshal(raw[i:e], &key) != nil {
			return nil, false
		}
		i = jsonskip.Space(raw, e)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = jsonskip.Space(raw, i+1)
		e, ok = jsonskip.Value(raw, i)
		if !ok {
			return nil, false
		}
		out = append(out, member{key, raw[i:e]})
		i = jsonskip.Space(raw, e)
		if i < len(raw) && raw[i] == '}' {
			return out, true
		}
		if i >= len(raw) || raw[i] != ',' {
			return nil, false
		}
		i = jsonskip.Space(raw, i+1)
	}
	return nil, false
}

// elems cuts a JSON array into its elements; nil, true for a string (not
// an array); false for anything else.
func elems(raw []byte) ([][]byte, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		return nil, true
	}
	if len(raw) < 2 || raw[0] != '[' {
		return nil, false
	}
	out := [][]byte{}
	i := jsonskip.Space(raw, 1)
	if i < len(raw) && raw[i] == ']' {
		return out, true
	}
	for i < len(raw) {
		e, ok := jsonskip.Value(raw, i)
		if !ok {
			return nil, false
		}
		out = append(out, raw[i:e])
		i = jsonskip.Space(raw, e)
		if i < len(raw) && raw[i] == ']' {
			return out, true
		}
		if i >= len(raw) || raw[i] != ',' {
			return nil, false
		}
		i = jsonskip.Space(raw, i+1)
	}
	return nil, false
}
