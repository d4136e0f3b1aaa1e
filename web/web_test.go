package web_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/inspect-dev/inspect/web"
)

// get fetches path without following redirects.
func get(t *testing.T, base, path string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func mustGet(t *testing.T, base, path string) string {
	t.Helper()
	resp, body := get(t, base, path)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d\n%.2000s", path, resp.StatusCode, body)
	}
	return body
}

// parse reads a page as a browser would.
func parse(t *testing.T, page string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// walk calls fn for every element.
func walk(n *html.Node, fn func(*html.Node)) {
	if n.Type == html.ElementNode {
		fn(n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, c string) bool {
	for _, f := range strings.Fields(attr(n, "class")) {
		if f == c {
			return true
		}
	}
	return false
}

// all returns the elements for which match is true.
func all(doc *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	walk(doc, func(n *html.Node) {
		if match(n) {
			out = append(out, n)
		}
	})
	return out
}

func text(n *html.Node) string {
	var b strings.Builder
	var rec func(*html.Node)
	rec = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			rec(c)
		}
	}
	rec(n)
	return b.String()
}

// checkPolicy: the page's inline script and style are exactly what the
// policy's hashes allow, and the policy allows nothing else to run.
func checkPolicy(t *testing.T, name, policy, page string) {
	t.Helper()
	doc := parse(t, page)
	scripts := all(doc, func(n *html.Node) bool { return n.Data == "script" })
	styles := all(doc, func(n *html.Node) bool { return n.Data == "style" })
	if len(scripts) != 1 || len(styles) != 1 {
		t.Fatalf("%s: %d scripts and %d styles, want one of each", name, len(scripts), len(styles))
	}
	for _, el := range []*html.Node{scripts[0], styles[0]} {
		sum := sha256.Sum256([]byte(text(el)))
		h := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
		if !strings.Contains(policy, h) {
			t.Errorf("%s: the policy %q does not allow the page's %s (%s)", name, policy, el.Data, h)
		}
	}
	for _, want := range []string{"default-src 'none'", "base-uri 'none'"} {
		if !strings.Contains(policy, want) {
			t.Errorf("%s: policy %q lacks %s", name, policy, want)
		}
	}
	if strings.Contains(policy, "unsafe") || strings.Contains(policy, "http") {
		t.Errorf("%s: policy %q allows more than the page's own assets", name, policy)
	}
	walk(doc, func(n *html.Node) {
		for _, a := range n.Attr {
			if strings.HasPrefix(a.Key, "on") || a.Key == "style" || strings.HasPrefix(strings.TrimSpace(strings.ToLower(a.Val)), "javascript:") {
				t.Errorf("%s: <%s %s=%q>: an inline handler, style or script URL", name, n.Data, a.Key, a.Val)
			}
		}
	})
}

func TestRunsPage(t *testing.T) {
	srv, ids := served(t, web.Options{})
	resp, page := get(t, srv.URL, "/")
	if resp.StatusCode != 200 {
		t.Fatalf("GET /: %d", resp.StatusCode)
	}
	checkPolicy(t, "runs", resp.Header.Get("Content-Security-Policy"), page)
	for _, h := range []string{"X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("no %s header", h)
		}
	}
	if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Error("the served policy does not forbid framing")
	}
	doc := parse(t, page)
	rows := all(doc, func(n *html.Node) bool { return n.Data == "tr" && attr(n, "data-run") != "" })
	var order []string
	for _, r := range rows {
		order = append(order, attr(r, "data-run"))
	}
	want := []string{ids["imported"], ids["hostile"], ids["handoff-chain"], ids["failing-branch"], ids["demo"]}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("rows %v, want every run newest first %v", order, want)
	}
	for _, tt := range []struct {
		query string
		want  []string
	}{
		{"?source=otlp", []string{ids["imported"]}},
		{"?agent=writer", []string{ids["demo"]}},
		{"?q=licence", []string{ids["failing-branch"]}},
		{"?q=Q3+REVENUE", []string{ids["demo"]}},
		{"?status=running", nil},
		{"?q=" + ids["handoff-chain"][:6] + "&fragment=rows", []string{ids["handoff-chain"]}},
	} {
		_, page := get(t, srv.URL, "/"+tt.query)
		if strings.Contains(tt.query, "fragment") {
			page = "<table><tbody>" + page + "</tbody></table>"
		}
		var got []string
		for _, r := range all(parse(t, page), func(n *html.Node) bool { return n.Data == "tr" && attr(n, "data-run") != "" }) {
			got = append(got, attr(r, "data-run"))
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("GET /%s: rows %v, want %v", tt.query, got, tt.want)
		}
		if strings.Contains(tt.query, "fragment") && strings.Contains(page, "<head") {
			t.Errorf("GET /%s is the whole page, not the rows", tt.query)
		}
	}
	if _, page := get(t, srv.URL, "/?status=running"); !strings.Contains(page, "No run matches these filters (5 runs in all)") {
		t.Errorf("an empty filter does not say so:\n%.3000s", page)
	}
}

