// Package ask rebuilds a recorded model call and sends it again: with a
// question appended, unchanged a number of times (a replay), or with the
// agent's role-file text replaced inside its system prompt.
//
// NewPlan builds one ask: it checks the options and the node (an llm node
// of the run graph), loads the recorded request and response through a
// Recording (the store satisfies it), reads them with package chat, finds
// the agent's role file in the run's project snapshot (package snapshot),
// picks the mode and makes the body; Plan.Send runs it (a dry run only
// prints it). Problems the user can fix are *InputError.
//
// It works on bytes. A recorded chat completions request is kept byte for
// byte: Question splices the recorded assistant turn, one tool result per
// tool call saying it was not run, and the question after the recorded
// messages, so everything up to the end of the recorded messages array is
// identical to what the run sent and a provider's prompt cache can serve it.
// Replay sends the recorded body unchanged; ReplacePrompt changes only the
// bytes of the role-file text.
//
// Client POSTs a body exactly as built to <base>/chat/completions through
// internal/llmhttp, the HTTP client the runtime's provider uses too
// (go-openai's request structs re-encode and cannot promise byte
// identity), reads the answer through package chat (a JSON body or a stream
// of server-sent events), and retries by llmhttp's one policy: 408, 429,
// 5xx, timeouts and network errors, 3 times, never after part of the
// answer was read.
//
// The package knows nothing of the agent loop, SQL or the terminal: callers
// hand it a graph and a Recording and get a plan, its output on the writers
// they give, and what to store back. The API key is held by the Client
// only, sent in the Authorization header and scrubbed from every error it
// returns and every answer it gives back.
package ask
