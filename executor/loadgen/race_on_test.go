//go:build race

package loadgen

// raceEnabled is true when the tests run under the race detector, which
// slows the client about tenfold: rate tests then measure the detector.
const raceEnabled = true
