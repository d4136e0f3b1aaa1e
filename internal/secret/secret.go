// Package secret keeps credentials out of everything inspect stores,
// prints or sends back to a model (DESIGN §11, Secrets): the API key, any
// Authorization or api-key header value, and a URL's user:password are
// replaced by [redacted] wherever they appear — in a provider's error body
// echoing the key, in a 200 body kept as the response, in an error message.
// The runtime's provider and inspect ask share one Redactor.
package secret

import (
	"encoding/json"
	"html"
	"html/template"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Mark is what a secret is replaced by.
const Mark = "[redacted]"

// minSecret is the shortest key treated as a secret: a local server takes
// any non-empty key ("x"), and replacing every "x" would wreck the text.
const minSecret = 8

// Redactor replaces known secrets and credential-shaped text. The zero
// value and nil redact credential shapes only (header values, URL
// passwords). It is safe for concurrent use.
type Redactor struct {
	forms []string // each secret and its escaped forms, longest first
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
		add(s)
		if b, err := json.Marshal(s); err == nil {
			add(strings.Trim(string(b), `"`)) // as a JSON string holds it
		}
		add(url.QueryEscape(s))
		add(url.PathEscape(s))
		add(html.EscapeString(s))
		add(template.HTMLEscapeString(s))
	}
	// Longest first, so a form containing another is replaced whole.
	for i := range r.forms {
		for j := i + 1; j < len(r.forms); j++ {
			if len(r.forms[j]) > len(r.forms[i]) {
				r.forms[i], r.forms[j] = r.forms[j], r.forms[i]
			}
		}
	}
	return r
}

// headerValue matches an Authorization, Proxy-Authorization, api-key or
// x-api-key header as text, JSON or a form field echoes it, up to the end
// of its value: "Authorization: Bearer abc", "\"authorization\":\"Basic abc\"",
// "api-key=abc".
var headerValue = regexp.MustCompile(`(?i)((?:proxy-)?authorization|x-api-key|api[-_]key)(\\?["']?\s*[:=]\s*\\?["']?\s*)((?:bearer|basic|token)\s+)?([^\s"'\\,;<>&]+)`)

// urlUserinfo matches scheme://user:password@ in text.
var urlUserinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@"'<>]+:[^/\s@"'<>]*@`)

// String returns s with every secret and credential shape replaced by Mark.
// A secret written with JSON escapes inside a JSON string ("\u0073k-…", as
// a provider's raw error body may echo it) is caught too: such a string is
// decoded, redacted and written back as a valid JSON string.
func (r *Redactor) String(s string) string {
	if r != nil {
		for _, f := range r.forms {
			if strings.Contains(s, f) {
				s = strings.ReplaceAll(s, f, Mark)
			}
		}
		s = r.escaped(s)
	}
	if strings.ContainsAny(s, ":=") {
		s = headerValue.ReplaceAllStringFunc(s, func(m string) string {
			sub := headerValue.FindStringSubmatch(m)
			if sub[4] == Mark || strings.HasPrefix(sub[4], Mark) {
				return m
			}
			return sub[1] + sub[2] + sub[3] + Mark
		})
		s = urlUserinfo.ReplaceAllString(s, "${1}"+Mark+"@")
	}
	return s
}

// jsonString matches a JSON string literal.
var jsonString = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// escaped redacts the JSON string literals of s that hold a secret behind
// escapes. Only \u and \/ can hide a character of a key (the other
// escapes stand for quotes, backslashes and controls), so text without
// them is returned at once.
func (r *Redactor) escaped(s string) string {
	if len(r.forms) == 0 || !strings.Contains(s, `\u`) && !strings.Contains(s, `\/`) {
		return s
	}
	return jsonString.ReplaceAllStringFunc(s, func(lit string) string {
		if !strings.Contains(lit, `\u`) && !strings.Contains(lit, `\/`) {
			return lit
		}
		var dec string
		if json.Unmarshal([]byte(lit), &dec) != nil {
			return lit
		}
		red := r.String(dec)
		if red == dec {
			return lit
		}
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if enc.Encode(red) != nil {
			return lit
		}
		return strings.TrimSuffix(b.String(), "\n")
	})
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
// split across two pieces is still caught, because the end of each piece
// that could begin one is held back until the next piece or Close.
type Stream struct {
	r    *Redactor
	emit func(string)
	held string
	keep int
}

// Stream returns a Stream passing redacted text to emit.
func (r *Redactor) Stream(emit func(string)) *Stream {
	s := &Stream{r: r, emit: emit}
	if r != nil {
		for _, f := range r.forms {
			s.keep = max(s.keep, len(f)-1)
		}
	}
	return s
}

// Write adds a piece and emits what can no longer be part of a secret.
func (s *Stream) Write(p string) {
	text := s.r.String(s.held + p)
	cut := len(text) - s.keep
	for cut > 0 && cut < len(text) && !utf8.RuneStart(text[cut]) {
		cut--
	}
	if cut <= 0 {
		s.held = text
		return
	}
	s.held = text[cut:]
	s.emit(text[:cut])
}

// Close emits what is held back.
func (s *Stream) Close() {
	if s.held != "" {
		s.emit(s.held)
		s.held = ""
	}
}
