package executor

import "context"

type startedKey struct{}

// WithStarted returns a context whose ReportStarted calls reach fn. The
// runner journals what fn receives, so that an apply killed while a
// deployment starts (or runs) leaves a record the next apply reaps.
func WithStarted(ctx context.Context, fn func(*Server)) context.Context {
	return context.WithValue(ctx, startedKey{}, fn)
}

// ReportStarted tells whoever runs the executor what Deploy has started,
// before it waits for the server to become healthy: s carries the
// deployment ID and a Handle from which Teardown, in this process or a
// later one, can find and stop it (a process group, a sandbox id). Deploy
// may call it more than once as it learns more; the last report counts.
// It does nothing when nobody listens.
func ReportStarted(ctx context.Context, s *Server) {
	if fn, ok := ctx.Value(startedKey{}).(func(*Server)); ok && fn != nil && s != nil {
		cp := *s
		fn(&cp)
	}
}
