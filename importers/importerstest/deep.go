package importerstest

import (
	"fmt"
	"strings"
)

// DeepTrace is an OTLP/JSON trace whose agent spans nest depth levels
// deep: each agent span holds a chat span and, overlapping its end, the
// agent span of the next level (a sub-agent: a fork of one branch).
func DeepTrace(depth int) string {
	var b strings.Builder
	const t0 = int64(1767225600) * 1_000_000_000
	end := t0 + int64(depth+10)*1_000_000_000
	b.WriteString(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"deep"}}]},"scopeSpans":[{"scope":{"name":"hand"},"spans":[`)
	for i := 0; i < depth; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		parent := ""
		if i > 0 {
			parent = fmt.Sprintf(`"parentSpanId":"%016x",`, 2*i-1)
		}
		start := t0 + int64(i)*1_000_000
		fmt.Fprintf(&b, `{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"%016x",%s"name":"invoke_agent a%d","startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"invoke_agent"}},{"key":"gen_ai.agent.name","value":{"stringValue":"a%d"}}]}`,
			2*i+1, parent, i%2, start, end-int64(i)*1_000_000, i%2)
		fmt.Fprintf(&b, `,{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"%016x","parentSpanId":"%016x","name":"chat m","startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},{"key":"gen_ai.request.model","value":{"stringValue":"m"}}]}`,
			2*i+2, 2*i+1, start+1, start+2)
	}
	b.WriteString("]}]}]}\n")
	return b.String()
}
