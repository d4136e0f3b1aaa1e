package termsafe

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text, é and 日本\n\tok", "plain text, é and 日本\n\tok"},
		{"x\x1b]52;c;cHduZWQ=\x07\x1b[2J", `x\x1b]52;c;cHduZWQ=\x07\x1b[2J`},
		{"title \x1b]0;pwned\a", `title \x1b]0;pwned\x07`},
		{"\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", `\x1b]8;;http://evil\x1b\click\x1b]8;;\x1b\`},
		{"csi \u009b2J nel \u0085", `csi \u009b2J nel \u0085`},
		{"cr\r del\x7f nul\x00", `cr\x0d del\x7f nul\x00`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"raw c1 byte \x9b", `raw c1 byte \x9b`},
		// bidi controls reorder what is shown (Trojan Source): visible too
		{"admin\u202e \u2066// check\u2069\u2067x\u2068y\u202a\u202b\u202c\u202d", `admin\u202e \u2066// check\u2069\u2067x\u2068y\u202a\u202b\u202c\u202d`},
		{"arabic مرحبا and hebrew שלום stay", "arabic مرحبا and hebrew שלום stay"},
	}
	for _, tt := range tests {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWriter_SplitRune(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	text := []byte("é日本\x1b[2J😀")
	for i := range text {
		if _, err := w.Write(text[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	if got, want := out.String(), `é日本\x1b[2J😀`; got != want {
		t.Errorf("byte-by-byte = %q, want %q", got, want)
	}
}

// FuzzString: whatever the input, the output holds no control byte but
// newline and tab, no C1 control, and is valid UTF-8; clean input is
// unchanged.
func FuzzString(f *testing.F) {
	for _, s := range []string{"x\x1b]52;c;cHduZWQ=\x07\x1b[2J", "\u009b\u0085", "\xff\xc2", "plain\n\ttext", "日本語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := String(s)
		if !utf8.ValidString(out) {
			t.Fatalf("String(%q) = %q is not valid UTF-8", s, out)
		}
		for _, r := range out {
			if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) || bidi(r) {
				t.Fatalf("String(%q) = %q keeps control %U", s, out, r)
			}
		}
		if clean(s) && out != s {
			t.Fatalf("clean %q changed to %q", s, out)
		}
		var buf bytes.Buffer
		w := NewWriter(&buf)
		for _, part := range strings.SplitAfter(s, "\xe6") {
			w.Write([]byte(part))
		}
		w.Flush()
		if buf.String() != out {
			t.Fatalf("Writer(%q) = %q, String = %q", s, buf.String(), out)
		}
	})
}

// TestJSON: JSON as encoders write it — DEL, C1 and bidi controls raw in
// its strings — comes out with them as JSON escapes: valid JSON of the
// same value, nothing a terminal acts on.
func TestJSON(t *testing.T) {
	in := "{\"task\": \"del\x7f c1\u009b2J nel\u0085 bidi\u202eevil\u2066x\u2069 é\",\r\n\t\"n\": 1}\n"
	out := JSON(in)
	var a, b any
	if err := json.Unmarshal([]byte(in), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &b); err != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("JSON(%q) = %q: %v, %v; want the same value", in, out, b, err)
	}
	for _, r := range out {
		if r == 0x7f || (r >= 0x80 && r <= 0x9f) || bidi(r) {
			t.Errorf("JSON(%q) = %q keeps %U", in, out, r)
		}
	}
	var buf bytes.Buffer
	w := NewJSONWriter(&buf)
	for i := 0; i < len(in); i++ {
		w.Write([]byte{in[i]})
	}
	w.Flush()
	if buf.String() != out {
		t.Errorf("the JSON Writer byte by byte = %q, want %q", buf.String(), out)
	}
}
