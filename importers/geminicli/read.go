package geminicli

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/importers"
)

// A chat file is read twice. The first pass (readChat) reads it a line at
// a time, as the CLI's records settle it: each message where its last
// write is (records are written again under the same id as they grow,
// "$set" lists add the messages not seen before) in the order the
// messages first came, and what the header and the patches say; it keeps
// no message, only where each one is (loc). The second (messages) reads
// each message from there in that order, when the conversation is
// recorded. A single-JSON file of earlier versions is read with a token
// decoder, a message at a time, both times. What stays in memory is a
// loc a message (24 bytes) while its chat is recorded; the first pass
// also holds each message's id and a hash of each text it read.

// loc is where a message's last write lies: the line of off and n bytes
// (trimmed, it is the record), and when the message came in a list, its
// index there. kind says what that write is.
type loc struct {
	off  int64
	n    int32
	elem int32 // -1: the line is the message; else its index in the line's list
	list uint8 // listSet or listHeader, when elem >= 0
	kind uint8 // kindUser, kindLLM, or 0
}

const (
	listSet    = 1 // a {"$set": {"messages": [...]}} patch's list
	listHeader = 2 // a header's "messages" (a single-JSON file on one line)

	kindUser = 1 // a user message
	kindLLM  = 2 // a model response (not the CLI's own words)
)

// chat is one session file read by the first pass: its header, what the
// patches said, and where each of its messages is.
type chat struct {
	path    string
	head    header
	started time.Time
	summary string
	// order is where each message is, in the order they came (a JSON
	// lines file).
	order []loc
	// whole: a single-JSON file, whose messages are the value of its
	// top-level key number key (-1: none), count of them typed.
	whole bool
	key   int
	count int
	// named is the sub-agent ids the invoke_agent calls of its messages
	// name; lastLLM and firstUser index the last model response and the
	// first user message among the messages (-1: none).
	named     map[string]bool
	lastLLM   int
	firstUser int
}

// seen is a message as the first pass reads it: message's fields of the
// same types (a record it takes is one message takes), its texts not kept
// but hashed (content) or passed over.
type seen struct {
	ID        string  `json:"id"`
	Timestamp string  `json:"timestamp"`
	Type      string  `json:"type"`
	Content   digest  `json:"content"`
	Tokens    *tokens `json:"tokens"`
	Model     string  `json:"model"`
	ToolCalls []struct {
		ID        string  `json:"id"`
		Name      string  `json:"name"`
		Args      ignored `json:"args"`
		Result    ignored `json:"result"`
		Status    string  `json:"status"`
		Timestamp string  `json:"timestamp"`
		AgentID   string  `json:"agentId"`
		Display   ignored `json:"resultDisplay"`
	} `json:"toolCalls"`
}

// ignored is a JSON value passed over (where message has a RawMessage,
// which takes any value).
type ignored struct{}

func (*ignored) UnmarshalJSON([]byte) error { return nil }

// digest is a JSON value's hash (its bytes, trimmed), in place of the
// value; the zero digest is a value absent.
type digest struct {
	sum uint64
	set bool
}

var digestSeed = maphash.MakeSeed()

func (d *digest) UnmarshalJSON(b []byte) error {
	d.sum, d.set = maphash.Bytes(digestSeed, bytes.TrimSpace(b)), true
	return nil
}

// key identifies a message by its type and content.
func key(typ string, content digest) uint64 {
	if !content.set {
		content.sum = maphash.Bytes(digestSeed, nil)
	}
	var h maphash.Hash
	h.SetSeed(digestSeed)
	h.WriteString(typ)
	h.WriteByte(0)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], content.sum)
	h.Write(b[:])
	return h.Sum64()
}

// kindOf says what message m is to the conversation: a user message, a
// model response, or neither.
func kindOf(m *seen) uint8 {
	switch {
	case m.Type == "user":
		return kindUser
	case m.Type == "gemini" && (m.Model != "" || m.Tokens != nil || len(m.ToolCalls) > 0):
		return kindLLM
	}
	return 0
}

