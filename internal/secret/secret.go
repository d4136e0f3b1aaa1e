// Package secret keeps credentials out of everything inspect stores,
// prints or sends back to a model (DESIGN §11, Secrets). A Redactor
// replaces by [redacted]:
//
//   - the keys it was given (the API key, a base URL's password), as they
//     are and in the escaped forms a provider may echo them in: JSON
//     (\u0073k-…, any character escaped), URL, HTML;
//   - every secret a rule finds: gitleaks' rule set (cloud, VCS, chat,
//     payment and model-provider keys, PEM private keys, JWTs and its
//     generic key = value rule, with its entropy checks and allowlists)
//     and ours for what it lacks (Authorization, api-key and x-api-key
//     header values, a URL's user:password, any sk-… key).
//
// It is the one boundary for text that enters inspect from outside: a
// provider's response and error bodies (the runtime and inspect ask), a
// tool's result before it is recorded and sent back to the model, and
// every text an importer or the OTLP receiver records. JSON stays valid:
// the mark holds no quote or backslash, a match that would cut a JSON
// string is redacted inside the decoded string instead, and each count
// says how many values were replaced.
package secret

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"html"
	"html/template"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// Mark is what a secret is replaced by.
const Mark = "[redacted]"

// minSecret is the shortest key treated as a secret: a local server takes
// any non-empty key ("x"), and replacing every "x" would wreck the text.
const minSecret = 8

// Redactor replaces known secrets and every secret its rules find. The
// zero value and nil apply the rules only. It is safe for concurrent use.
type Redactor struct {
	forms   []string         // each secret and its escaped forms, longest first
	escaped []*regexp.Regexp // each secret with any character \u-escaped
}

// New returns a Redactor for the given secrets (API keys, passwords);
// empty and very short ones are ignored.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	add := func(s string) {
		if len(s) >= minSecret && !seen[s] {
			seen[s] = true
			r.forms = append(r.forms, s)
		}
	}
	for _, s := range secrets {
		if len(s) < minSecret {
			continue
		}
		add(s)
		if b, err := json.Marshal(s); err == nil {
			add(strings.Trim(string(b), `"`)) // as a JSON string holds it
		}
		add(url.QueryEscape(s))
		add(url.PathEscape(s))
		add(html.EscapeString(s))
		add(template.HTMLEscapeString(s))
		r.escaped = append(r.escaped, escapedForm(s))
	}
	// Longest first, so a form containing another is replaced whole.
	sort.SliceStable(r.forms, func(i, j int) bool { return len(r.forms[i]) > len(r.forms[j]) })
	return r
}

// escapedForm matches s with any of its characters written as a JSON
// \u escape (either case of hex digit; behind more backslashes when the
// JSON is itself held in a JSON string) or a slash as \/, as a provider
// echoing a key in JSON may write it.
func escapedForm(s string) *regexp.Regexp {
	var b strings.Builder
	for _, c := range s {
		b.WriteString("(?:" + regexp.QuoteMeta(string(c)))
		if c == '/' {
			b.WriteString(`|\\+/`) // JSON may write a slash \/
		}
		if c < 0x10000 {
			// one backslash, or more: a JSON text held in a JSON string
			b.WriteString(`|\\+u`)
			for _, h := range fmt.Sprintf("%04x", c) {
				if h >= 'a' {
					b.WriteString("[" + string(h) + strings.ToUpper(string(h)) + "]")
				} else {
					b.WriteRune(h)
				}
			}
		}
		b.WriteString(")")
	}
	return regexp.MustCompile(b.String())
}

// String returns s with every secret replaced by Mark.
func (r *Redactor) String(s string) string {
	out, _ := r.redact(s, nil)
	return out
}

// Count is String, also saying how many values it replaced.
func (r *Redactor) Count(s string) (string, int) {
	return r.redact(s, nil)
}

// Tally counts the secrets a Redactor replaced: each distinct value once
// (a key pasted in a turn and echoed in three results is one secret), by
// the rule that found it first (RuleKnown, RuleHeader, RuleURL, RuleSKKey
// or a gitleaks rule id). The zero value is ready; a nil *Tally counts
// nothing. It is not safe for concurrent use.
type Tally struct {
	seed maphash.Seed
	seen map[uint64]string // a value's hash → its rule
}

// add notes one value replaced.
func (t *Tally) add(rule, value string) {
	if t == nil {
		return
	}
	if t.seen == nil {
		t.seed, t.seen = maphash.MakeSeed(), map[uint64]string{}
	}
	if h := maphash.String(t.seed, value); t.seen[h] == "" {
		t.seen[h] = rule
	}
}

// Total is how many distinct values were replaced.
func (t *Tally) Total() int {
	if t == nil {
		return 0
	}
	return len(t.seen)
}

