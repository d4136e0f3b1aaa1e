package secret

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"html/template"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/internal/secret/secrettest"
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
	k := "sk-" + "live-0123456789abcdef" // built here, so no scanner takes the test for a leaked key
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

// TestRules_Load: the embedded gitleaks rules read, and every one kept
// compiles with Go's regexp (a rule that did not would find nothing).
func TestRules_Load(t *testing.T) {
	rs := rules()
	if rs.err != nil {
		t.Fatal(rs.err)
	}
	if len(rs.rules) < 200 {
		t.Errorf("%d rules, want gitleaks' 200 and more", len(rs.rules))
	}
	ids := map[string]bool{}
	for _, r := range rs.rules {
		ids[r.id] = true
		if r.compiled() == nil {
			t.Errorf("rule %s does not compile: %s", r.id, r.src)
		}
		for _, a := range r.allow {
			if len(a.regexes) != len(a.src) {
				t.Errorf("rule %s: an allowlist regexp does not compile", r.id)
			}
		}
	}
	for _, id := range []string{"aws-access-token", "github-pat", "github-oauth", "slack-bot-token", "private-key",
		"anthropic-api-key", "openai-api-key", "generic-api-key", "jwt", RuleHeader, RuleURL, RuleSKKey} {
		if !ids[id] {
			t.Errorf("no rule %s", id)
		}
	}
}

// TestRedactor_Kinds: each kind of secret an agent session shows (a
// header, a pasted key, an env line, a PEM file, a URL's password) is
// replaced, counted once, and found again in JSON as a session stores it;
// redacting again changes nothing.
func TestRedactor_Kinds(t *testing.T) {
	for _, k := range secrettest.Kinds(1) {
		t.Run(k.Name, func(t *testing.T) {
			var r *Redactor
			got, n := r.Count(k.Text)
			if k.In(got) || !strings.Contains(got, Mark) || n != 1 {
				t.Errorf("Count(%q) = %q, %d; want the secret replaced, once", k.Text, got, n)
			}
			if again, n := r.Count(got); again != got || n != 0 {
				t.Errorf("redacting again: %q, %d", again, n)
			}
			body, _ := json.Marshal(map[string]any{"type": "tool_result", "content": []string{"$ env", k.Text}})
			tl := &Tally{}
			out := r.JSON(body, tl)
			if k.In(string(out)) || !json.Valid(out) || tl.Total() != 1 {
				t.Errorf("JSON(%s) = %s, %v; want valid JSON without the secret, one value counted", body, out, tl)
			}
		})
	}
}

// TestRedactor_LeavesOrdinaryText: what sessions are full of — ids,
// hashes, token counts, prose about keys, the example key AWS documents —
// is not taken for a secret.
func TestRedactor_LeavesOrdinaryText(t *testing.T) {
	for _, s := range []string{
		"The key insight is that the token budget runs out before the API answers.",
		`{"usage":{"input_tokens":12345,"cache_read_input_tokens":98765,"output_tokens":321}}`,
		`{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"Read","input":{"file_path":"/src/auth/token.go"}}`,
		"commit 3f2c1a9b8e7d6c5b4a3928170f6e5d4c3b2a1908 fixes the api key rotation",
		"session 0b6a7c4e-2f1d-4e8b-9a3c-5d7e6f8a9b0c, message msg_01XFDUDYJgAACzvnptvVoYEL",
		"export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
		"password: ${DB_PASSWORD}",
		"see https://example.com/docs?api_version=2024-06-01 for the keys endpoint",
		"ssh://git@github.com/acme/app.git",
		"the apikey field is optional",
	} {
		if got, n := (*Redactor)(nil).Count(s); got != s || n != 0 {
			t.Errorf("Count(%q) = %q, %d; want it unchanged", s, got, n)
		}
	}
}

// TestRedactor_EscapedKey: a known key a provider echoes JSON-escaped
// (\u0073k-…, any character, either case of hex) is caught in a JSON body
// and in text; the body stays valid JSON.
func TestRedactor_EscapedKey(t *testing.T) {
	const k = "sk-echo-Zq9x42ab7c"
	r := New(k)
	esc := `\u0073k-echo-Zq9x42ab7\u0063`
	for _, body := range []string{
		`{"error":{"message":"Incorrect API key provided: ` + esc + `","code":"invalid_api_key"}}`,
		`{"error":{"message":"bad key \u0073\u006B\u002D\u0065cho-Zq9x42ab7c"}}`,
		"401 unauthorized: key " + esc + " is revoked",
	} {
		out := string(r.JSON([]byte(body), nil))
		if strings.Contains(out, "echo-Zq9x42ab7") || !strings.Contains(out, Mark) {
			t.Errorf("JSON(%s) = %s: the escaped key survives", body, out)
		}
		if json.Valid([]byte(body)) && !json.Valid([]byte(out)) {
			t.Errorf("JSON(%s) = %s: no longer JSON", body, out)
		}
	}
}

