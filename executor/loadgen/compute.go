package loadgen

// nsPerMs converts nanosecond differences to milliseconds.
const nsPerMs = 1e6

// Compute derives a run's Summary from its per-request records; it is the one
// place metrics are computed, so a summary recomputed from saved records is
// identical to the one the run printed. Warmup records are ignored; records
// cancelled at the end of a duration run count only in Cancelled; failed
// records are counted per class and excluded from latency statistics.
//
// Definitions (design section 5, following vLLM's bench serve): ttft is send
// to the first token-carrying chunk; latency is send to the last token chunk;
// tpot is (latency - ttft) / (output_tokens - 1) for output_tokens >= 2; itl
// pools every gap between successive token chunks; the window runs from the
// first send to the last completion; goodput is requests meeting every SLO
// per window second and good_fraction is good / (succeeded + failed).
func Compute(records []Record, slo SLO) Summary {
	a := NewAccumulator(slo, "", 0)
	for i := range records {
		a.Add(&records[i])
	}
	s, _ := a.Summary() // nothing spills without a limit
	return s
}
