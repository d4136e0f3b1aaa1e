package importers

import (
	"fmt"
	"strings"
)

// UnknownFormatError says that no format recognised a path, and which were
// tried.
type UnknownFormatError struct {
	Path  string
	Tried []string
}

func (e *UnknownFormatError) Error() string {
	return fmt.Sprintf("%s is in none of the formats inspect imports (tried %s); name one with --format if it should be read anyway",
		e.Path, strings.Join(e.Tried, ", "))
}

// Detect returns the first of formats whose Detect accepts path, or an
// *UnknownFormatError naming every format tried.
func Detect(formats []Format, path string) (Format, error) {
	var tried []string
	for _, f := range formats {
		if f.Detect(path) {
			return f, nil
		}
		tried = append(tried, f.Name())
	}
	return nil, &UnknownFormatError{Path: path, Tried: tried}
}

// ByName returns the format called name, or nil.
func ByName(formats []Format, name string) Format {
	for _, f := range formats {
		if f.Name() == name {
			return f
		}
	}
	return nil
}

// Names lists the formats' names, in order.
func Names(formats []Format) []string {
	out := make([]string, len(formats))
	for i, f := range formats {
		out[i] = f.Name()
	}
	return out
}
