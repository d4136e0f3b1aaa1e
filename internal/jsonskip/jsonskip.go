// Package jsonskip steps over JSON values in a byte slice without decoding
// them, for code that cuts a body into pieces that must join back to the
// exact bytes (a request's messages, for the store's dedup and the Claude
// Code importer's rebuilt bodies). It checks structure — strings, nesting —
// not every detail of the grammar.
package jsonskip

// Space returns the offset of the first byte at or after i that is not JSON
// white space.
func Space(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// Value returns the offset after the JSON value that starts at i, and false
// when none starts there or it does not end before b does. A scalar ends at
// white space or at one of , ] } :.
func Value(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return str(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e, ok := str(b, j)
				if !ok {
					return 0, false
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	}
	j := i
	for j < len(b) && !scalarEnd(b[j]) {
		j++
	}
	return j, j > i
}

// str returns the offset after the string that starts at b[i] == '"'.
func str(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

func scalarEnd(c byte) bool {
	switch c {
	case ' ', '\n', '\r', '\t', ',', ']', '}', ':':
		return true
	}
	return false
}
