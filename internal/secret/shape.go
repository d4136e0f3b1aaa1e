package secret

import (
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
)

// What a rule's regexp says of where its matches lie, read from its
// syntax tree once, so that it runs near its keywords only: whether every
// match holds a keyword (holdsKeyword), whether every match begins with
// one (startsAtKeyword), maybe after a run of name characters.

// startsAtKeyword reports whether every match of the regexp src begins
// with one of keywords (lower case; the text compared case-folded),
// maybe after up to lead characters of class (a leading "[\w.-]{0,50}?")
// — then it need only be tried where a keyword is — and whether src
// first asks for a word boundary.
func startsAtKeyword(src string, keywords []string) (wordStart bool, lead int, class []rune, ok bool) {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil || len(keywords) == 0 {
		return false, 0, nil, false
	}
	if re.Op == syntax.OpConcat && len(re.Sub) > 1 {
		if first := re.Sub[0]; first.Op == syntax.OpRepeat && first.Min == 0 && first.Max > 0 &&
			first.Sub[0].Op == syntax.OpCharClass {
			lead, class = first.Max, first.Sub[0].Rune
			re = &syntax.Regexp{Op: syntax.OpConcat, Flags: re.Flags, Sub: re.Sub[1:]}
		}
	}
	wordStart = leadingWordBoundary(re)
	ps, _ := prefixes(re)
	if len(ps) == 0 || !allStart(ps, keywords) {
		return false, 0, nil, false
	}
	return wordStart && lead == 0, lead, class, true
}

// allStart reports whether each of texts begins with one of keywords.
func allStart(texts, keywords []string) bool {
	for _, p := range texts {
		p = strings.ToLower(p)
		found := false
		for _, k := range keywords {
			if strings.HasPrefix(p, k) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// maxPrefixes bounds the literal texts the analysis tracks.
const maxPrefixes = 64

// prefixes lists literal beginnings of re such that every match of re
// begins with one of them, and whether each is the whole of what re
// matches; nil when re may begin otherwise (a class, a repeat).
func prefixes(re *syntax.Regexp) ([]string, bool) {
	if ls, ok := literals(re); ok {
		return ls, true
	}
	switch re.Op {
	case syntax.OpCapture:
		return prefixes(re.Sub[0])
	case syntax.OpAlternate:
		var out []string
		whole := true
		for _, sub := range re.Sub {
			ps, w := prefixes(sub)
			if ps == nil {
				return nil, false
			}
			out = append(out, ps...)
			whole = whole && w
		}
		if len(out) > maxPrefixes {
			return nil, false
		}
		return out, whole
	case syntax.OpConcat:
		acc := []string{""}
		for _, sub := range re.Sub {
			ps, w := prefixes(sub)
			if ps == nil {
				return acc, false
			}
			var next []string
			for _, a := range acc {
				for _, p := range ps {
					next = append(next, a+p)
				}
			}
			if len(next) > maxPrefixes {
				return acc, false
			}
			acc = next
			if !w {
				return acc, false
			}
		}
		return acc, true
	}
	return nil, false
}

// leadingWordBoundary reports whether re asks for a word boundary before
// anything else.
func leadingWordBoundary(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpWordBoundary:
		return true
	case syntax.OpCapture:
		return leadingWordBoundary(re.Sub[0])
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			switch sub.Op {
			case syntax.OpWordBoundary:
				return true
			case syntax.OpCapture:
				return leadingWordBoundary(sub)
			case syntax.OpBeginText, syntax.OpBeginLine:
			default:
				return false
			}
		}
	}
	return false
}

// holdsKeyword reports whether every match of the regexp src holds one of
// keywords (lower case, compared case-folded).
func holdsKeyword(src string, keywords []string) bool {
	re, err := syntax.Parse(src, syntax.Perl)
	return err == nil && len(keywords) > 0 && mustHold(re, keywords)
}

func mustHold(re *syntax.Regexp, kws []string) bool {
	if ls, ok := literals(re); ok {
		return allHold(ls, kws)
	}
	if ps, _ := prefixes(re); len(ps) > 0 && allHold(ps, kws) {
		return true // every match begins with a text holding a keyword
	}
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return mustHold(re.Sub[0], kws)
	case syntax.OpRepeat:
		return re.Min > 0 && mustHold(re.Sub[0], kws)
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			if !mustHold(sub, kws) {
				return false
			}
		}
		return true
	case syntax.OpConcat:
		// a run of subexpressions of a few literal texts each, taken
		// together, or one subexpression that holds a keyword itself
		var run []string
		for _, sub := range append(slices.Clone(re.Sub), nil) {
			if sub != nil {
				if ls, ok := literals(sub); ok && len(run)*len(ls) <= maxPrefixes {
					if run == nil {
						run = []string{""}
					}
					var next []string
					for _, a := range run {
						for _, l := range ls {
							next = append(next, a+l)
						}
					}
					run = next
					continue
				}
			}
			if run != nil && allHold(run, kws) {
				return true
			}
			run = nil
			if sub != nil && mustHold(sub, kws) {
				return true
			}
		}
	}
	return false
}

// allHold reports whether each of texts holds one of keywords.
func allHold(texts, kws []string) bool {
	for _, t := range texts {
		held := false
		for _, k := range kws {
			if strings.Contains(t, k) {
				held = true
				break
			}
		}
		if !held {
			return false
		}
	}
	return true
}

