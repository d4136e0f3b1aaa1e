package importers

// cursor walks a conversation's steps, live or not, with the few steps of
// look-ahead the mapping needs (the calls of a response; whether a final is
// the last step): a live conversation keeps only those.
type cursor struct {
	c     *Conversation
	i     int    // the next of c.Steps, when not live
	ahead []Step // read from c.Live, not yet taken
	end   bool   // c.Live said it ended
	red   *redactor
	seen  int // c.Steps redacted so far, when not live
}

// newCursor returns a cursor over c whose steps come redacted by red
// (when not nil), each once, as they are first seen.
func newCursor(c *Conversation, red *redactor) *cursor { return &cursor{c: c, red: red} }

// peek returns the step n places ahead (0: the next one), or false when the
// conversation ends before it.
func (k *cursor) peek(n int) (Step, bool, error) {
	if k.c.Live == nil {
		if k.i+n < len(k.c.Steps) {
			for ; k.red != nil && k.seen <= k.i+n; k.seen++ {
				k.red.step(&k.c.Steps[k.seen])
			}
			return k.c.Steps[k.i+n], true, nil
		}
		return Step{}, false, nil
	}
	for len(k.ahead) <= n && !k.end {
		st, ok, err := k.c.Live.Next()
		if err != nil {
			return Step{}, false, err
		}
		if !ok {
			k.end = true
			break
		}
		if k.red != nil {
			k.red.step(&st)
		}
		k.ahead = append(k.ahead, st)
	}
	if n < len(k.ahead) {
		return k.ahead[n], true, nil
	}
	return Step{}, false, nil
}

// next takes the next step.
func (k *cursor) next() (Step, bool, error) {
	st, ok, err := k.peek(0)
	if !ok || err != nil {
		return st, ok, err
	}
	if k.c.Live == nil {
		k.i++
	} else {
		k.ahead[0] = Step{}
		k.ahead = k.ahead[1:]
	}
	return st, true, nil
}

// Collect reads a session's live conversations to their ends into Steps
// (every branch when its fork comes, as Write reads them), leaving the
// whole tree a Format's Read returns.
func Collect(s *Session) error {
	if s.Close != nil {
		defer s.Close()
	}
	return collect(s.Trunk)
}

// Collected is what a Streamer's Read returns: the sessions its Stream
// gave (or its error), each collected.
func Collected(ss []*Session, err error) ([]*Session, error) {
	if err != nil {
		return nil, err
	}
	for i, s := range ss {
		if err := Collect(s); err != nil {
			for _, rest := range ss[i+1:] {
				if rest.Close != nil {
					rest.Close()
				}
			}
			return nil, err
		}
	}
	return ss, nil
}

func collect(c *Conversation) error {
	if c == nil {
		return nil
	}
	if c.Live == nil {
		for _, st := range c.Steps {
			if st.Fork != nil {
				for _, b := range st.Fork.Branches {
					if err := collect(b.Conv); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	live := c.Live
	c.Live = nil
	for {
		st, ok, err := live.Next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if st.Fork != nil {
			for _, b := range st.Fork.Branches {
				if err := collect(b.Conv); err != nil {
					return err
				}
			}
		}
		c.Steps = append(c.Steps, st)
	}
}
