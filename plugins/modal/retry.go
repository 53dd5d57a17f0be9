package modal

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Backoff is how the executor retries Modal calls that may succeed later.
type Backoff struct {
	Base     time.Duration // first wait
	Max      time.Duration // longest single wait
	Attempts int           // total tries, the first included
}

// DefaultCapacityBackoff retries rate limits and capacity shortages for
// about three minutes before giving up.
var DefaultCapacityBackoff = Backoff{Base: 2 * time.Second, Max: 60 * time.Second, Attempts: 8}

// DefaultTerminateBackoff retries a failed Terminate three times.
var DefaultTerminateBackoff = Backoff{Base: time.Second, Max: 10 * time.Second, Attempts: 4}

// wait returns the pause before try number n (1-based, n >= 1 retried).
func (b Backoff) wait(n int) time.Duration {
	d := b.Base
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// retry calls f until it succeeds, fails with an error retryable rejects, the
// attempts are spent or ctx ends. note is told about every retry.
func retry(ctx context.Context, b Backoff, retryable func(error) bool, note func(attempt int, wait time.Duration, err error), f func() error) error {
	attempts := max(b.Attempts, 1)
	var err error
	for n := 1; ; n++ {
		if err = f(); err == nil || !retryable(err) {
			return err
		}
		if n >= attempts {
			return fmt.Errorf("gave up after %d attempts: %w", n, err)
		}
		w := b.wait(n)
		if note != nil {
			note(n, w, err)
		}
		t := time.NewTimer(w)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}

func isCapacity(err error) bool { return errors.Is(err, ErrCapacity) }

func always(error) bool { return true }