// TestRedactor_JSONStaysValid: a match the text pass would cut a JSON
// string with (a PEM block whose end is in the next string) is redacted
// string by string instead, and the body stays JSON.
func TestRedactor_JSONStaysValid(t *testing.T) {
	ks := secrettest.Kinds(2)
	var pem secrettest.Kind
	for _, k := range ks {
		if k.Name == "pem-private-key" {
			pem = k
		}
	}
	half := len(pem.Text) / 2
	body, _ := json.Marshal([]string{pem.Text[:half], pem.Text[half:], pem.Text})
	out := (*Redactor)(nil).JSON(body, nil)
	if !json.Valid(out) {
		t.Fatalf("JSON = %s: not JSON", out)
	}
	var got []string
	json.Unmarshal(out, &got)
	if len(got) != 3 || got[2] != Mark {
		t.Errorf("JSON = %q; want the whole key of the third string redacted", got)
	}
}

// TestStream_SplitRuleSecret: a secret only the rules know (no key was
// given), split anywhere across two pieces of a streamed answer, reaches
// emit redacted — a PEM key's body included.
func TestStream_SplitRuleSecret(t *testing.T) {
	for _, k := range secrettest.Kinds(3) {
		text := "here it is: " + k.Text + "\nand that is all."
		for split := 1; split < len(text); split += 7 {
			var got strings.Builder
			st := (*Redactor)(nil).Stream(func(s string) { got.WriteString(s) })
			st.Write(text[:split])
			st.Write(text[split:])
			st.Close()
			if k.In(got.String()) {
				t.Fatalf("%s split at %d: streamed %q", k.Name, split, got.String())
			}
		}
	}
}

// BenchmarkRedact is the redactor's pace on the text agent sessions are
// made of: prose without a keyword, this repository's Go source (names
// and assignments everywhere), and text dense with the rules' keywords —
// each with a secret of every kind at its end.
func BenchmarkRedact(b *testing.B) {
	var dense strings.Builder
	for dense.Len() < 1<<20 {
		dense.WriteString("The analyst reads the regional reports one by one; the key question is whether the token budget holds.\n")
		dense.WriteString(`{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"Read","input":{"file_path":"/src/auth/token.go"}}` + "\n")
		dense.WriteString("func (c *Client) apiKey() string { return os.Getenv(\"API_KEY\") } // the api key comes from the environment\n")
	}
	var code strings.Builder
	files, _ := filepath.Glob(filepath.Join("..", "..", "store", "*.go"))
	for code.Len() < 1<<20 {
		for _, f := range files {
			data, _ := os.ReadFile(f)
			code.Write(data)
		}
	}
	texts := []struct{ name, text string }{
		{"prose", strings.Repeat("lorem ipsum dolor sit amet, consectetur adipiscing elit\n", 1<<20/56)},
		{"go-source", code.String()[:1<<20]},
		{"keyword-dense", dense.String()},
	}
	rules() // loaded once per process, as in a command
	for _, tt := range texts {
		s := tt.text + secrettest.Text(secrettest.Kinds(4))
		(*Redactor)(nil).String(s) // each rule compiled on first use
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for i := 0; i < b.N; i++ {
				(*Redactor)(nil).String(s)
			}
		})
	}
}

// TestTally_Distinct: a tally counts each secret once however often it
// is replaced (a key pasted in a turn and echoed in results), by rule.
func TestTally_Distinct(t *testing.T) {
	ks := secrettest.Kinds(5)
	var r *Redactor
	tl := &Tally{}
	for i := 0; i < 3; i++ {
		r.Tally(ks[4].Text+" and "+ks[4].Text, tl) // github-pat, twice, three times over
	}
	r.JSON([]byte(`{"cmd":"`+ks[9].Text+`"}`), tl) // url-password
	if tl.Total() != 2 || tl.Rules() != "github-pat 1, "+RuleURL+" 1" {
		t.Errorf("tally = %d (%s), want 2 (github-pat 1, %s 1)", tl.Total(), tl.Rules(), RuleURL)
	}
	var none *Tally
	if none.Total() != 0 || none.Rules() != "" {
		t.Error("a nil tally counts")
	}
}

// TestRedactor_LeavesCode: code that names keys and tokens (as sessions
// read and write it all day) keeps its names: the header rule takes the
// header spellings only (Authorization, api-key, x-api-key) and a value
// of 8 characters or more; apiKey, api_key and APIKey are left to
// gitleaks' generic rule, which wants a value that looks random. A real
// session had thirteen such names taken (issue 23).
func TestRedactor_LeavesCode(t *testing.T) {
	for _, s := range []string{
		"return &Config{\n    APIKey:      apiKey,\n}",
		`"api_key":      config.APIKey,  // secret`,
		`apiKey := os.Getenv("POSTHOG_API_KEY")`,
		`apiKey = "disabled"`,
		"POSTHOG_API_KEY=phc_xxx entire help",
		`go build -ldflags "-X main.posthogAPIKey=phc_YOUR_KEY"`,
		"POSTHOG_API_KEY: ${{ secrets.POSTHOG_API_KEY }}",
		`req.Header.Set("Authorization", "Bearer "+token)`,
		`headers = {"Authorization": f"Bearer {token}"}`,
		"Authorization: Bearer ${API_TOKEN}",
	} {
		if got, n := (*Redactor)(nil).Count(s); got != s || n != 0 {
			t.Errorf("Count(%q) = %q, %d; want it unchanged", s, got, n)
		}
	}
}
