// Package cputime reads the CPU time this process has used, which, unlike
// wall time, other processes on a busy machine barely disturb: trace
// profiling reports it, and benchmarks and CPU-bound checks measure with
// it. It imports nothing of the module.
package cputime
