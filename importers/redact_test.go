package importers

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/inspect-dev/inspect/internal/secret/secrettest"
)

// TestRedactor_BodyByMessage: a body the source gave is redacted message
// by message, each message scanned once however many later requests
// repeat it, and what comes out is what redacting the whole body gives:
// no secret left, in a message or in the system prompt, in the first
// request or a later one.
func TestRedactor_BodyByMessage(t *testing.T) {
	for _, k := range secrettest.Kinds(7) {
		t.Run(k.Name, func(t *testing.T) {
			msg := func(role, text string) string {
				b, _ := json.Marshal(map[string]any{"role": role, "content": []any{map[string]any{"type": "text", "text": text}}})
				return string(b)
			}
			system, _ := json.Marshal("You are helpful.")
			secretSystem, _ := json.Marshal("You are helpful.\n" + k.Text)
			body := func(system []byte, msgs ...string) []byte {
				s := `{"model":"m","messages":[` + msgs[0]
				for _, m := range msgs[1:] {
					s += "," + m
				}
				return []byte(s + `],"system":` + string(system) + `,"stream":true}`)
			}
			m1, m2, m3 := msg("user", "hello there"), msg("assistant", "the log says\n"+k.Text), msg("user", "and then?")
			bodies := [][]byte{body(system, m1), body(system, m1, m2), body(system, m1, m2, m3), body(secretSystem, m1, m2, m3)}
			x, whole := &redactor{}, &redactor{}
			for i, b := range bodies {
				got, want := x.body(b), whole.r.JSON(b, &whole.tally)
				if !bytes.Equal(got, want) {
					t.Errorf("request %d: by message\n%s\nwhole\n%s", i+1, got, want)
				}
				if k.In(string(got)) || !json.Valid(got) {
					t.Errorf("request %d holds the secret or is not JSON: %s", i+1, got)
				}
			}
			if x.tally.Total() != whole.tally.Total() || x.tally.Total() == 0 {
				t.Errorf("redacted %d values, the whole bodies %d", x.tally.Total(), whole.tally.Total())
			}
		})
	}
}
