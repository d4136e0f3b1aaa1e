//go:build tools

// Package jaeger pins the Jaeger that .ci/run builds for the round trip
// through a real trace backend (cmd/inspect TestJaeger). It is its own
// module so the product's go.mod does not carry Jaeger's dependencies.
package jaeger

import _ "github.com/jaegertracing/jaeger/cmd/jaeger"
