//go:build !race

package loadgen

// raceEnabled is true when the tests run under the race detector.
const raceEnabled = false
