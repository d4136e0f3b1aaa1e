package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Per no-color.org only a non-empty NO_COLOR turns colour off: NO_COLOR=
// (set but empty) leaves a terminal styled. A non-terminal stdout is never
// styled, whatever the environment says.
func TestSystemStreams_NoColor(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "tty"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := isTerminal
	t.Cleanup(func() { isTerminal = old })
	isTerminal = func(int) bool { return true } // f stands in for a terminal

	tests := []struct {
		name    string
		env     map[string]string
		noColor bool
	}{
		{"unset", nil, false},
		{"set but empty", map[string]string{"NO_COLOR": ""}, false},
		{"1", map[string]string{"NO_COLOR": "1"}, true},
		{"any text", map[string]string{"NO_COLOR": "false"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := SystemStreams(nil, f, f, func(k string) string { return tt.env[k] })
			if !s.OutTTY || s.NoColor != tt.noColor || s.Styled() == tt.noColor {
				t.Errorf("NO_COLOR %q: OutTTY %v NoColor %v Styled %v; want a terminal with NoColor %v", tt.env["NO_COLOR"], s.OutTTY, s.NoColor, s.Styled(), tt.noColor)
			}
		})
	}

	isTerminal = old
	s := SystemStreams(nil, new(bytes.Buffer), new(bytes.Buffer), func(string) string { return "" })
	if s.OutTTY || !s.NoColor || s.Styled() {
		t.Errorf("a buffer as stdout: OutTTY %v NoColor %v; want no terminal and no colour", s.OutTTY, s.NoColor)
	}
}
