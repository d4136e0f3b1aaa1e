package rules

import (
	"math/rand/v2"
	"path"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The rules' text scans are written by hand for speed (issue 30); each
// must find what the plain form it replaced finds, kept here as the
// reference: on hand-picked texts and on many random ones over the bytes
// the scans tell apart (letters of both cases, digits, every separator,
// multi-byte letters that lower-case to ASCII, invalid UTF-8).

// scanTexts are the texts every scan is compared on.
func scanTexts() []string {
	texts := []string{
		"", " ", ".", "a", "a.b", "a.b.c", "./a.md", "a/b/c.go:12: x", "Read regions/EU.md; then write out.md. Done.",
		"see https://example.com/a.md and host:8080/x", "[REDACTED] [Redacted] [redac", "ﬁle.md İNDEX.MD Kelvin: \u212a.md",
		"x..y ..a .a a. a._ _a.b1 -a.b /a.b a-.b a/.b a.-b 1.2.3 v1.2", "Save to notes/r0-0.md\nthen store x.json;\tcreate y.csv!\fend?\rz.md",
		"\xff\xfea.md\xff", "résumé.pdf naïve/ü.md", "WRITE A.MD. wrİte b.md. sAvE c.md",
	}
	const alphabet = "aZz09_./-:; ,\n\t\f\r!?\"'`()[]{}<>|=\\REDACTEDredacted[writesavestorecreate"
	multi := []string{"é", "İ", "\u212a", "ﬁ", "\xff", "ß", "Σ"}
	r := rand.New(rand.NewPCG(30, 1))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(40) {
			if r.IntN(12) == 0 {
				b.WriteString(multi[r.IntN(len(multi))])
			} else {
				b.WriteByte(alphabet[r.IntN(len(alphabet))])
			}
		}
		texts = append(texts, b.String())
	}
	return texts
}

func TestPathsIn_AsTheRegexp(t *testing.T) {
	re := regexp.MustCompile(`[A-Za-z0-9_][A-Za-z0-9_./-]*\.[A-Za-z0-9]+`)
	for _, s := range scanTexts() {
		if got, want := pathsIn(s), re.FindAllString(s, -1); !reflect.DeepEqual(got, want) {
			t.Errorf("pathsIn(%q) = %q, the regexp finds %q", s, got, want)
		}
	}
}

func TestWrittenPaths_AsTheRegexps(t *testing.T) {
	pathRe := regexp.MustCompile(`[A-Za-z0-9_][A-Za-z0-9_./-]*\.[A-Za-z0-9]+`)
	sentenceRe := regexp.MustCompile(`[.;!?\n]\s`)
	want := func(instr string) []string {
		var out []string
		for _, sentence := range sentenceRe.Split(instr, -1) {
			low := strings.ToLower(sentence)
			if !strings.Contains(low, "write") && !strings.Contains(low, "save") && !strings.Contains(low, "store") && !strings.Contains(low, "create") {
				continue
			}
			for _, t := range pathRe.FindAllString(sentence, -1) {
				out = append(out, path.Clean(t))
			}
		}
		return out
	}
	for _, s := range scanTexts() {
		if got, want := writtenPaths(s), want(s); !reflect.DeepEqual(got, want) {
			t.Errorf("writtenPaths(%q) = %q, the regexps find %q", s, got, want)
		}
	}
}

func TestSeeWords_AsTokens(t *testing.T) {
	for _, min := range []int{1, 3} {
		for _, s := range scanTexts() {
			got := &tokenScan{origin: map[string]int64{"seen": 1}}
			want := &tokenScan{origin: map[string]int64{"seen": 1}}
			got.seeWords(s+" seen", 7, min)
			want.seeTokens(tokens(s+" seen", min), 7)
			if !reflect.DeepEqual(got.origin, want.origin) {
				t.Errorf("seeWords(%q, %d) saw %v, tokens gives %v", s, min, got.origin, want.origin)
			}
		}
	}
}

