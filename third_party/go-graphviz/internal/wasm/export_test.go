package wasm

// SetModuleBytes replaces the embedded WebAssembly module before anything
// loads it.
func SetModuleBytes(b []byte) { wasmFile = b }
