package findings_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/inspect-dev/inspect/findings"
)

// golden compares got with testdata/<name>, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test ./findings -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test ./findings -update and review the diff):\n%s", name, got)
	}
}

type renderer struct {
	ext   string
	write func(*bytes.Buffer, *findings.Report) error
}

var renderers = []renderer{
	{"txt", func(b *bytes.Buffer, r *findings.Report) error { return findings.WriteText(b, r) }},
	{"md", func(b *bytes.Buffer, r *findings.Report) error { return findings.WriteMarkdown(b, r) }},
	{"json", func(b *bytes.Buffer, r *findings.Report) error { return findings.WriteJSON(b, r) }},
	{"sarif", func(b *bytes.Buffer, r *findings.Report) error { return findings.WriteSARIF(b, r, nil) }},
	{"junit.xml", func(b *bytes.Buffer, r *findings.Report) error { return findings.WriteJUnit(b, r) }},
}

// TestRender_Golden renders every corpus fixture's audit in every format,
// twice (byte-stable), and compares with the goldens.
func TestRender_Golden(t *testing.T) {
	for _, name := range corpus(t) {
		t.Run(name, func(t *testing.T) {
			rep := record(t, name).audit(t)
			for _, r := range renderers {
				var a, b bytes.Buffer
				if err := r.write(&a, rep); err != nil {
					t.Fatalf("%s: %v", r.ext, err)
				}
				if err := r.write(&b, rep); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a.Bytes(), b.Bytes()) {
					t.Errorf("%s output differs between two renders", r.ext)
				}
				golden(t, filepath.Join("golden", name+"."+r.ext), a.Bytes())
			}
		})
	}
}

// TestWriteSARIF_Schema validates the SARIF of every corpus fixture against
// the official SARIF 2.1.0 schema, and checks what GitHub needs: a location
// on every result and a partial fingerprint.
func TestWriteSARIF_Schema(t *testing.T) {
	c := jsonschema.NewCompiler()
	sch, err := c.Compile(filepath.Join("testdata", "sarif-2.1.0.json"))
	if err != nil {
		t.Fatalf("compile schema: %v", err)
	}
	for _, name := range corpus(t) {
		t.Run(name, func(t *testing.T) {
			rep := record(t, name).audit(t)
			var b bytes.Buffer
			if err := findings.WriteSARIF(&b, rep, nil); err != nil {
				t.Fatal(err)
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(doc); err != nil {
				t.Fatalf("SARIF does not validate: %v", err)
			}
			var log struct {
				Runs []struct {
					Tool struct {
						Driver struct {
							Rules []struct {
								ID   string `json:"id"`
								Help struct {
									Text string `json:"text"`
								} `json:"help"`
							} `json:"rules"`
						} `json:"driver"`
					} `json:"tool"`
					Results []struct {
						RuleID              string            `json:"ruleId"`
						Locations           []json.RawMessage `json:"locations"`
						PartialFingerprints map[string]string `json:"partialFingerprints"`
					} `json:"results"`
				} `json:"runs"`
			}
			if err := json.Unmarshal(b.Bytes(), &log); err != nil {
				t.Fatal(err)
			}
			if got := len(log.Runs[0].Tool.Driver.Rules); got != len(findings.All) {
				t.Errorf("%d rule descriptors, want %d", got, len(findings.All))
			}
			for _, r := range log.Runs[0].Tool.Driver.Rules {
				if !strings.Contains(r.Help.Text, "Fix:") {
					t.Errorf("rule %s help text lacks the fix: %q", r.ID, r.Help.Text)
				}
			}
			if len(log.Runs[0].Results) != len(rep.Findings) {
				t.Errorf("%d results, want %d", len(log.Runs[0].Results), len(rep.Findings))
			}
			for _, res := range log.Runs[0].Results {
				if len(res.Locations) == 0 {
					t.Errorf("result %s has no location", res.RuleID)
				}
				if res.PartialFingerprints[findings.FingerprintKey] == "" {
					t.Errorf("result %s has no partial fingerprint", res.RuleID)
				}
			}
		})
	}
}

// TestWriteJUnit_Parses checks the JUnit XML is well formed with one case
// per rule and one failure per rule that found something.
func TestWriteJUnit_Parses(t *testing.T) {
	rep := record(t, "audit-fork-uneven").audit(t)
	var b bytes.Buffer
	if err := findings.WriteJUnit(&b, rep); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("JUnit is not XML: %v", err)
	}
	if doc.Tests != len(findings.All) || doc.Failures != 1 {
		t.Errorf("tests=%d failures=%d, want %d and 1", doc.Tests, doc.Failures, len(findings.All))
	}
}