// ByRule is how many distinct values each rule found.
func (t *Tally) ByRule() map[string]int {
	out := map[string]int{}
	if t != nil {
		for _, r := range t.seen {
			out[r]++
		}
	}
	return out
}

// Rules lists the rules that found something, most values first (then by
// name), each with its count: "github-pat 2, url-password 1".
func (t *Tally) Rules() string {
	by := t.ByRule()
	ids := make([]string, 0, len(by))
	for id := range by {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if by[ids[i]] != by[ids[j]] {
			return by[ids[i]] > by[ids[j]]
		}
		return ids[i] < ids[j]
	})
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%s %d", id, by[id])
	}
	return strings.Join(parts, ", ")
}

// Tally is String, counting each value replaced in t (which may be nil).
func (r *Redactor) Tally(s string, t *Tally) string {
	out, _ := r.redact(s, t)
	return out
}

// redact replaces every known form and every secret the rules find,
// counting them (in t when it is not nil).
func (r *Redactor) redact(s string, t *Tally) (string, int) {
	return apply(s, r.find(s), t)
}

// find returns every secret in s, known forms and the rules' finds,
// merged where they overlap, in order.
func (r *Redactor) find(s string) []span {
	var spans []span
	if r != nil {
		for _, f := range r.forms {
			for at := 0; ; {
				i := strings.Index(s[at:], f)
				if i < 0 {
					break
				}
				spans = append(spans, span{at + i, at + i + len(f), RuleKnown})
				at += i + len(f)
			}
		}
		if len(r.escaped) > 0 && (strings.Contains(s, `\u`) || strings.Contains(s, `\/`)) {
			for _, re := range r.escaped {
				for _, m := range re.FindAllStringIndex(s, maxMatches) {
					spans = append(spans, span{m[0], m[1], RuleKnown})
				}
			}
		}
	}
	spans = append(spans, rules().find(s)...)
	if len(spans) < 2 {
		return spans
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].from != spans[j].from {
			return spans[i].from < spans[j].from
		}
		return spans[i].to > spans[j].to
	})
	merged := spans[:1]
	for _, sp := range spans[1:] {
		last := &merged[len(merged)-1]
		if sp.from < last.to {
			last.to = max(last.to, sp.to) // overlapping finds are one value
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}

// apply replaces each of spans (in order, apart) in s by Mark, counting
// them in t (when not nil).
func apply(s string, spans []span, t *Tally) (string, int) {
	if len(spans) == 0 {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s))
	at := 0
	for _, sp := range spans {
		b.WriteString(s[at:sp.from])
		b.WriteString(Mark)
		at = sp.to
		t.add(sp.rule, s[sp.from:sp.to])
	}
	b.WriteString(s[at:])
	return b.String(), len(spans)
}

// JSON redacts a JSON body (a request, a response, an error body, tool
// arguments) so that it stays valid JSON of the same structure: the text
// as a whole first, where a "key": "value" pair is a rule's context,
// leaving out what would cut a string; then, inside each string that
// holds an escape (\n, \u0073…), the decoded string. When the first
// pass left something out or broke the JSON, every string is redacted
// on its own instead. A body that is not JSON is redacted as text. It
// returns b itself when nothing changed, and adds what it replaced to t
// (which may be nil).
func (r *Redactor) JSON(b []byte, t *Tally) []byte {
	if !json.Valid(b) {
		s, _ := r.redact(string(b), t)
		if s == string(b) {
			return b
		}
		return []byte(s)
	}
	s := string(b)
	spans := r.find(s)
	all := false
	kept := spans[:0]
	for _, sp := range spans {
		if strings.IndexByte(s[sp.from:sp.to], '"') >= 0 {
			all = true // it would cut a string
			continue
		}
		kept = append(kept, sp)
	}
	out, n := apply(s, kept, nil)
	if n > 0 && !json.Valid([]byte(out)) {
		all = true
	}
	if !all {
		for _, sp := range kept {
			t.add(sp.rule, s[sp.from:sp.to])
		}
		s = out
	}
	if all || strings.IndexByte(s, '\\') >= 0 {
		s = r.strings(s, all, t)
	}
	if s == string(b) {
		return b
	}
	return []byte(s)
}

