package secret

import (
	"math/rand/v2"
	"regexp/syntax"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/inspect-dev/inspect/internal/secret/secrettest"
)

// findWhole is the rule set as gitleaks runs it: every rule whose keyword
// the text holds, its regexp over the whole text — what find, which runs
// each regexp near its keywords only, must agree with.
func findWhole(rs *ruleSet, s string) []span {
	var out []span
	occ := rs.kw.match(s, nil)
	for i, r := range rs.rules {
		if len(occ[i]) == 0 || r.compiled() == nil {
			continue
		}
		for _, m := range r.re.FindAllStringSubmatchIndex(s, -1) {
			if sp, ok := rs.secret(r, s, m); ok {
				out = append(out, sp)
			}
		}
	}
	return out
}

// covered is which bytes of s a list of secrets covers, as a string of
// '#' and '.', for comparing two finds.
func covered(s string, spans []span) string {
	b := []byte(strings.Repeat(".", len(s)))
	for _, sp := range spans {
		for i := sp.from; i < sp.to; i++ {
			b[i] = '#'
		}
	}
	return string(b)
}

// sample writes a random text the regexp re matches.
func sample(r *rand.Rand, re *syntax.Regexp, b *strings.Builder) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && r.IntN(2) == 0 {
				c = unicode.SimpleFold(c)
				if c > unicode.MaxASCII {
					c = unicode.SimpleFold(c)
				}
			}
			b.WriteRune(c)
		}
	case syntax.OpCharClass:
		var ascii [][2]rune
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], min(re.Rune[i+1], 0x7e)
			if lo <= hi && lo >= 0x20 || lo <= hi && lo == '\n' {
				ascii = append(ascii, [2]rune{lo, hi})
			}
		}
		if len(ascii) == 0 {
			b.WriteByte('x')
			return
		}
		rg := ascii[r.IntN(len(ascii))]
		b.WriteRune(rg[0] + rune(r.IntN(int(rg[1]-rg[0])+1)))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('a' + byte(r.IntN(26)))
	case syntax.OpCapture:
		sample(r, re.Sub[0], b)
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			sample(r, sub, b)
		}
	case syntax.OpAlternate:
		sample(r, re.Sub[r.IntN(len(re.Sub))], b)
	case syntax.OpQuest:
		if r.IntN(2) == 0 {
			sample(r, re.Sub[0], b)
		}
	case syntax.OpStar, syntax.OpPlus, syntax.OpRepeat:
		lo, hi := 0, 8
		if re.Op == syntax.OpPlus {
			lo = 1
		}
		if re.Op == syntax.OpRepeat {
			lo, hi = re.Min, re.Max
			if hi < 0 {
				hi = lo + 8
			}
			if r.IntN(3) == 0 {
				hi = lo // the shortest, often
			}
		}
		n := lo + r.IntN(hi-lo+1)
		for i := 0; i < n; i++ {
			sample(r, re.Sub[0], b)
		}
	}
}

// TestFind_AgreesWithWholeText: for text made of samples of every rule's
// regexp (so every rule finds something) between prose, JSON and code,
// and for the secret kinds of secrettest, find — each regexp run near
// its keywords only, anchored where its matches start at one — covers
// the same bytes as every regexp run over the whole text.
func TestFind_AgreesWithWholeText(t *testing.T) {
	rs := rules()
	rnd := rand.New(rand.NewPCG(7, 7))
	fill := []string{
		"The key question is whether the token budget holds; they obey the api. ",
		`{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","input":{"file_path":"/src/auth/token.go"}}` + "\n",
		"func apiKey() string { return os.Getenv(\"API_KEY\") } // secret: none\n",
		"see https://example.com/a?b=c and s. too\n",
	}
	for round := 0; round < 2; round++ {
		var b strings.Builder
		for _, r := range rs.rules {
			re, err := syntax.Parse(r.src, syntax.Perl)
			if err != nil {
				continue
			}
			b.WriteString(fill[rnd.IntN(len(fill))])
			sample(rnd, re, &b)
			b.WriteString([]string{" ", "\n", "\"", "'", ";", ""}[rnd.IntN(6)])
		}
		b.WriteString(secrettest.Text(secrettest.Kinds(uint64(round))))
		s := b.String()
		want, got := covered(s, findWhole(rs, s)), covered(s, rs.find(s))
		if got != want {
			for i := range want {
				if got[i] != want[i] {
					lo, hi := max(0, i-120), min(len(s), i+120)
					t.Fatalf("round %d: find differs from the whole-text scan at byte %d:\n%q\nwhole: %s\nnear:  %s", round, i, s[lo:hi], want[lo:hi], got[lo:hi])
				}
			}
		}
		if !strings.Contains(want, "#") {
			t.Fatal("nothing found: the samples prove nothing")
		}
	}
}

// TestFind_Anchored: most rules are tried only where one of their
// keywords is, and the rest near their keywords; a rule whose regexp
// begins otherwise (generic-api-key's name before its keyword) is not
// anchored.
func TestFind_Anchored(t *testing.T) {
	n := 0
	var ids []string
	for _, r := range rules().rules {
		r.compiled()
		if r.anchored != nil {
			n++
			ids = append(ids, r.id)
		}
	}
	sort.Strings(ids)
	if n < 80 {
		t.Errorf("%d rules anchored at their keywords, want most of them: %v", n, ids)
	}
	for _, id := range []string{"jwt", "github-pat", "aws-access-token", "private-key", "slack-bot-token", RuleHeader, RuleSKKey} {
		if i := sort.SearchStrings(ids, id); i == len(ids) || ids[i] != id {
			t.Errorf("%s is not anchored", id)
		}
	}
}
