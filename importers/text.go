package importers

import (
	"encoding/json"
	"io"
	"strings"
)

// Head returns at most n bytes from the start of path (nil when it cannot
// be read, or is not a regular file: OpenRegular): what a Format's Detect
// looks at.
func Head(path string, n int) []byte {
	f, err := OpenRegular(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, n)
	k, _ := io.ReadFull(f, b)
	return b[:k]
}

// MessageText reads a message content as OpenAI-style sources write it: a
// string, or a list of parts whose text fields are joined
// ([{"type": "input_text", "text": ...}]); anything else is "".
func MessageText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// Truncate cuts s to at most max bytes (on a UTF-8 boundary) and marks the
// cut with "…", so one record's text cannot hold a session's memory.
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// FirstLine is s's first line, cut to 300 bytes (Truncate): the short form
// of a tool's error output or a sub-agent's failure an error message keeps.
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return Truncate(s, 300)
}
