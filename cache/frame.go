package cache

// Frame is the frame of llm node seq's request as Read read it: its head,
// system prompt and tail joined, the bytes the store's RequestFrame
// returns (model, options, tools and system prompt; not the
// conversation). ok is false when the request was not read, or was
// recorded with its system prompt in its chain (an older file, whose
// frame the store finds in the chain): read it from the store then. An
// audit's cause checks read the frames of many calls; those a cache
// analysis read already cost no query.
func (r *Requests) Frame(seq int64) (body []byte, ok bool) {
	p := r.prompts.get(seq)
	if p == nil || p.frame == nil || p.inChain {
		return nil, false
	}
	return p.frame.body, true
}
