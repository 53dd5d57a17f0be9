package loadgen

import "time"

// WithStdTimerDispatch makes an open loop sleep on a time.Timer instead of
// the precise clock: the baseline that BenchmarkOpenLoopSendLateness and
// the lateness test compare the precise dispatch against.
func WithStdTimerDispatch() Option { return func(o *runOptions) { o.stdTimer = true } }

// WithDispatchSpin sets the open loop's bounded spin before each send
// (dispatchSpin by default; 0 none).
func WithDispatchSpin(d time.Duration) Option { return func(o *runOptions) { o.spin = d } }

// RaceEnabled tells the external tests whether the race detector is on.
const RaceEnabled = raceEnabled