// strings redacts the decoded text of each JSON string of body (valid
// JSON) — every one, or those holding an escape — and writes the ones
// that changed back, encoded.
func (r *Redactor) strings(body string, all bool, t *Tally) string {
	var b strings.Builder
	at := 0
	for i := 0; i < len(body); i++ {
		if body[i] != '"' {
			continue
		}
		end := i + 1
		esc := false
		for ; end < len(body); end++ {
			c := body[end]
			if c == '\\' {
				esc = true
				end++
				continue
			}
			if c == '"' {
				break
			}
		}
		raw := body[i : end+1]
		i = end
		if !all && !esc {
			continue
		}
		var v string
		if json.Unmarshal([]byte(raw), &v) != nil {
			continue
		}
		red, n := r.redact(v, t)
		if n == 0 {
			continue
		}
		var enc bytes.Buffer
		e := json.NewEncoder(&enc)
		e.SetEscapeHTML(false)
		if e.Encode(red) != nil {
			continue
		}
		b.WriteString(body[at : i-len(raw)+1])
		b.Write(bytes.TrimSuffix(enc.Bytes(), []byte("\n")))
		at = i + 1
	}
	if at == 0 {
		return body
	}
	b.WriteString(body[at:])
	return b.String()
}

// Bytes is String for a body; it returns b itself when nothing changed.
// Replacing inside a JSON string keeps the JSON valid: Mark holds no quote
// or backslash.
func (r *Redactor) Bytes(b []byte) []byte {
	s := r.String(string(b))
	if s == string(b) {
		return b
	}
	return []byte(s)
}

// Error returns err with its text redacted, still unwrapping to err; nil
// stays nil and an error with nothing to redact comes back as it is.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := r.String(err.Error())
	if msg == err.Error() {
		return err
	}
	return &redacted{msg: msg, err: err}
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }

// URL returns a URL with its user:password (or user) replaced by Mark, for
// printing and storing; text that does not parse as a URL is redacted as
// text.
func URL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return (*Redactor)(nil).String(s)
	}
	u.User = url.User(Mark)
	return strings.Replace(u.String(), url.PathEscape(Mark), Mark, 1)
}

// Password returns the password of a URL's user info, or "": a secret to
// give New.
func Password(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}

// Stream redacts text that arrives in pieces (a streamed answer): a secret
// split across two pieces is still caught. The last word of the text so
// far (an open PEM block: to its end) is held back until more comes or
// Close, and the rules see it after the text emitted before it (up to
// holdBack bytes of it), so a token is found whole and in its context
// ("Authorization: Bearer " emitted, the token held). A secret the rules
// find across the cut is held back whole.
type Stream struct {
	r    *Redactor
	emit func(string)
	ctx  string // the end of what was emitted, as it came
	held string // not emitted yet, as it came
}

// holdBack is how much emitted text the rules see before what is held.
const holdBack = 512

// maxHeld bounds what a word without an end, or an open PEM block, holds
// back.
const maxHeld = 64 << 10

// Stream returns a Stream passing redacted text to emit.
func (r *Redactor) Stream(emit func(string)) *Stream {
	return &Stream{r: r, emit: emit}
}

// Write adds a piece and emits what can no longer be part of a secret.
func (s *Stream) Write(p string) {
	text := s.ctx + s.held + p
	base := len(s.ctx)
	cut := base
	if i := strings.LastIndexAny(text[base:], " \t\r\n"); i >= 0 {
		cut = base + i + 1 // after the last word break
	}
	if i := strings.LastIndex(text, "-----BEGIN"); i >= base && i < cut && !pemClosed(text[i:]) {
		cut = i // a PEM block not yet closed
	}
	if len(text)-cut > maxHeld {
		cut = len(text) - maxHeld
		for cut > base && !utf8.RuneStart(text[cut]) {
			cut--
		}
	}
	spans := s.r.find(text)
	for _, sp := range spans {
		if sp.from < cut && sp.to > cut && sp.from >= base {
			cut = sp.from // a secret across the cut waits whole
			break
		}
	}
	if cut <= base {
		s.held = text[base:]
		return
	}
	s.emit(s.redacted(text, base, cut, spans))
	ctx := text[:cut]
	if len(ctx) > holdBack {
		i := len(ctx) - holdBack
		for i < len(ctx) && !utf8.RuneStart(ctx[i]) {
			i++
		}
		ctx = ctx[i:]
	}
	s.ctx, s.held = ctx, text[cut:]
}

// pemClosed reports whether a PEM block's text has its END line whole.
func pemClosed(block string) bool {
	i := strings.Index(block, "-----END")
	return i >= 0 && strings.Contains(block[i+len("-----END"):], "-----")
}

// redacted is text[from:to] with spans (found in text) replaced where
// they fall in it.
func (s *Stream) redacted(text string, from, to int, spans []span) string {
	var in []span
	for _, sp := range spans {
		if sp.to <= from || sp.from >= to {
			continue
		}
		in = append(in, span{max(sp.from, from) - from, min(sp.to, to) - from, sp.rule})
	}
	out, _ := apply(text[from:to], in, nil)
	return out
}

// Close emits what is held back.
func (s *Stream) Close() {
	if s.held == "" {
		return
	}
	text := s.ctx + s.held
	s.emit(s.redacted(text, len(s.ctx), len(text), s.r.find(text)))
	s.ctx, s.held = "", ""
}
