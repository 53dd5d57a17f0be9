package executor

import (
	"context"
	"sync"
)

// slots bounds how many deployments are up at once and hands the slots out
// in a fixed order (the order of the deploy nodes in the plan's graph), so
// which deployment goes first does not depend on goroutine scheduling.
type slots struct {
	mu      sync.Mutex
	free    int
	next    int
	passed  map[int]bool
	waiters map[int]chan struct{}
}

func newSlots(n int) *slots {
	return &slots{free: n, passed: map[int]bool{}, waiters: map[int]chan struct{}{}}
}

// pump grants free slots to waiters in ordinal order.
func (s *slots) pump() {
	for {
		if s.passed[s.next] {
			delete(s.passed, s.next)
			s.next++
			continue
		}
		if ch, ok := s.waiters[s.next]; ok && s.free > 0 {
			s.free--
			close(ch)
			delete(s.waiters, s.next)
			s.next++
			continue
		}
		return
	}
}

// acquire waits for the slot of ordinal ord: every lower ordinal must have
// acquired or passed, and a slot must be free.
func (s *slots) acquire(ctx context.Context, ord int) error {
	ch := make(chan struct{})
	s.mu.Lock()
	s.waiters[ord] = ch
	s.pump()
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, waiting := s.waiters[ord]; waiting {
			delete(s.waiters, ord)
			s.passed[ord] = true
			s.pump()
			return ctx.Err()
		}
		// Granted while we were being cancelled: give it back.
		s.free++
		s.pump()
		return ctx.Err()
	}
}

// pass gives up ordinal ord's turn without taking a slot (its deploy was skipped).
func (s *slots) pass(ord int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.passed[ord] = true
	s.pump()
}

// release frees a slot.
func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free++
	s.pump()
}