// TestRunPage: the demo's page has the graph (a box per node, ids the
// findings and timeline use), a lane per conversation, the findings with
// the boxes of their evidence, the grades, and the cache figures.
func TestRunPage(t *testing.T) {
	srv, ids := served(t, web.Options{})
	id := ids["demo"]
	resp, page := get(t, srv.URL, "/runs/"+id)
	if resp.StatusCode != 200 {
		t.Fatalf("GET run: %d\n%.2000s", resp.StatusCode, page)
	}
	checkPolicy(t, "run", resp.Header.Get("Content-Security-Policy"), page)
	doc := parse(t, page)
	boxes := all(doc, func(n *html.Node) bool { return n.Data == "g" && hasClass(n, "node") })
	if len(boxes) != 26 {
		t.Errorf("the graph has %d boxes, want 26 (one per node)", len(boxes))
	}
	seen := map[string]bool{}
	for _, b := range boxes {
		seen[attr(b, "id")] = true
	}
	for _, want := range []string{"g-n1", "g-n9", "g-n20", "g-n26"} {
		if !seen[want] {
			t.Errorf("no graph box %s", want)
		}
	}
	clusters := all(doc, func(n *html.Node) bool { return n.Data == "g" && hasClass(n, "cluster") })
	if len(clusters) != 2 || !hasClass(clusters[1], "slowest") || !hasClass(clusters[1], "critical") {
		t.Errorf("branch clusters %d (want 2, the second slowest and critical)", len(clusters))
	}
	var lanes []string
	for _, l := range all(doc, func(n *html.Node) bool { return n.Data == "g" && hasClass(n, "lane") }) {
		lanes = append(lanes, attr(l, "data-lane"))
		if attr(l, "data-lane") == "b2" && !(hasClass(l, "crit") && hasClass(l, "slowest")) {
			t.Errorf("the risks lane is not marked critical and slowest: %q", attr(l, "class"))
		}
	}
	if strings.Join(lanes, " ") != "trunk b1 b2" {
		t.Errorf("lanes %v, want trunk b1 b2 (one per conversation)", lanes)
	}
	handoffs := all(doc, func(n *html.Node) bool { return n.Data == "rect" && hasClass(n, "handoff") })
	if len(handoffs) != 1 || attr(handoffs[0], "data-box") != "n22" {
		t.Errorf("hand-off markers %d, want one at n22", len(handoffs))
	}
	var found []string
	for _, b := range all(doc, func(n *html.Node) bool { return hasClass(n, "finding-btn") }) {
		found = append(found, attr(b, "data-boxes"))
	}
	if strings.Join(found, " | ") != "n2 n3 n4 n5 n6 n7 | n9 n14 n20 | n22 n23 n25" {
		t.Errorf("finding boxes %q", found)
	}
	for _, want := range []string{"Forking <b>D</b>", "Delegation <b>A</b>", "Hand-offs <b>B</b>", "missed fan-out", "uneven division",
		"The end waited on trunk → risks", "8,402</td>", `id="info-n14"`, `href="/runs/` + id + `/nodes/n14"`,
		`href="/runs/` + id + `/report.html"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the run page lacks %q", want)
		}
	}
	// the prompt-cache analysis: where reuse broke, totals per agent
	for _, want := range []string{"Where reuse broke", "<b>new agent after a hand-off</b>: 1 call, ≈715 tokens sent uncached",
		"<b>fork branch start (its assignment, or its agent&#39;s own prompt)</b>: 2 calls", `href="/runs/` + id + `/nodes/n23">n23</a>`, "hit ratio 69%", "<th scope=\"row\">writer</th>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the cache section lacks %q", want)
		}
	}
	if !strings.Contains(page, "reuse 95%") {
		t.Error("the graph's llm boxes do not show their reusable share")
	}

	// A prefix and "latest" redirect to the full id; ?node= selects its box.
	if resp, _ := get(t, srv.URL, "/runs/"+id[:5]+"?node=n13"); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/runs/"+id+"?node=n13" {
		t.Errorf("a prefix: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := get(t, srv.URL, "/runs/latest"); resp.Header.Get("Location") != "/runs/"+ids["imported"] {
		t.Errorf("latest redirects to %q, want the newest run", resp.Header.Get("Location"))
	}
	if page := mustGet(t, srv.URL, "/runs/"+id+"?node=n13"); !strings.Contains(page, `id="select" data-box="n13"`) {
		t.Error("?node=n13 does not select box n13")
	}
	for _, tt := range []struct{ path, want string }{
		{"/runs/zzzz", "zzzz"},
		{"/runs/" + id + "/nodes/n999", "n999"},
		{"/nowhere", "there is no page /nowhere"},
	} {
		resp, page := get(t, srv.URL, tt.path)
		if resp.StatusCode != 404 || !strings.Contains(page, tt.want) {
			t.Errorf("GET %s: %d, want 404 naming %q:\n%.1500s", tt.path, resp.StatusCode, tt.want, page)
		}
	}
	if resp, page := get(t, srv.URL, "/runs/"+id+"/nodes/seven"); resp.StatusCode != 400 || !strings.Contains(page, "e.g. n7") {
		t.Errorf("a bad node reference: %d", resp.StatusCode)
	}
}

// TestNodePage: an llm node shows its exact request folded by system
// prompt, tools and messages, its response and usage; a tool node its
// arguments and result; the imported run's request says it is
// reconstructed.
func TestNodePage(t *testing.T) {
	srv, ids := served(t, web.Options{})
	id := ids["demo"]
	resp, page := get(t, srv.URL, "/runs/"+id+"/nodes/n2")
	if resp.StatusCode != 200 {
		t.Fatalf("GET n2: %d", resp.StatusCode)
	}
	checkPolicy(t, "node", resp.Header.Get("Content-Security-Policy"), page)
	for _, want := range []string{"Request <span class=\"muted small\">exact", "System prompt", "Tools <span class=\"muted small\">4 offered",
		"Messages <span class=\"muted small\">2", "1. system", "2. user", "Write a Q3 revenue brief", "finish_reason tool_calls",
		"regions/eu.md", "1,382", `rel="next" href="/runs/` + id + `/nodes/n3"`, `rel="prev" href="/runs/` + id + `/nodes/n1"`} {
		if !strings.Contains(page, want) {
			t.Errorf("n2 lacks %q", want)
		}
	}
	if strings.Contains(page, "Reconstructed request") {
		t.Error("an exact request says it is reconstructed")
	}
	page = mustGet(t, srv.URL, "/runs/"+id+"/nodes/n23")
	for _, want := range []string{"<b>1%</b> predicted: 22 of 2,822 bytes", "tool write_file added", "new agent writer after the hand-off at n22", "≈715 tokens"} {
		if !strings.Contains(page, want) {
			t.Errorf("n23's cache figures lack %q", want)
		}
	}
	if page := mustGet(t, srv.URL, "/runs/"+id+"/nodes/n3"); !strings.Contains(page, "Arguments") || !strings.Contains(page, "regions/eu.md") {
		t.Error("the tool node n3 does not show its arguments")
	}
	if page := mustGet(t, srv.URL, "/runs/"+id+"/nodes/n9"); !strings.Contains(page, "Fork <span class=\"muted small\">compact context") {
		t.Error("the fork node n9 does not show its branches")
	}
	imp := ids["imported"]
	page = mustGet(t, srv.URL, "/runs/"+imp+"/nodes/n2")
	if !strings.Contains(page, "Reconstructed request.") || !strings.Contains(page, "reconstructed,") {
		t.Errorf("the imported llm node does not say its request is reconstructed:\n%.3000s", page)
	}
	if page := mustGet(t, srv.URL, "/runs/"+imp); !strings.Contains(page, "Imported from <b>otlp") {
		t.Error("the imported run's page does not say where it came from")
	}
}

func TestDiffPage(t *testing.T) {
	srv, ids := served(t, web.Options{})
	page := mustGet(t, srv.URL, "/diff?run="+ids["failing-branch"]+"&run="+ids["demo"])
	// picked from the list, the older run (demo) is the base
	if !strings.Contains(page, "base <a class=\"mono\" href=\"/runs/"+ids["demo"]) {
		t.Errorf("the older run is not the base:\n%.3000s", page)
	}
	for _, want := range []string{"Totals", "tokens in", "Fixed <span class=\"count\">3", "New <span class=\"count\">1", "branch.failed"} {
		if !strings.Contains(page, want) {
			t.Errorf("the diff lacks %q", want)
		}
	}
	if resp, _ := get(t, srv.URL, "/diff?run="+ids["demo"]); resp.StatusCode != 400 {
		t.Errorf("one run to compare: %d, want 400", resp.StatusCode)
	}
	if page := mustGet(t, srv.URL, "/diff"); !strings.Contains(page, "Pick a base run") {
		t.Error("the empty comparison does not say what to do")
	}
}

// TestHostile: every piece of the hostile project's text reaches the
// pages as text: no element, attribute or script of its own.
func TestHostile(t *testing.T) {
	srv, ids := served(t, web.Options{})
	id := ids["hostile"]
	paths := []string{"/", "/?q=%3Cscript%3E", "/runs/" + id, "/diff?base=" + id + "&new=" + ids["demo"]}
	for i := 1; i <= 16; i++ {
		paths = append(paths, "/runs/"+id+"/nodes/n"+strconv.Itoa(i))
	}
	for _, p := range paths {
		resp, page := get(t, srv.URL, p)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", p, resp.StatusCode)
		}
		checkPolicy(t, p, resp.Header.Get("Content-Security-Policy"), page)
		doc := parse(t, page)
		walk(doc, func(n *html.Node) {
			switch n.Data {
			case "img", "iframe", "object", "embed", "base":
				t.Errorf("%s: a <%s> element from the content", p, n.Data)
			}
			if (n.Data == "svg" || n.Data == "a") && attr(n, "href") != "" && !strings.HasPrefix(attr(n, "href"), "/") && !strings.HasPrefix(attr(n, "href"), "#") {
				t.Errorf("%s: a link to %q", p, attr(n, "href"))
			}
		})
		if strings.Contains(page, "<script>window.__pwned") {
			t.Errorf("%s: the content's script is in the page as markup", p)
		}
	}
	page := mustGet(t, srv.URL, "/runs/"+id)
	if !strings.Contains(text(parse(t, page)), "Compare <script>window.__pwned=10</script> regions") {
		t.Error("the task is not shown as text")
	}
	page = mustGet(t, srv.URL, "/runs/"+id+"/nodes/n4")
	if !strings.Contains(text(parse(t, page)), "</script><script>window.__pwned=14</script>") {
		t.Errorf("the tool's arguments are not shown as text:\n%.3000s", page)
	}
}

// TestReport: one self-contained file: the policy in a meta element (no
// fetch, only its own script and style), no link to any page or asset.
func TestReport(t *testing.T) {
	srv, ids := served(t, web.Options{})
	id := ids["demo"]
	resp, page := get(t, srv.URL, "/runs/"+id+"/report.html")
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("the report download: %d %q", resp.StatusCode, resp.Header.Get("Content-Disposition"))
	}
	doc := parse(t, page)
	metas := all(doc, func(n *html.Node) bool {
		return n.Data == "meta" && strings.EqualFold(attr(n, "http-equiv"), "Content-Security-Policy")
	})
	if len(metas) != 1 {
		t.Fatalf("%d policy meta elements, want 1", len(metas))
	}
	policy := attr(metas[0], "content")
	checkPolicy(t, "report", policy, page)
	if !strings.Contains(policy, "connect-src 'none'") {
		t.Errorf("the report's policy allows fetches: %q", policy)
	}
	walk(doc, func(n *html.Node) {
		for _, k := range []string{"href", "src", "action"} {
			if v := attr(n, k); v != "" && !strings.HasPrefix(v, "#") && !strings.HasPrefix(v, "data:") {
				t.Errorf("the report points at %s=%q (<%s>)", k, v, n.Data)
			}
		}
	})
	if !strings.Contains(page, "missed fan-out") || !strings.Contains(page, `class="tl-svg"`) || !strings.Contains(page, `id="g-n9"`) {
		t.Error("the report lacks the findings, the timeline or the graph")
	}
}

// TestServe_ReadOnly: serving every page leaves the database file as it was.
func TestServe_ReadOnly(t *testing.T) {
	srv, ids := served(t, web.Options{})
	before, err := os.ReadFile(runs.path)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		mustGet(t, srv.URL, "/runs/"+id)
		mustGet(t, srv.URL, "/runs/"+id+"/nodes/n1")
		mustGet(t, srv.URL, "/runs/"+id+"/report.html")
	}
	mustGet(t, srv.URL, "/")
	after, err := os.ReadFile(runs.path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("serving changed the database file")
	}
}

// TestServe_Hosts: with Hosts set, a request addressed to another name
// (a DNS rebinding page) is refused, by the pages and by a mounted handler
// alike; mounted handlers are otherwise served as they are.
func TestServe_Hosts(t *testing.T) {
	mounted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "mounted") })
	srv, _ := served(t, web.Options{Hosts: []string{"127.0.0.1", "localhost", "::1"}, Mounts: []web.Mount{{Pattern: "POST /v1/traces", Handler: mounted}}})
	if resp, _ := get(t, srv.URL, "/", "Host", "evil.example:7777"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("Host evil.example: %d, want 403", resp.StatusCode)
	}
	if resp, _ := get(t, srv.URL, "/", "Host", "localhost:7777"); resp.StatusCode != 200 {
		t.Errorf("Host localhost: %d, want 200", resp.StatusCode)
	}
	resp, err := http.Post(srv.URL+"/v1/traces", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "mounted" {
		t.Errorf("the mounted handler answered %q", b)
	}
	req, _ := http.NewRequest("POST", srv.URL+"/v1/traces", strings.NewReader("{}"))
	req.Host = "evil.example:7777"
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || string(b) == "mounted" {
		t.Errorf("a post to the mounted handler addressed to evil.example: %d %q, want 403", resp.StatusCode, b)
	}
}

// TestRunState: what a live page polls.
func TestRunState(t *testing.T) {
	srv, ids := served(t, web.Options{})
	body := mustGet(t, srv.URL, "/runs/"+ids["demo"]+"/state")
	if !regexp.MustCompile(`^\{"status":"ok","nodes":26,"ended":\d+\}$`).MatchString(body) {
		t.Errorf("state %q", body)
	}
}

// TestWriteReport_Store: the report straight from the store, as `inspect
// report` writes it.
func TestWriteReport_Store(t *testing.T) {
	_, ids := served(t, web.Options{})
	b := string(report(t, ids["failing-branch"]))
	if !strings.Contains(b, "branch.failed") || !strings.Contains(b, "<meta http-equiv=\"Content-Security-Policy\"") {
		t.Errorf("report:\n%.2000s", b)
	}
}

func TestUnescapeHTMLEscapes(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"a":"\u003cb\u003e \u0026"}`, `{"a":"<b> &"}`},
		{`{"a":"\\u003c"}`, `{"a":"\\u003c"}`}, // an escaped backslash, then text
		{`{"a":"\"\u003c"}`, `{"a":"\"<"}`},
		{`{"a":"\u00e9"}`, `{"a":"\u00e9"}`},
	} {
		if got := web.UnescapeHTMLEscapes(tt.in); got != tt.want {
			t.Errorf("unescape(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestRunPage_Progressive: a large run's page opens with its graph and
// timeline, and its audit and cache figures come as parts.
func TestRunPage_Progressive(t *testing.T) {
	srv, ids := served(t, web.Options{Progressive: 1})
	id := ids["demo"]
	page := mustGet(t, srv.URL, "/runs/"+id)
	for _, part := range []string{`data-part="head"`, `data-part="findings"`, `data-part="cache"`} {
		if !strings.Contains(page, part) {
			t.Errorf("the page has no %s placeholder", part)
		}
	}
	if !strings.Contains(page, `id="g-n9"`) || !strings.Contains(page, `data-lane="b2"`) {
		t.Error("the progressive page lacks the graph or the timeline")
	}
	findings := mustGet(t, srv.URL, "/runs/"+id+"/part/findings")
	if !strings.Contains(findings, `data-boxes="n2 n3 n4 n5 n6 n7"`) || strings.Contains(findings, "<html") {
		t.Errorf("the findings part:\n%.2000s", findings)
	}
	if head := mustGet(t, srv.URL, "/runs/"+id+"/part/head"); !strings.Contains(head, "Forking <b>D</b>") || !strings.Contains(head, "The audit found 3 mistakes") {
		t.Errorf("the head part:\n%s", head)
	}
	if c := mustGet(t, srv.URL, "/runs/"+id+"/part/cache"); !strings.Contains(c, "Where reuse broke") {
		t.Errorf("the cache part:\n%.2000s", c)
	}
	if resp, _ := get(t, srv.URL, "/runs/"+id+"/part/nothing"); resp.StatusCode != 404 {
		t.Errorf("an unknown part: %d", resp.StatusCode)
	}
	// the report never waits on parts
	if rep := mustGet(t, srv.URL, "/runs/"+id+"/report.html"); strings.Contains(rep, `data-part="`) || !strings.Contains(rep, "missed fan-out") {
		t.Error("the report of a large run is not whole")
	}
}

