package cache

import "context"

// ReadEvery is Read reading the bytes of every message: the reference the
// tests compare the analyses of Read's fewer bytes with.
func ReadEvery(ctx context.Context, src Source, run string) (*Requests, error) {
	return read(ctx, src, run, nil, nil, true)
}
