package importers

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/inspect-dev/inspect/internal/secret"
	"github.com/inspect-dev/inspect/record"
)

// redactor is where an imported text enters the store (DESIGN §11,
// Secrets): Write passes every text a session holds through it — each
// step's as the cursor first reads it, each conversation's system prompt
// and tools before a request is built from them, the tasks and the
// instruction files of the header, the errors of the nodes — so what is
// stored, shown, exported, served and re-sent by ask holds [redacted]
// where a secret was. Reconstructed requests are built from the redacted
// texts, so they are valid JSON whose stored hash is that of the bytes
// stored; a body the source itself gave is redacted as JSON.
type redactor struct {
	r     *secret.Redactor // the rules only: an import knows no key
	tally secret.Tally
	// done holds the redacted messages of the last bodies, by their
	// bytes' hash: a conversation's request repeats the one before it, so
	// each message is scanned once, not once per later request.
	done, prev map[[32]byte][]byte
	frames     map[[32]byte]bool // the bodies' other parts found clean
}

func (x *redactor) text(s string) string {
	if s == "" {
		return s
	}
	return x.r.Tally(s, &x.tally)
}

// json redacts a JSON text (a tool call's arguments) as JSON.
func (x *redactor) json(s string) string {
	if s == "" {
		return s
	}
	out := x.r.JSON([]byte(s), &x.tally)
	return string(out)
}

// body redacts a request or response body the source gave, as JSON. A
// body with a messages array is redacted message by message (each message
// a JSON value of its own, no secret spans two), the messages seen in the
// bodies before it taken as they were redacted then; the rest of the body
// (model, system, tools, parameters) is redacted with the messages left
// out and, when that changes it, the whole body is.
func (x *redactor) body(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	head, msgs, tail, ok := splitMessages(b)
	if !ok {
		return x.r.JSON(b, &x.tally)
	}
	frame := append(append([]byte{}, head...), tail...)
	fk := sha256.Sum256(frame)
	if !x.frames[fk] {
		if out := x.r.JSON(frame, &x.tally); !bytes.Equal(out, frame) {
			return x.r.JSON(b, &x.tally)
		}
		if x.frames == nil || len(x.frames) > 64 {
			x.frames = map[[32]byte]bool{}
		}
		x.frames[fk] = true // nothing to redact there
	}
	if x.done == nil {
		x.done = map[[32]byte][]byte{}
	}
	x.prev, x.done = x.done, make(map[[32]byte][]byte, len(msgs))
	out := append([]byte{}, head...)
	for i, m := range msgs {
		if i > 0 {
			out = append(out, ',')
		}
		k := sha256.Sum256(m)
		r, seen := x.prev[k]
		if !seen {
			r = x.r.JSON(m, &x.tally)
		}
		x.done[k] = r
		out = append(out, r...)
	}
	return append(out, tail...)
}

// splitMessages cuts a JSON object body with a top-level "messages" array
// into what comes before its first element, its elements and what comes
// after its last (head and tail join into the body without messages);
// false for any other body.
func splitMessages(b []byte) (head []byte, msgs [][]byte, tail []byte, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, nil, false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, nil, nil, false
		}
		if k != "messages" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil, nil, nil, false
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return nil, nil, nil, false
		}
		start := int(dec.InputOffset())
		end := start
		for dec.More() {
			var m json.RawMessage
			if dec.Decode(&m) != nil {
				return nil, nil, nil, false
			}
			msgs = append(msgs, m)
			end = int(dec.InputOffset())
		}
		if len(msgs) == 0 || !bytes.Equal(bytes.TrimLeft(b[start:end], " \t\r\n"), joined(msgs)) {
			return nil, nil, nil, false // spaces between the elements: not cut here
		}
		return b[:start], msgs, b[end:], true
	}
	return nil, nil, nil, false
}

func joined(msgs [][]byte) []byte { return bytes.Join(msgs, []byte{','}) }

// step redacts every text of st in place.
func (x *redactor) step(st *Step) {
	switch {
	case st.User != nil:
		st.User.Text = x.text(st.User.Text)
	case st.LLM != nil:
		l := st.LLM
		l.Content, l.Error = x.text(l.Content), x.text(l.Error)
		l.Request, l.Response = x.body(l.Request), x.body(l.Response)
	case st.Tool != nil:
		t := st.Tool
		t.Args, t.Result, t.Error = x.json(t.Args), x.text(t.Result), x.text(t.Error)
	case st.Handoff != nil:
		h := st.Handoff
		h.Reason, h.Error = x.text(h.Reason), x.text(h.Error)
		for i := range h.Tools {
			t := &h.Tools[i]
			t.Description = x.text(t.Description)
			if len(t.Parameters) > 0 {
				t.Parameters = json.RawMessage(x.body(t.Parameters))
			}
		}
	case st.Fork != nil:
		for _, b := range st.Fork.Branches {
			if b == nil {
				continue // Step.Check refuses it
			}
			b.Instructions, b.Args, b.Answer = x.text(b.Instructions), x.json(b.Args), x.text(b.Answer)
		}
	case st.Final != nil:
		st.Final.Text, st.Final.Error = x.text(st.Final.Text), x.text(st.Final.Error)
	case st.Compact != nil:
		st.Compact.Summary = x.text(st.Compact.Summary)
	}
}

// conversation redacts what a conversation gives every request of it:
// its system prompt and tool definitions.
func (x *redactor) conversation(c *Conversation) {
	c.System = x.text(c.System)
	for i := range c.Tools {
		t := &c.Tools[i]
		t.Description = x.text(t.Description)
		if len(t.Parameters) > 0 {
			t.Parameters = json.RawMessage(x.body(t.Parameters))
		}
	}
}

// tasks returns the session's tasks redacted (a copy: a live session's
// list grows as it is read).
func (x *redactor) tasks(ts []string) []string {
	if ts == nil {
		return nil
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = x.text(t)
	}
	return out
}

// project returns the snapshot with each file's content redacted and its
// hash that of the content stored.
func (x *redactor) project(p record.Project) record.Project {
	if len(p.Files) == 0 {
		return p
	}
	files := make([]record.File, len(p.Files))
	for i, f := range p.Files {
		if c := x.text(f.Content); c != f.Content {
			sum := sha256.Sum256([]byte(c))
			f.Content, f.SHA256 = c, hex.EncodeToString(sum[:])
		}
		files[i] = f
	}
	p.Files = files
	return p
}
