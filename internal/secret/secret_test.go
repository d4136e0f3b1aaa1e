package secret

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"html/template"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const key = "test-key-Zq9/+x&<y>42"

func TestRedactor_String(t *testing.T) {
	r := New(key, "", "x")
	js, _ := json.Marshal(map[string]string{"echo": key})
	tests := []struct{ name, in string }{
		{"plain", "invalid key " + key},
		{"bearer header", "Authorization: Bearer " + key},
		{"json body", string(js)},
		{"json header echo", `{"headers":{"authorization":"Bearer ` + key + `"}}`},
		{"html", "<p>key &#34;" + html.EscapeString(key) + "&#34;</p>"},
		{"html/template", "<p>" + template.HTMLEscapeString(key) + "</p>"},
		{"query escaped", "GET /?k=test-key-Zq9%2F%2Bx%26%3Cy%3E42"},
		{"other bearer", "authorization: Bearer someone-elses-token"},
		{"api-key header", "api-key: abcdefgh12345"},
		{"x-api-key json", `{"x-api-key": "abcdefgh12345"}`},
		{"url password", "cannot reach https://me:hunter2hunter2@proxy.example/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.String(tt.in)
			for _, leak := range []string{key, "Zq9", "someone-elses-token", "abcdefgh12345", "hunter2"} {
				if strings.Contains(got, leak) {
					t.Errorf("String(%q) = %q: %q survives", tt.in, got, leak)
				}
			}
			if !strings.Contains(got, Mark) {
				t.Errorf("String(%q) = %q, want %s in it", tt.in, got, Mark)
			}
		})
	}
	if got := r.String("x marks the spot"); got != "x marks the spot" {
		t.Errorf("a short key is not a secret: String = %q", got)
	}
	if got := r.String(`{"ok":true}`); got != `{"ok":true}` {
		t.Errorf("clean text changed: %q", got)
	}
	var nilR *Redactor
	if got := nilR.String("Authorization: Bearer abcdefgh"); strings.Contains(got, "abcdefgh") {
		t.Errorf("nil Redactor left a header value: %q", got)
	}
}

func TestRedactor_BytesKeepJSONValid(t *testing.T) {
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"message": "Incorrect API key provided: " + key}})
	out := New(key).Bytes(body)
	if !json.Valid(out) || strings.Contains(string(out), key) {
		t.Errorf("Bytes = %s: want valid JSON without the key", out)
	}
}

func TestRedactor_Error(t *testing.T) {
	base := errors.New("echo " + key)
	err := New(key).Error(base)
	if strings.Contains(err.Error(), key) || !errors.Is(err, base) {
		t.Errorf("Error = %v: want redacted and unwrapping to the original", err)
	}
}

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pw@api.example.com/v1": "https://[redacted]@api.example.com/v1",
		"https://api.example.com/v1":         "https://api.example.com/v1",
		"http://user@host/x":                 "http://[redacted]@host/x",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Password("https://u:s3cretpass@h/"); got != "s3cretpass" {
		t.Errorf("Password = %q", got)
	}
}

func FuzzRedactor(f *testing.F) {
	f.Add("Authorization: Bearer " + key)
	f.Add(`{"api_key":"` + key + `"}`)
	f.Fuzz(func(t *testing.T, s string) {
		out := New(key).String(s + key)
		if strings.Contains(out, key) {
			t.Fatalf("String(%q) = %q keeps the key", s+key, out)
		}
	})
}

func TestStream_SplitSecret(t *testing.T) {
	r := New(key)
	for split := 1; split < len(key); split++ {
		var got strings.Builder
		st := r.Stream(func(s string) { got.WriteString(s) })
		text := "before " + key + " after é"
		for _, piece := range []string{text[:7+split], text[7+split:]} {
			st.Write(piece)
		}
		st.Close()
		if want := "before " + Mark + " after é"; got.String() != want {
			t.Fatalf("split at %d: streamed %q, want %q", split, got.String(), want)
		}
	}
}

// escapeAll writes every character of s as a JSON \u escape, as a
// provider's raw error body may echo a key.
func escapeAll(s string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// unescapeAll undoes every \uXXXX escape of s, at any depth of nesting
// (\\u0073 in JSON held in a JSON string), to look for a key behind them.
func unescapeAll(s string) string {
	return regexp.MustCompile(`\\+u([0-9a-fA-F]{4})`).ReplaceAllStringFunc(s, func(m string) string {
		n, _ := strconv.ParseUint(m[len(m)-4:], 16, 32)
		return string(rune(n))
	})
}

// A key JSON-escaped in a raw body ("\u0073k-…") is redacted, and the body
// stays valid JSON; so is a key escaped twice (JSON inside a JSON string).
func TestRedactor_JSONEscapedKey(t *testing.T) {
	const k = "sk-live-0123456789abcdef"
	r := New(k)
	tests := []struct{ name, in string }{
		{"all escaped", `{"error":{"message":"Incorrect API key provided: Bearer ` + escapeAll(k) + `.","param":"` + escapeAll(k) + `"}}`},
		{"one escaped", `{"error":{"message":"key \u0073k-live-0123456789abcdef"}}`},
		{"dashes escaped", `{"echo":"` + strings.ReplaceAll(k, "-", `\u002d`) + `"}`},
		{"nested", `{"detail":"{\"key\":\"\\u0073k-live-0123456789abcdef\"}"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(unescapeAll(tt.in), k) || !json.Valid([]byte(tt.in)) {
				t.Fatalf("the case %s does not hold the key in valid JSON", tt.in)
			}
			got := r.String(tt.in)
			if !json.Valid([]byte(got)) {
				t.Errorf("String(%s) = %s: not valid JSON", tt.in, got)
			}
			if strings.Contains(unescapeAll(got), k) || !strings.Contains(got, Mark) {
				t.Errorf("String(%s) = %s: want the key replaced by %s", tt.in, got, Mark)
			}
		})
	}
	clean := []byte(`{"text":"caf\u00e9 \/ \n done"}`)
	if got := r.Bytes(clean); &got[0] != &clean[0] {
		t.Errorf("Bytes changed a body without the key: %s", got)
	}
}
