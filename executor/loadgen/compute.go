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
	s := Summary{Failures: map[string]int{}}
	var ttft, tpot, itl, lat, delay, ttftSched, latSched []float64
	var firstSend, lastDone int64
	var firstSched, lastSched, firstSent, lastSent int64
	haveWindow, openN := false, 0
	for i := range records {
		r := &records[i]
		if r.Warmup {
			continue
		}
		if r.ErrorClass == FailCancelled {
			s.Cancelled++
			continue
		}
		s.Requests++
		if !haveWindow || r.SentNs < firstSend {
			firstSend = r.SentNs
		}
		if !haveWindow || r.DoneNs > lastDone {
			lastDone = r.DoneNs
		}
		haveWindow = true
		if r.OpenLoop {
			if openN == 0 || r.ScheduledNs < firstSched {
				firstSched = r.ScheduledNs
			}
			if openN == 0 || r.ScheduledNs > lastSched {
				lastSched = r.ScheduledNs
			}
			if openN == 0 || r.SentNs < firstSent {
				firstSent = r.SentNs
			}
			if openN == 0 || r.SentNs > lastSent {
				lastSent = r.SentNs
			}
			openN++
			delay = append(delay, float64(r.SentNs-r.ScheduledNs)/nsPerMs)
		}
		if !r.OK() {
			s.Failed++
			s.Failures[r.ErrorClass]++
			continue
		}
		s.Succeeded++
		s.InputTokens += int64(r.PromptTokens)
		s.OutputTokens += int64(r.OutputTokens)
		if r.UsageMissing {
			s.UsageMissing++
		}
		if r.PromptTokens != r.InputTokens {
			s.PromptOffTarget++
		}
		good := true
		if !r.NonStreaming {
			t := float64(r.FirstTokenNs-r.SentNs) / nsPerMs
			ttft = append(ttft, t)
			if slo.TTFTMs > 0 && t > slo.TTFTMs {
				good = false
			}
			if r.OutputTokens >= 2 {
				p := float64(r.LastTokenNs-r.FirstTokenNs) / nsPerMs / float64(r.OutputTokens-1)
				tpot = append(tpot, p)
				if slo.TPOTMs > 0 && p > slo.TPOTMs {
					good = false
				}
			}
			for j := 1; j < len(r.ChunkNs); j++ {
				itl = append(itl, float64(r.ChunkNs[j]-r.ChunkNs[j-1])/nsPerMs)
			}
		}
		l := float64(r.LastTokenNs-r.SentNs) / nsPerMs
		lat = append(lat, l)
		if slo.LatencyMs > 0 && l > slo.LatencyMs {
			good = false
		}
		if r.OpenLoop {
			if !r.NonStreaming {
				ttftSched = append(ttftSched, float64(r.FirstTokenNs-r.ScheduledNs)/nsPerMs)
			}
			latSched = append(latSched, float64(r.LastTokenNs-r.ScheduledNs)/nsPerMs)
		}
		if good {
			s.Good++
		}
	}
	s.TTFTMs, s.TPOTMs, s.ITLMs, s.LatencyMs = newDist(ttft), newDist(tpot), newDist(itl), newDist(lat)
	if slo != (SLO{}) {
		sl := slo
		s.SLO = &sl
	}
	if haveWindow && lastDone > firstSend {
		w := float64(lastDone-firstSend) / 1e9
		s.WindowSeconds = w
		s.RequestThroughput = float64(s.Succeeded) / w
		s.OutputTokenThroughput = float64(s.OutputTokens) / w
		s.TotalTokenThroughput = float64(s.InputTokens+s.OutputTokens) / w
		g := float64(s.Good) / w
		s.Goodput = &g
	}
	if s.Requests > 0 {
		f := float64(s.Good) / float64(s.Succeeded+s.Failed)
		s.GoodFraction = &f
	}
	if openN > 0 {
		d, ts, ls := newDist(delay), newDist(ttftSched), newDist(latSched)
		s.DispatchDelayMs, s.TTFTFromScheduledMs, s.LatencyFromScheduledMs = &d, &ts, &ls
		if openN > 1 && lastSched > firstSched {
			rr := float64(openN-1) / (float64(lastSched-firstSched) / 1e9)
			s.RequestedRate = &rr
		}
		if openN > 1 && lastSent > firstSent {
			ar := float64(openN-1) / (float64(lastSent-firstSent) / 1e9)
			s.AchievedRate = &ar
		}
	}
	return s
}