func TestPathTokens_AsFields(t *testing.T) {
	want := func(text string) []string {
		var out []string
		f := strings.FieldsFunc(text, func(r rune) bool {
			switch r {
			case '"', '\'', '`', '(', ')', '[', ']', '{', '}', '<', '>', ',', ';', '|', '=', '\\', '\n', '\t', ' ', '\r':
				return true
			}
			return false
		})
		for _, w := range f {
			w = strings.TrimRight(w, ".:")
			if i := strings.IndexByte(w, ':'); i > 0 && !strings.Contains(w[:i], "/") && strings.Contains(w[i:], "/") {
				continue
			}
			w, _, _ = strings.Cut(w, ":")
			w = strings.TrimPrefix(w, "./")
			if w == "" || w == "." || w == "/" {
				continue
			}
			base := path.Base(w)
			ext := path.Ext(base)
			hasExt := len(ext) > 1 && len(base) > len(ext) && strings.IndexFunc(ext[1:], func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) < 0 &&
				strings.IndexFunc(ext[1:], unicode.IsLetter) >= 0
			if !strings.Contains(w, "/") && !hasExt {
				continue
			}
			out = append(out, strings.ToLower(path.Clean(w)))
			if base != w && base != "." && base != "/" {
				out = append(out, strings.ToLower(base))
			}
		}
		return out
	}
	for _, s := range scanTexts() {
		if got, want := pathTokens(s), want(s); !reflect.DeepEqual(got, want) {
			t.Errorf("pathTokens(%q) = %q, want %q", s, got, want)
		}
	}
}

func TestRedacted_AsLowerCased(t *testing.T) {
	for _, s := range scanTexts() {
		want := strings.Contains(s, "REDACTED") || strings.Contains(strings.ToLower(s), "[redacted")
		if got := redacted(s); got != want {
			t.Errorf("redacted(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestParseArgs_AsDecoded: arguments read by the flat fast path (flatArgs)
// parse as encoding/json decodes them, for the built-in tools (whose path
// is cleaned) and any other; texts off the path's shape fall back.
func TestParseArgs_AsDecoded(t *testing.T) {
	texts := []string{
		`{}`, ` { } `, `{"path":"a.md"}`, `{"path":"./a//b/../c.md"}`, `{"path":""}`, `{"path":"/"}`, `{"pattern":"x"}`,
		`{"b":"2","a":"1"}`, `{"a":"1","a":"2"}`, "{\n\t\"a\" : \"1\" ,\r\n \"b\":\"x y\"}", `{"a":"1"} x`, `{"a":"1",}`, `{"a":1}`,
		`{"a":"<b>"}`, `{"a":"\u0041"}`, `{"a":"x\"y"}`, `{"a":"é"}`, `{"a":"1"`, `{"a" "1"}`, `[]`, `"a"`, ``, `{"":""}`,
		`{"command":"ls -la notes","description":"list"}`, `{"path":"a.md","content":"# A\n"}`,
	}
	const alphabet = `abAB09 ./-_:,{}"\<>&` + "\t\n"
	r := rand.New(rand.NewPCG(30, 2))
	for range 20000 {
		var b strings.Builder
		b.WriteString(" {"[r.IntN(2):])
		for k := range r.IntN(4) {
			if k > 0 {
				b.WriteString([]string{",", ", ", " ,\n"}[r.IntN(3)])
			}
			for _, part := range []string{[]string{"path", "pattern", "a", "b"}[r.IntN(4)], ""} {
				if part == "" {
					for range r.IntN(8) {
						part += string(alphabet[r.IntN(len(alphabet))])
					}
				}
				b.WriteString(`"` + part + `"`)
				if r.IntN(2) == 0 {
					b.WriteString(":")
				} else {
					b.WriteString(" : ")
				}
			}
		}
		s := strings.TrimSuffix(b.String(), ": ")
		s = strings.TrimSuffix(s, ":")
		texts = append(texts, s+[]string{"}", "} ", "", "}}"}[r.IntN(4)])
	}
	flat := 0
	for _, tool := range []string{"read_file", "list_dir", "find_files", "write_file", "Grep"} {
		for _, s := range texts {
			if _, ok := flatArgs(s); ok {
				flat++
			}
			c, x, f := parseArgs(tool, s)
			wc, wx, wf := decodedArgs(tool, s)
			if c != wc || x != wx || !reflect.DeepEqual(f, wf) {
				t.Errorf("parseArgs(%s, %q) = %q, %q, %v; decoded: %q, %q, %v", tool, s, c, x, f, wc, wx, wf)
			}
		}
	}
	if flat < 5*len(texts)/10 {
		t.Errorf("only %d of %d texts took the flat path: the test compares too little of it", flat, 5*len(texts))
	}
}
