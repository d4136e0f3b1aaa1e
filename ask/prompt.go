package ask

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// PromptChange says what ReplacePrompt changed in a request.
type PromptChange struct {
	// Message is the index of the changed message in the messages array.
	Message int
	// Role is that message's role (system or developer).
	Role string
	// Occurrences is how many times the old text was replaced in it.
	Occurrences int
	// Trimmed is set when the old text was found only without its leading
	// and trailing white space (the runtime trims role files); the new text
	// was trimmed the same way.
	Trimmed bool
	// Old and New are the replaced text and its replacement as they appear
	// in the prompt.
	Old, New string
	// Where names the changed text when it is not a message of a Chat
	// Completions body ("system", "messages[0].content[1]",
	// "instructions"); "" for messages[Message].
	Where string
	// Rebuilt is set when the request was written anew around the change
	// (a reconstructed request): its other bytes are not the recorded ones.
	Rebuilt bool
}

// String summarises the change in one line.
func (c *PromptChange) String() string {
	rm, add := lineDiff(c.Old, c.New)
	times := ""
	if c.Occurrences > 1 {
		times = fmt.Sprintf(" (%d occurrences)", c.Occurrences)
	}
	where := fmt.Sprintf("messages[%d]", c.Message)
	if c.Where != "" {
		where = c.Where
	}
	rest := "every other byte of the request is unchanged"
	if c.Rebuilt {
		rest = "the rest of the request is as rebuilt from the recording"
	}
	return fmt.Sprintf("%s (%s): role-file text replaced%s, %d → %d characters, -%d/+%d lines; %s",
		where, c.Role, times, len([]rune(c.Old)), len([]rune(c.New)), len(rm), len(add), rest)
}

// Diff lists the lines of the role-file text that were removed ("- …")
// and added ("+ …"), at most n of each (0 = all).
func (c *PromptChange) Diff(n int) []string {
	rm, add := lineDiff(c.Old, c.New)
	var out []string
	for _, l := range firstN(rm, n) {
		out = append(out, "- "+l)
	}
	for _, l := range firstN(add, n) {
		out = append(out, "+ "+l)
	}
	return out
}

func firstN(lines []string, n int) []string {
	if n > 0 && len(lines) > n {
		return append(lines[:n:n], fmt.Sprintf("… %d more", len(lines)-n))
	}
	return lines
}

// lineDiff returns the lines of a not in b and the lines of b not in a,
// in order (a longest-common-subsequence diff on lines).
func lineDiff(a, b string) (removed, added []string) {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	n, m := len(x), len(y)
	l := make([][]int, n+1)
	for i := range l {
		l[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case x[i] == y[j]:
			i++
			j++
		case l[i+1][j] >= l[i][j+1]:
			removed = append(removed, x[i])
			i++
		default:
			added = append(added, y[j])
			j++
		}
	}
	removed = append(removed, x[i:]...)
	added = append(added, y[j:]...)
	return removed, added
}

// ReplacePrompt returns the request with oldText replaced by newText
// inside its system (or developer) message: the agent's role file swapped
// for another version. Only the bytes of that message's content string
// change; the other messages, tools and fields are kept byte for byte. It
// fails when no system message contains oldText (or its trimmed form).
func ReplacePrompt(req *Request, oldText, newText string) ([]byte, *PromptChange, error) {
	if strings.TrimSpace(oldText) == "" {
		return nil, nil, fmt.Errorf("the role-file text to replace is empty")
	}
	for i, s := range req.msgs {
		m := &req.Read.Messages[i]
		if !isSystem(m.Role) || m.Parts != nil {
			continue // content parts: not written by our runtime
		}
		raw := req.Body[s.start:s.end]
		o, err := parseObject(raw)
		if err != nil {
			continue
		}
		f, ok := o.get("content")
		if !ok {
			continue
		}
		// The content string's own bytes, to splice its replacement into.
		orig := raw[f.val.start:f.val.end]
		var content string
		if json.Unmarshal(orig, &content) != nil {
			continue
		}
		change := &PromptChange{Message: i, Role: m.Role, Old: oldText, New: newText}
		if !strings.Contains(content, oldText) {
			change.Old, change.New, change.Trimmed = strings.TrimSpace(oldText), strings.TrimSpace(newText), true
			if !strings.Contains(content, change.Old) {
				continue
			}
		}
		change.Occurrences = strings.Count(content, change.Old)
		replaced := strings.ReplaceAll(content, change.Old, change.New)
		enc, err := encodeLike(replaced, orig)
		if err != nil {
			return nil, nil, err
		}
		msg := splice(raw, f.val, enc)
		return splice(req.Body, s, msg), change, nil
	}
	return nil, nil, fmt.Errorf("no system message of the recorded request contains the role-file text")
}

// encodeLike encodes s as a JSON string in the escaping style of the
// string orig: HTML characters escaped only if orig escaped them.
func encodeLike(s string, orig []byte) ([]byte, error) {
	if bytes.Contains(orig, []byte(`\u003c`)) || bytes.Contains(orig, []byte(`\u003e`)) || bytes.Contains(orig, []byte(`\u0026`)) {
		return json.Marshal(s)
	}
	return marshal(s)
}