// TestRunPage_ManyFindings: a run with hundreds of findings shows the
// first few of each rule and one item for the rest of it; the findings
// page lists them all, a page at a time.
func TestRunPage_ManyFindings(t *testing.T) {
	srv, id := bigRun(t, 3000)
	page := mustGet(t, srv.URL, "/runs/"+id)
	doc := parse(t, page)
	full := all(doc, func(n *html.Node) bool { return n.Data == "li" && hasClass(n, "finding") && !hasClass(n, "group") })
	groups := all(doc, func(n *html.Node) bool { return n.Data == "li" && hasClass(n, "finding") && hasClass(n, "group") })
	if len(groups) == 0 {
		t.Fatalf("no group item among %d findings", len(full))
	}
	perRule := map[string]int{}
	for _, f := range full {
		perRule[attr(f, "id")]++
	}
	if len(full) > 5*13 {
		t.Errorf("%d findings in full, want at most 5 per rule", len(full))
	}
	m := regexp.MustCompile(`(\d[\d,]*) more ([a-z -]+) findings`).FindStringSubmatch(text(groups[0]))
	if m == nil {
		t.Fatalf("group item reads %q", text(groups[0]))
	}
	links := all(groups[0], func(n *html.Node) bool { return n.Data == "a" && strings.Contains(attr(n, "href"), "/findings?rule=") })
	if len(links) != 1 {
		t.Fatal("the group item does not link its rule's list")
	}
	list := mustGet(t, srv.URL, attr(links[0], "href"))
	items := all(parse(t, list), func(n *html.Node) bool { return n.Data == "li" && hasClass(n, "finding") })
	if len(items) == 0 || len(items) > 100 {
		t.Errorf("the rule's list shows %d findings on its first page, want 1..100", len(items))
	}
	if resp, _ := get(t, srv.URL, "/runs/"+id+"/findings?page=0"); resp.StatusCode != 400 {
		t.Errorf("page 0: %d, want 400", resp.StatusCode)
	}
}
