// Package ask rebuilds a recorded model call and sends it again: with a
// question appended, unchanged a number of times (a replay), or with the
// agent's role-file text replaced inside its system prompt.
//
// It works on bytes. A recorded chat completions request is kept byte for
// byte: Question splices the recorded assistant turn, one tool result per
// tool call saying it was not run, and the question after the recorded
// messages, so everything up to the end of the recorded messages array is
// identical to what the run sent and a provider's prompt cache can serve it.
// Replay sends the recorded body unchanged; ReplacePrompt changes only the
// bytes of the role-file text.
//
// Client POSTs a body exactly as built to <base>/chat/completions with
// net/http (go-openai's request structs re-encode and cannot promise byte
// identity; its types are used for decoding), streams server-sent events,
// and retries 429, 5xx and timeouts a bounded number of times.
//
// The package knows nothing of the agent loop, the store or the terminal:
// callers hand it request and response bodies and get bodies, replies and
// distributions back. The API key is held by the Client only, sent in the
// Authorization header and scrubbed from every error it returns.
package ask
