package executor

import "errors"

// The kinds of error an apply can end a node with, which the CLI follows
// with what to run about them (errors.Is).
var (
	// ErrLeftRunning: a server, sandbox or task could not be confirmed
	// stopped; it may still be running, and cost money.
	ErrLeftRunning = errors.New("it may still be running")
	// ErrNotProfiled: a lane waits for a trace that has no profile.
	ErrNotProfiled = errors.New("the trace is not profiled")
)
