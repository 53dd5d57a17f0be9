//go:build !linux

package affinity

import "time"

// Pin is not supported on this system.
func Pin(cpus []int) error { return ErrUnsupported }

// Online is not supported on this system.
func Online() ([]int, error) { return nil, ErrUnsupported }

// Current is not supported on this system.
func Current() ([]int, error) { return nil, ErrUnsupported }

// Slice is not supported on this system.
func Slice(d time.Duration) error { return ErrUnsupported }

// Nice is not supported on this system.
func Nice(n int) error { return ErrUnsupported }

// ThreadNice is not supported on this system.
func ThreadNice() (map[int]int, error) { return nil, ErrUnsupported }

// CPUWait is unsupported outside Linux.
func CPUWait() (time.Duration, bool) { return 0, false }
