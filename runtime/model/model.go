// Package model defines the small interface between the agent loop and a
// model provider: one chat-completion request in, one assistant message out.
// The OpenAI-compatible provider (runtime/openaicompat) and the scripted
// model (runtime/scripted) implement it; the loop knows nothing else of them.
package model

import (
	"context"
	"errors"
	"fmt"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Provider answers chat-completion requests. Implementations must be safe for
// concurrent use: branches of a fork call it from several goroutines.
type Provider interface {
	// Complete sends req and returns the assistant's reply. It calls
	// req.Sent with the exact request body when the body is handed to the
	// wire (once, even when it retries), so the caller can record the
	// request before the reply is in. An error after retries is a
	// *CallError or the context's error.
	Complete(ctx context.Context, req *Request) (*Response, error)
	// BaseURL names the endpoint for the run record; never a key.
	BaseURL() string
}

// Request is one model call of one conversation.
type Request struct {
	// Session is the conversation's stable id: the same for every call of
	// one conversation, whichever agent holds it, and different for each
	// branch. Providers may use it for cache routing.
	Session string
	// Conversation is the conversation's branch path ("" for the trunk,
	// "eu", "eu/fr"); the scripted model picks its replies by it.
	Conversation string
	// Turn identifies this call: "<session>#<n>" with n counting the
	// conversation's model calls from 1.
	Turn string
	// Agent is the agent holding the conversation (for error messages).
	Agent string
	// At is when the call starts: the conversation's virtual time in a
	// scripted run, the wall clock otherwise. The scripted model's prompt
	// cache orders requests by it; real providers ignore it.
	At time.Time
	// Body is the request as go-openai would send it: model, messages
	// (system prompt first), tools. A conversation's message slices grow
	// by appending, and a message or a tools array is never changed once
	// sent: a provider may keep a request's messages and tools and take a
	// message or tools array at the same address in a later request of the
	// conversation for the same one.
	Body openai.ChatCompletionRequest
	// Sent, if set, receives the exact body bytes when they are sent. The
	// bytes are the caller's from then on: the provider never changes them.
	Sent func(body []byte)
	// Retry, if set, is told of each retry before the provider waits for
	// it, so a run can say why it is waiting and for how long.
	Retry func(RetryWait)
}

// RetryWait is a retry a provider is about to wait for.
type RetryWait struct {
	// Attempt is the attempt that failed (from 1); Attempts how many the
	// provider makes in all.
	Attempt, Attempts int
	// Wait is how long it waits before the next attempt.
	Wait time.Duration
	// RetryAfter is the wait the server asked for (its Retry-After
	// header), 0 when it asked for none; Wait is it, capped.
	RetryAfter time.Duration
	// Reason is what failed ("HTTP 429: rate limited").
	Reason string
}

// Response is the assistant's reply to one Request.
type Response struct {
	Message openai.ChatCompletionMessage // role assistant: content and/or tool calls
	Usage   Usage
	Body    []byte // the response body as received (or the scripted model's equivalent)

	// Latency is the model time the scripted model assigns to this reply;
	// the loop advances the conversation's clock by it (and sleeps it in
	// real time). Zero for real providers, whose time is the wall clock.
	Latency time.Duration
	// ToolLatency is added to the clock for each tool call of this reply.
	ToolLatency time.Duration
	// Attempts is how many times the request was sent (0 reads as 1).
	Attempts int
}

// Usage is the token usage a provider reports (or the scripted model estimates).
type Usage struct {
	In, Out        int64
	Cached         int64
	CachedReported bool
}

// CallError is a model call that failed for good: after retries, or a reply
// the runtime cannot use. Its message names what failed and, for scripted
// runs, the script line.
type CallError struct {
	Status int    // HTTP status when there was one
	Reason string // what went wrong
	// Latency is the model time spent before the failure (scripted runs).
	Latency time.Duration
	// Script marks a failure caused by the scripted model's script rather
	// than by a provider: an unusable reply, a conversation with no reply
	// left or no entry. The user fixes it by editing the script at the line
	// Reason names. A scripted `error:` reply stands for a provider failure
	// and leaves it false, as every real provider does.
	Script bool
	// Attempts is how many times the request was sent (0 reads as 1).
	Attempts int
	// Body is the last response body the provider sent (its error, or a
	// reply that could not be read), kept to diagnose the failure.
	Body []byte
}

func (e *CallError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("model call failed with HTTP %d: %s", e.Status, e.Reason)
	}
	return "model call failed: " + e.Reason
}

// IsCallError reports whether err is a *CallError.
func IsCallError(err error) bool {
	var ce *CallError
	return errors.As(err, &ce)
}
