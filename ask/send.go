package ask

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// SendOptions are how a plan is sent and where what it says goes.
type SendOptions struct {
	// Key authenticates with the provider (any non-empty value for a
	// local server). It is only sent in the header the provider reads
	// the key from. "" = the provider's variable read through Getenv
	// (Provider.KeyEnv, else Provider.BearerEnv as a bearer token).
	Key string
	// Getenv reads the environment for the key; nil reads nothing.
	Getenv func(string) string
	// Out receives the answer (question mode, unless Answer is set), the
	// distribution of choices (replay and prompt modes) or the body (a dry run).
	Out io.Writer
	// OutTTY says Out is a terminal: a dry run's body then gets a newline
	// for the prompt after it (else the bytes are exactly the body, so they
	// hash to it).
	OutTTY bool
	// Log receives progress lines, notes and usage (stderr).
	Log io.Writer
	// Answer, when set, receives a question's answer as it streams
	// instead of Out (a terminal renders it); it is closed once the answer
	// is complete, before the usage line.
	Answer io.WriteCloser
	// Tune adjusts the provider client before use (tests shorten its
	// backoff); nil leaves the defaults.
	Tune func(*Client)
}

// Asked is what an ask stores with the run.
type Asked struct {
	Mode     Mode
	Question string
	Answer   string
	Model    string
	// BaseURL is where it was sent.
	BaseURL string
	// Incomplete says why Answer is only part of the answer (a
	// *CutOffError's text); "" when it is whole.
	Incomplete string
}

// Send runs the plan: a dry run prints the body (no key, no network) and
// returns nil; question mode streams the answer; replay and prompt modes
// send the body Samples times and print the distribution of choices
// against the recording. What the provider sent back has the key scrubbed.
// An answer cut off mid-stream comes back both ways: the *CutOffError, and
// the Asked holding what arrived with Incomplete saying so, to be stored
// as such.
func (p *Plan) Send(ctx context.Context, o SendOptions) (*Asked, error) {
	if p.DryRun {
		return nil, p.dryRun(o)
	}
	key, bearer := o.Key, false
	if key == "" && o.Getenv != nil {
		key = o.Getenv(p.Provider.KeyEnv)
		if key == "" && p.Provider.BearerEnv != "" {
			key, bearer = o.Getenv(p.Provider.BearerEnv), true
		}
	}
	if key == "" {
		env := p.Provider.KeyEnv
		if p.Provider.BearerEnv != "" {
			env += " (or " + p.Provider.BearerEnv + ")"
		}
		return nil, inputf("%s is not set: export your provider's key to send n%d's request to %s (any non-empty value for a local server), or use --dry-run to see the request without sending it", env, p.Node.Seq, p.Provider.Title)
	}
	client := NewProviderClient(p.Provider, key, bearer, p.BaseURL)
	if p.Timeout > 0 {
		client.HeaderTimeout = p.Timeout
	}
	if o.Tune != nil {
		o.Tune(client)
	}
	var a *Asked
	var err error
	if p.Mode == ModeQuestion {
		a, err = p.sendQuestion(ctx, o, client)
	} else {
		a, err = p.sendReplay(ctx, o, client)
	}
	if a == nil {
		return nil, err
	}
	a.BaseURL = p.BaseURL
	a.Answer = client.Scrub(a.Answer)
	a.Question = client.Scrub(a.Question)
	return a, err
}

// Endpoint is where the plan's body is posted, without credentials.
func (p *Plan) Endpoint() string { return p.Provider.Endpoint(p.BaseURL) }

// printAbout writes what the plan sends and to whom: the provider and why
// it, whether the request is exact or what it lacks, the cheap causes,
// and what was changed for the provider to accept it.
func (p *Plan) printAbout(w io.Writer) {
	fmt.Fprintf(w, "provider: %s (%s, key %s): %s; --provider %s to change\n", p.Provider.Name, p.Provider.Title, p.Provider.KeyEnv, p.ProviderWhy, strings.Join(ProviderNames(), "|"))
	if p.Fidelity != "" {
		fmt.Fprintf(w, "note: %s\n", p.Fidelity)
	}
	for _, note := range p.Notes {
		fmt.Fprintf(w, "note: %s\n", note)
	}
	for _, fix := range p.Fixes {
		fmt.Fprintf(w, "changed: %s\n", fix)
	}
}

