package cache

import "context"

// ReadEvery is Read reading the bytes of every message: the reference the
// tests compare the analyses of Read's fewer bytes with (o as Read's).
func ReadEvery(ctx context.Context, src Source, run string, o *Options) (*Requests, error) {
	return read(ctx, src, run, nil, o, true)
}
