// Package perf is the performance model each lane's figures are resolved
// with: the GPU catalog and the architecture facts of well-known models
// (catalog.go), a roofline model of one serving step (roofline.go), the
// serving engine's scheduler and step loop (scheduler.go, engine.go), their
// virtual-time runs (simulate.go, estimate.go) and the calibration fit
// (fit.go, calibration.go).
//
// The planner resolves one Lane per plan lane (planner/perfmodel.go); the
// simulated engine (executor/sim) runs the same step loop on it in real
// time. The package imports nothing of the project but planner/load.
package perf