func (p *Plan) dryRun(o SendOptions) error {
	fmt.Fprintf(o.Log, "dry run: %s would POST this body (model %s) to %s\n", p.Describe(), p.Model, p.Endpoint())
	p.printAbout(o.Log)
	if p.Change != nil {
		p.printChange(o.Log)
	}
	if _, err := o.Out.Write(p.Body); err != nil {
		return err
	}
	if o.OutTTY {
		_, err := fmt.Fprintln(o.Out)
		return err
	}
	return nil
}

func (p *Plan) printChange(w io.Writer) {
	fmt.Fprintf(w, "%s: %s\n", p.RolePath, p.Change)
	for _, l := range p.Change.Diff(12) {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// sendQuestion sends the question and streams the answer.
func (p *Plan) sendQuestion(ctx context.Context, o SendOptions, client *Client) (*Asked, error) {
	model := p.Model
	fmt.Fprintf(o.Log, "%s with %s at %s…\n", p.Describe(), model, client.Endpoint())
	p.printAbout(o.Log)
	if p.DefaultAsked {
		fmt.Fprintf(o.Log, "question: %s\n\n", p.Question)
	}
	out := o.Answer
	if out == nil {
		out = &plainAnswer{w: o.Out}
	}
	var werr error
	reply, err := client.Send(ctx, p.Body, func(d string) {
		if werr == nil {
			_, werr = io.WriteString(out, client.Scrub(d))
		}
	})
	if cerr := out.Close(); werr == nil {
		werr = cerr
	}
	var cut *CutOffError
	if errors.As(err, &cut) {
		return &Asked{Mode: ModeQuestion, Question: p.Question, Answer: cut.Text, Model: model, Incomplete: client.Scrub(cut.Error())}, err
	}
	if err == nil {
		err = werr
	}
	if err != nil {
		return nil, err
	}
	if reply.Model != "" {
		model = reply.Model
	}
	if u := reply.Usage; u != nil {
		cached := ""
		if u.CachedReported {
			cached = fmt.Sprintf(" (%s cached)", thousands(u.Cached))
		}
		fmt.Fprintf(o.Log, "%s · %s tokens in%s · %s out\n", model, thousands(u.In), cached, thousands(u.Out))
	}
	return &Asked{Mode: ModeQuestion, Question: p.Question, Answer: reply.Message.Text, Model: model}, nil
}

// sendReplay replays the body and prints the distribution.
func (p *Plan) sendReplay(ctx context.Context, o SendOptions, client *Client) (*Asked, error) {
	model := p.Model
	fmt.Fprintf(o.Log, "%s with %s at %s, %d at a time…\n", p.Describe(), model, client.Endpoint(), min(p.Samples, DefaultParallel))
	p.printAbout(o.Log)
	if p.Change != nil {
		p.printChange(o.Out)
	}
	samples, err := Replay(ctx, client, p.Body, p.Samples, DefaultParallel)
	if err != nil {
		return nil, err
	}
	d := TallySamples(p.Recorded, samples)
	if err := d.Err(); err != nil {
		return nil, err
	}
	for _, e := range d.Errors {
		fmt.Fprintf(o.Log, "a sample failed: %s\n", client.Scrub(e.Error()))
	}
	for _, sm := range samples {
		if sm.Reply != nil && sm.Reply.Model != "" {
			model = sm.Reply.Model
			break
		}
	}
	fmt.Fprintln(o.Out, d.String())
	if st := p.Node.Status; !st.Failed() && !st.Stopped() {
		fmt.Fprintf(o.Log, "%d of %d samples made the recorded choice (%s)\n", d.Matches(), d.Samples, d.Recorded)
	} else {
		fmt.Fprintf(o.Log, "the recorded call ended %s and made no choice: the samples show what the request gets now\n", p.Node.Status)
	}
	a := &Asked{Mode: p.Mode, Answer: d.String(), Model: model}
	if p.Mode == ModePrompt {
		a.Question = fmt.Sprintf("replay %d× with %s replaced by %s: %s", p.Samples, p.RolePath, p.PromptFile, p.Change)
	} else {
		a.Question = fmt.Sprintf("replay %d× unchanged", p.Samples)
	}
	return a, nil
}

// thousands prints n with thousands separators: 12,345.
func thousands(n int64) string {
	if n < 0 {
		return "-" + thousands(-n)
	}
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// plainAnswer writes the answer as it arrives, ending it with a newline.
type plainAnswer struct {
	w    io.Writer
	last byte
}

func (a *plainAnswer) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, err := a.w.Write(b)
	if n > 0 {
		a.last = b[n-1]
	}
	return n, err
}

func (a *plainAnswer) Close() error {
	if a.last != '\n' && a.last != 0 {
		_, err := io.WriteString(a.w, "\n")
		return err
	}
	return nil
}