// agentsOf lists the sub-agent ids m's invoke_agent calls name.
func agentsOf(m *seen) []string {
	if m.Type != "gemini" {
		return nil
	}
	var ids []string
	for _, tc := range m.ToolCalls {
		if tc.Name == delegation && tc.AgentID != "" {
			ids = append(ids, tc.AgentID)
		}
	}
	return ids
}

// readChat is the first pass over a session file: records upserted by id
// in the order they first came, $set patches applied.
func readChat(ctx context.Context, path string, opt importers.Options, report *importers.Report) (*chat, error) {
	f, err := importers.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := &chat{path: path, lastLLM: -1, firstUser: -1, key: -1}
	byID := map[string]int{}
	read := map[uint64]bool{}    // key of every message read
	agents := map[int][]string{} // the sub-agents the messages name, by index
	upsert := func(raw json.RawMessage, at loc) {
		var m seen
		if json.Unmarshal(raw, &m) != nil || m.Type == "" {
			report.Skip("message without a type")
			return
		}
		read[key(m.Type, m.Content)] = true
		at.kind = kindOf(&m)
		i, ok := byID[m.ID]
		if ok && m.ID != "" {
			c.order[i] = at
		} else {
			i = len(c.order)
			byID[m.ID] = i
			c.order = append(c.order, at)
		}
		if ids := agentsOf(&m); ids != nil {
			agents[i] = ids
		} else {
			delete(agents, i)
		}
	}
	// setAll takes a whole message list. A resumed run writes the history
	// again from memory: new timestamps, tool calls as content parts, an
	// id written twice; the records already read keep what they said and
	// only messages not seen before are added.
	setAll := func(list []json.RawMessage, at loc) {
		empty := len(c.order) == 0
		for k, raw := range list {
			at.elem = int32(k)
			if !empty {
				var m struct {
					ID      string `json:"id"`
					Type    string `json:"type"`
					Content digest `json:"content"`
				}
				if json.Unmarshal(raw, &m) == nil && m.ID != "" {
					if _, ok := byID[m.ID]; ok {
						continue
					}
					// a compression starts a chat whose kept history has new
					// ids: a message already read, written again, is a copy
					if read[key(m.Type, m.Content)] {
						continue
					}
				}
			}
			upsert(raw, at)
		}
	}
	lr := importers.NewLineReader(f)
	first := true
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		raw, n, unterminated, err := lr.Next()
		if err == io.EOF {
			break
		}
		if errors.Is(err, importers.ErrLineTooLong) {
			if perr := report.Problem(opt, path, n, err); perr != nil {
				return nil, perr
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		off, size := lr.Span()
		at := loc{off: off, n: int32(size), elem: -1}
		// which fields the record has (a map: keys match exactly)
		var probe map[string]ignored
		if err := json.Unmarshal(raw, &probe); err != nil {
			if unterminated {
				report.Skip("truncated last line")
				break
			}
			if first {
				// a single-JSON file spans lines: read it with a decoder
				return readWhole(ctx, f, path, report)
			}
			if perr := report.Problem(opt, path, n, fmt.Errorf("not a JSON object: %v", err)); perr != nil {
				return nil, perr
			}
			continue
		}
		_, isSet := probe["$set"]
		_, hasID := probe["sessionId"]
		_, hasType := probe["type"]
		switch {
		case isSet:
			set, err := setOf(raw)
			if err != nil {
				if perr := report.Problem(opt, path, n, fmt.Errorf("$set: %v", err)); perr != nil {
					return nil, perr
				}
				continue
			}
			if set.Messages != nil {
				at.list = listSet
				setAll(*set.Messages, at)
			}
			if set.Summary != nil {
				c.summary = *set.Summary
			}
		case hasID && !hasType:
			var h header
			if err := json.Unmarshal(raw, &h); err != nil {
				return nil, fmt.Errorf("%s:%d: session header: %v", path, n, err)
			}
			if first {
				list := h.Messages
				h.Messages = nil
				c.head = h
				c.started, _ = time.Parse(time.RFC3339Nano, h.StartTime)
				c.summary = h.Summary
				if list != nil {
					at.list = listHeader
					setAll(list, at)
				}
			}
			// a later header is a run that resumed the session
		case hasType:
			upsert(raw, at)
		default:
			report.Skip("record without a type")
		}
		first = false
	}
	if c.head.SessionID == "" {
		return nil, fmt.Errorf("%s: no session header: not a Gemini CLI session", path)
	}
	c.named = map[string]bool{}
	for _, ids := range agents {
		for _, id := range ids {
			c.named[id] = true
		}
	}
	c.index()
	return c, nil
}

// index finds the last model response and the first user message.
func (c *chat) index() {
	for i, l := range c.order {
		if l.kind == kindLLM {
			c.lastLLM = i
		}
		if l.kind == kindUser && c.firstUser < 0 {
			c.firstUser = i
		}
	}
}

// patch is a "$set" record's value.
type patch struct {
	Messages    *[]json.RawMessage `json:"messages"`
	LastUpdated string             `json:"lastUpdated"`
	Summary     *string            `json:"summary"`
}

// setOf reads the patch of a "$set" record.
func setOf(line []byte) (patch, error) {
	var set patch
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(line, &probe); err != nil {
		return set, err
	}
	err := json.Unmarshal(probe["$set"], &set)
	return set, err
}

// listOf reads the message list of line (a record read again in place)
// that list names.
func listOf(line []byte, list uint8) ([]json.RawMessage, error) {
	if list == listHeader {
		var h header
		if err := json.Unmarshal(line, &h); err != nil {
			return nil, err
		}
		return h.Messages, nil
	}
	set, err := setOf(line)
	if err != nil || set.Messages == nil {
		return nil, err
	}
	return *set.Messages, nil
}

// notSession is the error of a single-JSON file that is not a session.
func notSession(path string) error { return fmt.Errorf("%s: not a Gemini CLI session", path) }

// readWhole is the first pass over a single-JSON session file (Gemini
// CLI before JSON lines): {"sessionId", ..., "messages": [...]} read with
// a token decoder, a message at a time. The file is what json.Unmarshal
// into a header takes (the last "messages" key counts, keys match
// case-insensitively, anything after the object is an error); the
// header's other fields are decoded as one object of those keys.
func readWhole(ctx context.Context, f *os.File, path string, report *importers.Report) (*chat, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	c := &chat{path: path, whole: true, key: -1, lastLLM: -1, firstUser: -1, named: map[string]bool{}}
	dec := json.NewDecoder(f)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, notSession(path)
	}
	fields := []byte{'{'}
	untyped := 0
	for k := 0; dec.More(); k++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t, err := dec.Token()
		if err != nil {
			return nil, notSession(path)
		}
		name, _ := t.(string)
		if !strings.EqualFold(name, "messages") {
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return nil, notSession(path)
			}
			if len(fields) > 1 {
				fields = append(fields, ',')
			}
			kj, _ := json.Marshal(name)
			fields = append(append(append(fields, kj...), ':'), v...)
			continue
		}
		// a later "messages" replaces an earlier one
		c.key, c.count, untyped, c.lastLLM, c.firstUser = -1, 0, 0, -1, -1
		clear(c.named)
		t, err = dec.Token()
		if err != nil {
			return nil, notSession(path)
		}
		if t == nil {
			continue // null: no messages
		}
		if t != json.Delim('[') {
			return nil, notSession(path)
		}
		c.key = k
		for dec.More() {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, notSession(path)
			}
			var m seen
			if json.Unmarshal(raw, &m) != nil || m.Type == "" {
				untyped++
				continue
			}
			switch kindOf(&m) {
			case kindLLM:
				c.lastLLM = c.count
			case kindUser:
				if c.firstUser < 0 {
					c.firstUser = c.count
				}
			}
			for _, id := range agentsOf(&m) {
				c.named[id] = true
			}
			c.count++
		}
		if _, err := dec.Token(); err != nil {
			return nil, notSession(path)
		}
	}
	if _, err := dec.Token(); err != nil { // the object's end
		return nil, notSession(path)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, notSession(path)
	}
	var h header
	if err := json.Unmarshal(append(fields, '}'), &h); err != nil || h.SessionID == "" {
		return nil, notSession(path)
	}
	for range untyped {
		report.Skip("message without a type")
	}
	c.head, c.summary = h, h.Summary
	c.started, _ = time.Parse(time.RFC3339Nano, h.StartTime)
	return c, nil
}

