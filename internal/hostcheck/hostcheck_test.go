package hostcheck

import "testing"

func TestAllowed(t *testing.T) {
	allowed := []string{"127.0.0.1", "localhost", "[::1]"}
	for host, want := range map[string]bool{
		"127.0.0.1:4318":              true,
		"LOCALHOST:8080":              true,
		"localhost":                   true,
		"[::1]:9":                     true,
		"::1":                         true,
		"evil.example:4318":           false,
		"127.0.0.1.evil.example":      false,
		"localhost.:80":               false,
		"":                            false,
		"127.0.0.1:4318@evil.example": false,
	} {
		if got := Allowed(host, allowed); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", host, got, want)
		}
	}
}
