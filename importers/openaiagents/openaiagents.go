// Package openaiagents reads the OpenAI Agents SDK's trace and span JSON
// (format "openai-agents"): the objects the Python SDK's export() and the JS
// SDK's toJSON() give, one a line, as a JSON array, or as the ingest payload
// {"data": [...]}, from Chat Completions and Responses models, with or
// without the runner's task and turn spans, with sensitive data on or off.
// Each trace is one Session: agent spans are conversations (an agent span
// that follows another at the same level is a hand-off in the same
// conversation), generation and response spans are model responses,
// function spans are tools, hand-off spans are hand-offs, and agent-as-tool
// calls made by one response are one fork with a branch each.
package openaiagents

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/inspect-dev/inspect/importers"
)

// Name is the format's name.
const Name = "openai-agents"

// Format is the openai-agents importer.
type Format struct{}

var _ importers.Format = Format{}

// Name returns "openai-agents".
func (Format) Name() string { return Name }

// detectRE matches the object field of a trace or span in the first
// kilobytes of a file.
var detectRE = regexp.MustCompile(`"object"\s*:\s*"trace(\.span)?"`)

// Detect reports whether path starts with an Agents SDK trace or span,
// reading at most 8 KB.
func (Format) Detect(path string) bool {
	return detectRE.Match(importers.Head(path, 8<<10))
}

// Read parses every trace in path into a Session, in the order the traces
// first appear.
func (Format) Read(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
	c := newCollector(path, opt)
	if err := c.readFile(ctx); err != nil {
		return nil, err
	}
	if len(c.traces) == 0 {
		return nil, fmt.Errorf("%s: no Agents SDK trace or span in the file", path)
	}
	return c.sessions(), nil
}

// readFile reads the collector's file: JSON lines, or one document.
func (c *collector) readFile(ctx context.Context) error {
	f, err := importers.OpenRegular(c.path)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	first, err := firstByte(br)
	if err != nil {
		if err == io.EOF {
			return fmt.Errorf("%s: empty file", c.path)
		}
		return err
	}
	if first == '[' || (first == '{' && isPayload(br)) {
		err = c.readDocument(ctx, br)
	} else {
		err = c.readLines(ctx, br)
	}
	if err != nil {
		return err
	}
	if c.truncated {
		c.report.Skip("truncated document")
	}
	return nil
}

// firstByte peeks the first non-space byte.
func firstByte(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		if b != ' ' && b != '\t' && b != '\r' && b != '\n' && b != 0xEF && b != 0xBB && b != 0xBF {
			return b, br.UnreadByte()
		}
	}
}

// isPayload reports whether the object br starts with is {"data": [...]}
// rather than one trace or span (its first key is "data").
func isPayload(br *bufio.Reader) bool {
	head, _ := br.Peek(4 << 10)
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	key, err := dec.Token()
	return err == nil && key == "data"
}

// readLines reads one object a line.
func (c *collector) readLines(ctx context.Context, r io.Reader) error {
	lr := importers.NewLineReader(r)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, n, unterminated, err := lr.Next()
		if err == io.EOF {
			return nil
		}
		if errors.Is(err, importers.ErrLineTooLong) {
			if perr := c.report.Problem(c.opt, c.path, n, err); perr != nil {
				return perr
			}
			continue
		}
		if err != nil {
			return err
		}
		var it item
		if err := json.Unmarshal(line, &it); err != nil {
			if unterminated {
				c.report.Skip("truncated last line")
				return nil
			}
			if perr := c.report.Problem(c.opt, c.path, n, fmt.Errorf("not a JSON object: %v", err)); perr != nil {
				return perr
			}
			continue
		}
		if err := c.add(&it, n); err != nil {
			return err
		}
	}
}

// readDocument reads a JSON array of objects, or {"data": [...]}, element
// by element.
func (c *collector) readDocument(ctx context.Context, r io.Reader) error {
	dec := json.NewDecoder(r)
	t, err := dec.Token()
	if err != nil {
		return c.report.Problem(importers.Options{Strict: true}, c.path, 1, err)
	}
	if t == json.Delim('{') {
		for {
			key, err := dec.Token()
			if err != nil {
				return c.docProblem(err)
			}
			if key == json.Delim('}') {
				return nil
			}
			if key != "data" {
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return c.docProblem(err)
				}
				continue
			}
			if t, err = dec.Token(); err != nil || t != json.Delim('[') {
				return c.docProblem(errors.New(`"data" is not an array`))
			}
			if err := c.readElements(ctx, dec); err != nil || c.truncated {
				return err
			}
		}
	}
	return c.readElements(ctx, dec)
}

// readElements decodes array elements up to the closing bracket.
func (c *collector) readElements(ctx context.Context, dec *json.Decoder) error {
	for i := 1; dec.More(); i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		var it item
		if err := dec.Decode(&it); err != nil {
			var syn *json.SyntaxError
			if errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
				// A document cut short (a file still being written): what was read stands.
				c.truncated = true
				return nil
			}
			if perr := c.report.Problem(c.opt, c.path, i, fmt.Errorf("element %d: %v", i, err)); perr != nil {
				return perr
			}
			continue
		}
		if err := c.add(&it, i); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing bracket
		c.truncated = true
	}
	return nil
}

func (c *collector) docProblem(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
		c.truncated = true
		return nil
	}
	return c.report.Problem(c.opt, c.path, 1, err)
}