// skipTo moves dec, at the start of a single-JSON file, to the value of
// its top-level key number key.
func skipTo(dec *json.Decoder, key int) error {
	if _, err := dec.Token(); err != nil {
		return err
	}
	for k := 0; k < key; k++ {
		if _, err := dec.Token(); err != nil {
			return err
		}
		if err := skip(dec); err != nil {
			return err
		}
	}
	_, err := dec.Token()
	return err
}

// skip moves dec past the value at hand a token at a time (an earlier
// "messages" list is not held whole).
func skip(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// messages is the second pass over a chat: its messages in order, each
// as last written, read one at a time from where the first pass found
// them.
type messages struct {
	c    *chat
	f    *os.File
	i    int
	buf  []byte
	dec  *json.Decoder // a single-JSON file's, within its list
	list []json.RawMessage
	from int64 // the line list was read from (-1: none)
}

func openMessages(c *chat) (*messages, error) {
	f, err := importers.OpenRegular(c.path)
	if err != nil {
		return nil, err
	}
	ms := &messages{c: c, f: f, from: -1}
	if c.whole && c.key >= 0 {
		ms.dec = json.NewDecoder(f)
		if err := skipTo(ms.dec, c.key); err == nil {
			_, err = ms.dec.Token() // the list's [
		}
		if err != nil {
			f.Close()
			return nil, ms.changed(err)
		}
	}
	return ms, nil
}

func (ms *messages) changed(err error) error {
	return fmt.Errorf("%s changed while it was read: %v", ms.c.path, err)
}

func (ms *messages) close() {
	if ms.f != nil {
		ms.f.Close()
		ms.f = nil
	}
	ms.list, ms.buf = nil, nil
}

// next returns the chat's next message, or false after the last.
func (ms *messages) next() (*message, bool, error) {
	c := ms.c
	if c.whole {
		for ms.dec != nil && ms.i < c.count && ms.dec.More() {
			var raw json.RawMessage
			if err := ms.dec.Decode(&raw); err != nil {
				return nil, false, ms.changed(err)
			}
			var m message
			if json.Unmarshal(raw, &m) != nil || m.Type == "" {
				continue // reported by the first pass
			}
			ms.i++
			m.at, _ = time.Parse(time.RFC3339Nano, m.Timestamp)
			return &m, true, nil
		}
		if ms.i < c.count {
			return nil, false, ms.changed(errors.New("fewer messages than before"))
		}
		return nil, false, nil
	}
	if ms.i >= len(c.order) {
		return nil, false, nil
	}
	l := c.order[ms.i]
	ms.i++
	raw, err := ms.read(l)
	if err != nil {
		return nil, false, ms.changed(err)
	}
	var m message
	if err := json.Unmarshal(raw, &m); err != nil || m.Type == "" {
		return nil, false, ms.changed(fmt.Errorf("no message at byte %d", l.off))
	}
	m.at, _ = time.Parse(time.RFC3339Nano, m.Timestamp)
	return &m, true, nil
}

// read reads the record at l again.
func (ms *messages) read(l loc) (json.RawMessage, error) {
	if l.elem >= 0 && l.off == ms.from {
		if int(l.elem) >= len(ms.list) {
			return nil, errors.New("a shorter list")
		}
		return ms.list[l.elem], nil
	}
	if cap(ms.buf) < int(l.n) {
		ms.buf = make([]byte, l.n)
	}
	b := ms.buf[:l.n]
	if _, err := ms.f.ReadAt(b, l.off); err != nil {
		return nil, err
	}
	line := bytes.TrimSpace(b)
	if l.elem < 0 {
		return line, nil
	}
	list, err := listOf(line, l.list)
	if err != nil {
		return nil, err
	}
	ms.list, ms.from = list, l.off
	if int(l.elem) >= len(list) {
		return nil, errors.New("a shorter list")
	}
	return list[l.elem], nil
}
