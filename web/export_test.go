package web

import (
	"context"
	"errors"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/findings"
)

// UnescapeHTMLEscapes is unescapeHTMLEscapes, for the tests.
var UnescapeHTMLEscapes = unescapeHTMLEscapes

// Analysed is run id as its page shows it, once its audit and cache
// analysis are in (a large run's parts).
func (s *Server) Analysed(ctx context.Context, id string) (*findings.Report, *cache.Report, error) {
	a, err := s.analyse(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if err := a.wait(ctx); err != nil {
		return nil, nil, err
	}
	return a.rep, a.cache, errors.Join(a.repErr, a.cacheErr)
}
