// Package mdcheck reads Markdown as GitHub shows it (goldmark with the GFM
// extensions: tables, strikethrough, autolinks, task lists) for the tests
// of inspect's Markdown writers: which elements a document has, and the
// text a reader sees, so a test can check that untrusted text (an agent
// name, a message) added no structure and reads as itself.
package mdcheck

import (
	"bytes"
	"html"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/inspect-dev/inspect/internal/termsafe"
)

var md = goldmark.New(goldmark.WithExtensions(extension.GFM))

// HTML is the document rendered as GitHub renders it (raw HTML in the
// source is omitted, as goldmark does by default, and shows as a comment).
func HTML(doc string) string {
	var b bytes.Buffer
	if err := md.Convert([]byte(doc), &b); err != nil {
		panic("goldmark: " + err.Error()) // goldmark fails only on a failing writer
	}
	return b.String()
}

var tagRe = regexp.MustCompile(`<(/?[a-zA-Z][a-zA-Z0-9]*)[^>]*>|<!--.*?-->`)

// Structure lists the document's elements in order: each HTML tag it
// renders to ("p", "/p", "strong", "td"…), attributes and text left out,
// and "!--" for raw HTML goldmark left out. Two documents that differ only
// in the text of their words have the same Structure.
func Structure(doc string) []string {
	var out []string
	for _, m := range tagRe.FindAllStringSubmatch(HTML(doc), -1) {
		if m[1] == "" {
			out = append(out, "!--")
			continue
		}
		out = append(out, strings.ToLower(m[1]))
	}
	return out
}

// Text is what a reader sees: the rendered document without its tags, its
// entities decoded.
func Text(doc string) string {
	return html.UnescapeString(tagRe.ReplaceAllString(HTML(doc), ""))
}

// Hostile is an agent name that tries every Markdown construct a name can
// carry: emphasis, a code span, HTML, table pipes, a link, strikethrough,
// an entity, a heading, a carriage return that would start a list item,
// an e-mail address and a URL GitHub would link.
const Hostile = "ev*il*_x_ `c` <b>h</b> |p| [l](u) ~~s~~ &amp; #h\r- li a@b.co http://e.co"

// Benign is a name with nothing to escape, to write the same document with.
const Benign = "agentx"

// Same checks that hostile, a document written with Hostile where benign
// was written with Benign, has benign's structure (Hostile added no
// element) and reads Hostile, visibly (its control characters as
// termsafe.String writes them), wherever benign reads Benign.
func Same(t testing.TB, benign, hostile string) {
	t.Helper()
	if b, h := Structure(benign), Structure(hostile); !slices.Equal(b, h) {
		t.Errorf("the hostile name changed the structure:\n  benign  %v\n  hostile %v\n%s", b, h, hostile)
	}
	visible := termsafe.String(Hostile)
	nb, nh := strings.Count(Text(benign), Benign), strings.Count(Text(hostile), visible)
	if nb == 0 || nh != nb {
		t.Errorf("the benign document reads %q %d times, the hostile one reads %q %d times:\n%s", Benign, nb, visible, nh, Text(hostile))
	}
}
