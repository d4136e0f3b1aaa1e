package importerstest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
)

// fixture is the path of a committed fixture under importers/.
func fixture(rel string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(filepath.Dir(file)), filepath.FromSlash(rel))
}

// hexID matches the ids of OTLP/JSON (hex) and of the Agents SDK's
// exports (trace_<32 hex>, span_<24 hex>, group_<hex>).
var hexID = regexp.MustCompile(`("(?:traceId|spanId|parentSpanId)":")([0-9a-f]{8})|((?:trace|span|group)_)([0-9a-f]{8})`)

// repeatLines writes the lines of the fixture at rel again and again into
// path until it holds size bytes, each copy's ids made new (their first
// eight hex digits are the copy's number), so that each copy is a trace
// of its own with the fixture's shape.
func repeatLines(rel, path string, size int64) error { return repeatShifted(rel, path, size, 0) }

// unixNano matches OTLP/JSON's times (nanoseconds since 1970, 19 digits).
var unixNano = regexp.MustCompile(`"(?:start|end)?[tT]imeUnixNano":"([0-9]{19})"`)

// repeatShifted is repeatLines with each copy's OTLP/JSON times later by
// shift nanoseconds than the copy before it.
func repeatShifted(rel, path string, size int64, shift int64) error {
	src, err := os.ReadFile(fixture(rel))
	if err != nil {
		return err
	}
	src = bytes.TrimRight(src, "\n")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 256<<10)
	// Where each id's first eight hex digits are, found once.
	var at []int
	for _, m := range hexID.FindAllSubmatchIndex(src, -1) {
		if m[4] >= 0 {
			at = append(at, m[4])
		} else {
			at = append(at, m[8])
		}
	}
	var times [][2]int
	if shift != 0 {
		for _, m := range unixNano.FindAllSubmatchIndex(src, -1) {
			times = append(times, [2]int{m[2], m[3]})
		}
	}
	var total int64
	out := make([]byte, len(src))
	for k := 0; total < size; k++ {
		copy(out, src)
		prefix := fmt.Sprintf("%08x", k)
		for _, i := range at {
			copy(out[i:i+8], prefix)
		}
		for _, t := range times {
			n, _ := strconv.ParseInt(string(src[t[0]:t[1]]), 10, 64)
			copy(out[t[0]:t[1]], strconv.FormatInt(n+int64(k)*shift, 10))
		}
		n, _ := w.Write(out)
		w.WriteByte('\n')
		total += int64(n) + 1
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// BigOTLP writes an OTLP/JSON lines file of at least size bytes under dir,
// the OpenInference LangGraph supervisor trace of importers/otlp/testdata
// (60 spans, 417 KB, one span a line) repeated as new traces, and returns
// its path.
func BigOTLP(dir string, size int64) (string, error) {
	path := filepath.Join(dir, "big.otlp.jsonl")
	return path, repeatLines("otlp/testdata/langgraph-supervisor.otlp.jsonl", path, size)
}

// BigAgents writes an Agents SDK JSON lines file of at least size bytes
// under dir, the parallel agents-as-tools trace of
// importers/openaiagents/testdata (31 objects, 12 KB) repeated as new
// traces, and returns its path.
func BigAgents(dir string, size int64) (string, error) {
	path := filepath.Join(dir, "big.jsonl")
	return path, repeatLines("openaiagents/testdata/parallel-agents-as-tools.jsonl", path, size)
}

// BigOpenLLMetry writes an OTLP/JSON lines file of at least size bytes
// under dir, the OpenLLMetry LangGraph supervisor run of
// importers/otlp/testdata (67 spans, each a trace of its own, 418 KB)
// repeated as new runs a minute apart, and returns its path: what
// regroup joins across the file.
func BigOpenLLMetry(dir string, size int64) (string, error) {
	path := filepath.Join(dir, "big-openllmetry.otlp.jsonl")
	return path, repeatShifted("otlp/testdata/openllmetry-langgraph-supervisor.otlp.jsonl", path, size, 60e9)
}
