// Package secrettest makes fake secrets of every kind inspect redacts,
// each in the text it would come in (a header, a pasted key, an env line,
// a PEM file), for tests that check a secret reaches no file and no
// output. The values are generated from a fixed seed, so none stands in
// the source as a literal a secret scanner would flag, and every run of a
// test sees the same ones.
package secrettest

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Kind is one kind of secret as it appears in a text.
type Kind struct {
	// Name names the kind in test names ("github-pat").
	Name string
	// Text is a line holding the secret as a session or a tool shows it.
	Text string
	// Secret is what must not survive redaction: the value itself (a
	// PEM key's body, a URL's password).
	Secret string
}

const (
	alnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	base32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	digits = "0123456789"
	b64    = alnum + "+/"
)

// gen draws strings from a fixed seed.
type gen struct{ r *rand.Rand }

func (g gen) of(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.r.IntN(len(alphabet))]
	}
	return string(b)
}

// Kinds returns one of each kind; seed varies the values (two calls with
// one seed give the same ones).
func Kinds(seed uint64) []Kind {
	g := gen{rand.New(rand.NewPCG(seed, 0x5ec7e75))}
	var ks []Kind
	add := func(name, text, secret string) { ks = append(ks, Kind{name, text, secret}) }

	bearer := g.of(alnum, 40)
	add("bearer-header", "Authorization: Bearer "+bearer, bearer)
	xkey := g.of(alnum, 32)
	add("x-api-key-header", "x-api-key: "+xkey, xkey)
	sk := "sk-" + g.of(alnum, 48)
	add("sk-key", "export OPENAI_API_KEY="+sk, sk)
	ant := "sk-ant-api03-" + g.of(alnum+"_-", 93) + "AA"
	add("anthropic-key", "my key is "+ant+" if you need it", ant)
	ghp := "gh" + "p_" + g.of(alnum, 36)
	add("github-pat", "git clone https://github.com/acme/app (token "+ghp+")", ghp)
	gho := "gh" + "o_" + g.of(alnum, 36)
	add("github-oauth", "GH_TOKEN="+gho, gho)
	akia := "AK" + "IA" + g.of(base32, 16)
	add("aws-access-key", "aws_access_key_id = "+akia, akia)
	xoxb := "xo" + "xb-" + g.of(digits, 12) + "-" + g.of(digits, 12) + "-" + g.of(alnum, 24)
	add("slack-bot-token", "SLACK_BOT_TOKEN: "+xoxb, xoxb)
	var body strings.Builder
	for i := 0; i < 6; i++ {
		body.WriteString(g.of(b64, 64) + "\n")
	}
	pem := strings.TrimSuffix(body.String(), "\n")
	add("pem-private-key", "-----BEGIN RSA "+"PRIVATE KEY-----\n"+pem+"\n-----END RSA "+"PRIVATE KEY-----", pem)
	pw := g.of(alnum, 16)
	add("url-password", "pushing to https://deploy:"+pw+"@git.example.com/app.git", pw)
	dbpw := g.of(alnum, 14)
	add("database-url", fmt.Sprintf("DATABASE_URL=postgres://app:%s@db.internal:5432/prod", dbpw), dbpw)
	return ks
}

// In reports whether s holds the secret, or any line of it (a PEM key
// stored JSON-encoded has its lines apart).
func (k Kind) In(s string) bool {
	for _, part := range strings.Split(k.Secret, "\n") {
		if strings.Contains(s, part) {
			return true
		}
	}
	return false
}

// Text is every kind's text, one a line.
func Text(ks []Kind) string {
	var b strings.Builder
	for _, k := range ks {
		b.WriteString(k.Text + "\n")
	}
	return b.String()
}
