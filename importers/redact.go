package importers

import (
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

func (x *redactor) body(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	return x.r.JSON(b, &x.tally)
}

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
		st.Handoff.Reason = x.text(st.Handoff.Reason)
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
