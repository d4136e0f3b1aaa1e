// Package hostcheck decides whether an HTTP request was addressed to a name
// a loopback server answers to: the defence of inspect serve and inspect
// collect against DNS rebinding, where a page of another site posts to
// 127.0.0.1 under its own host name.
package hostcheck

import (
	"net"
	"strings"
)

// Allowed reports whether a request's Host header (with or without a port,
// an IPv6 address with or without brackets) names one of allowed,
// case-insensitively. A port that is not a number is not a port: the
// header is refused.
func Allowed(host string, allowed []string) bool {
	if h, port, err := net.SplitHostPort(host); err == nil {
		if !digits(port) {
			return false
		}
		host = h
	}
	host = strings.Trim(strings.ToLower(host), "[]")
	for _, a := range allowed {
		if strings.Trim(strings.ToLower(a), "[]") == host {
			return true
		}
	}
	return false
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
