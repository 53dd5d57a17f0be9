//go:build race

package sim

// raceEnabled is true under the race detector, which slows the machine too
// much for wall-clock comparisons.
const raceEnabled = true