// literals is the few texts re matches (lower case), when there are at
// most maxPrefixes of them: literals, classes of a few characters ([Aa],
// [-_]), and alternations, optional parts and concatenations of those.
// Empty-width assertions match "".
func literals(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return []string{strings.ToLower(string(re.Rune))}, true
	case syntax.OpEmptyMatch, syntax.OpWordBoundary, syntax.OpNoWordBoundary,
		syntax.OpBeginText, syntax.OpEndText, syntax.OpBeginLine, syntax.OpEndLine:
		return []string{""}, true
	case syntax.OpCharClass:
		var set []string // at most 4 characters, case folded
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i+1]-re.Rune[i] > 4 {
				return nil, false
			}
			for c := re.Rune[i]; c <= re.Rune[i+1]; c++ {
				if l := string(unicode.ToLower(c)); !slices.Contains(set, l) {
					set = append(set, l)
				}
			}
		}
		if len(set) == 0 || len(set) > 4 {
			return nil, false
		}
		return set, true
	case syntax.OpCapture:
		return literals(re.Sub[0])
	case syntax.OpQuest:
		ls, ok := literals(re.Sub[0])
		if !ok {
			return nil, false
		}
		return append(ls, ""), true
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			ls, ok := literals(sub)
			if !ok || len(out)+len(ls) > maxPrefixes {
				return nil, false
			}
			out = append(out, ls...)
		}
		return out, true
	case syntax.OpConcat:
		acc := []string{""}
		for _, sub := range re.Sub {
			ls, ok := literals(sub)
			if !ok || len(acc)*len(ls) > maxPrefixes {
				return nil, false
			}
			var next []string
			for _, a := range acc {
				for _, l := range ls {
					next = append(next, a+l)
				}
			}
			acc = next
		}
		return acc, true
	}
	return nil, false
}

// How far a rule's match can reach from its keyword, for the stretches
// its regexp runs on.
const (
	openRepeat   = 256      // runes of an unbounded repeat a match may be cut short in
	closedRepeat = 16 << 10 // runes of one a match must get past (a PEM block's body)
	// backtrackBits is Go's regexp backtracker budget (its
	// maxBacktrackVector): a text of fewer than backtrackBits / program
	// length bytes is matched by it, several times faster than the NFA.
	backtrackBits = 256 * 1024
	backtrackProg = 500     // the longest program it takes
	nfaChunk      = 4 << 10 // the stretches joined for a rule it does not take
)

// reach is how wide a match of the regexp src can be (runes, its
// unbounded repeats counted as openRepeat, or closedRepeat when a match
// cut short inside one would not match), whether it has unbounded
// repeats, and the longest stretch its regexp should run on at once.
func reach(src string) (width int, unbounded bool, chunk int) {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return 0, false, 0
	}
	unbounded = hasUnbounded(re)
	rep := openRepeat
	if unbounded && !openTail(re) {
		rep = closedRepeat
	}
	width = maxWidth(re, rep)
	chunk = nfaChunk
	if prog, err := syntax.Compile(re.Simplify()); err == nil && len(prog.Inst) <= backtrackProg {
		chunk = backtrackBits / len(prog.Inst)
	}
	return width, unbounded, chunk
}

// maxWidth is the most runes re matches, an unbounded repeat counted as
// rep of its element.
func maxWidth(re *syntax.Regexp, rep int) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpQuest:
		return maxWidth(re.Sub[0], rep)
	case syntax.OpStar, syntax.OpPlus:
		return rep * maxWidth(re.Sub[0], rep)
	case syntax.OpRepeat:
		n := re.Max
		if n < 0 {
			n = max(re.Min, rep)
		}
		return n * maxWidth(re.Sub[0], rep)
	case syntax.OpConcat:
		w := 0
		for _, sub := range re.Sub {
			w += maxWidth(sub, rep)
		}
		return w
	case syntax.OpAlternate:
		w := 0
		for _, sub := range re.Sub {
			w = max(w, maxWidth(sub, rep))
		}
		return w
	}
	return 0 // empty-width assertions
}

func hasUnbounded(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpStar, syntax.OpPlus:
		return true
	case syntax.OpRepeat:
		if re.Max < 0 {
			return true
		}
	}
	for _, sub := range re.Sub {
		if hasUnbounded(sub) {
			return true
		}
	}
	return false
}

// openTail reports whether a match of re cut short inside its last
// unbounded repeat still matches at the end of the text: what follows
// that repeat can match nothing, or the end of the text.
func openTail(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpStar, syntax.OpPlus:
		return true
	case syntax.OpRepeat:
		return re.Max < 0 && !hasUnbounded(re.Sub[0])
	case syntax.OpCapture:
		return openTail(re.Sub[0])
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			if hasUnbounded(sub) && !openTail(sub) {
				return false
			}
		}
		return true
	case syntax.OpConcat:
		last := -1
		for i, sub := range re.Sub {
			if hasUnbounded(sub) {
				last = i
			}
		}
		if last < 0 {
			return true
		}
		if !openTail(re.Sub[last]) {
			return false
		}
		for _, sub := range re.Sub[last+1:] {
			if !endsAtEOT(sub) {
				return false
			}
		}
		return true
	}
	return false
}

// endsAtEOT reports whether re can match the empty string at the end of
// the text.
func endsAtEOT(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpEndText, syntax.OpEndLine, syntax.OpWordBoundary, syntax.OpNoWordBoundary,
		syntax.OpStar, syntax.OpQuest:
		return true
	case syntax.OpRepeat:
		return re.Min == 0 || endsAtEOT(re.Sub[0])
	case syntax.OpPlus, syntax.OpCapture:
		return endsAtEOT(re.Sub[0])
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			if endsAtEOT(sub) {
				return true
			}
		}
		return false
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !endsAtEOT(sub) {
				return false
			}
		}
		return true
	}
	return false
}
