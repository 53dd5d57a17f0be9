package loadgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
)

// Arrival patterns of open-loop runs.
const (
	ArrivalConstant = "constant"
	ArrivalPoisson  = "poisson"
	ArrivalGamma    = "gamma"
)

// arrivals generates an open-loop schedule: send offsets in nanoseconds from
// the start of the measured phase, the first at 0. Gaps are 1/rate
// (constant), exponential with mean 1/rate (poisson) or gamma with shape
// burstiness and mean 1/rate (gamma; burstiness 1 is Poisson, below 1
// burstier, above 1 smoother). The sequence is a pure function of the seed.
type arrivals struct {
	rate       float64
	kind       string
	burstiness float64
	rng        *rand.Rand
	t          float64 // seconds
	n          int
}

func newArrivals(rate float64, kind string, burstiness float64, seed int64) (*arrivals, error) {
	if kind == "" {
		kind = ArrivalPoisson
	}
	switch kind {
	case ArrivalConstant, ArrivalPoisson:
	case ArrivalGamma:
		if burstiness == 0 {
			burstiness = 1
		}
		if burstiness < 0 || math.IsNaN(burstiness) || math.IsInf(burstiness, 0) {
			return nil, fmt.Errorf("gamma burstiness %g must be a positive number (1 is Poisson)", burstiness)
		}
	default:
		return nil, fmt.Errorf("arrival %q is not known; use constant, poisson or gamma", kind)
	}
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("request rate %g must be a positive finite number of requests per second", rate)
	}
	return &arrivals{rate: rate, kind: kind, burstiness: burstiness,
		rng: rand.New(rand.NewPCG(uint64(seed), 0x5eed_a771_7a15))}, nil
}

// next returns the scheduled offset of the next request.
func (a *arrivals) next() int64 {
	if a.n > 0 {
		switch a.kind {
		case ArrivalConstant:
			a.t = float64(a.n) / a.rate
		case ArrivalPoisson:
			a.t += a.rng.ExpFloat64() / a.rate
		case ArrivalGamma:
			a.t += gammaSample(a.rng, a.burstiness) / (a.burstiness * a.rate)
		}
	}
	a.n++
	return int64(a.t * 1e9)
}

// gammaSample draws from Gamma(shape, 1) by Marsaglia and Tsang's method
// (with the shape+1 boost for shape < 1).
func gammaSample(r *rand.Rand, shape float64) float64 {
	if shape < 1 {
		u := r.Float64()
		return gammaSample(r, shape+1) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// TraceEntry is one line of a replay trace (JSONL).
type TraceEntry struct {
	TimestampMs  float64 `json:"timestamp_ms"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
}

// ReadTrace reads a replay trace file: one {"timestamp_ms","input_tokens",
// "output_tokens"} object a line, timestamps non-decreasing, token counts
// positive.
func ReadTrace(path string) ([]TraceEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	return ParseTrace(f, path)
}

// ParseTrace reads a replay trace from r; name labels its errors.
func ParseTrace(r io.Reader, name string) ([]TraceEntry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var out []TraceEntry
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var e TraceEntry
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil || dec.More() {
			if err == nil {
				err = errors.New("trailing data")
			}
			return nil, fmt.Errorf("trace %s line %d: %v (want {\"timestamp_ms\":N,\"input_tokens\":N,\"output_tokens\":N})", name, line, err)
		}
		switch {
		case e.InputTokens < 1 || e.OutputTokens < 1:
			return nil, fmt.Errorf("trace %s line %d: input_tokens and output_tokens must be at least 1", name, line)
		case e.TimestampMs < 0 || math.IsNaN(e.TimestampMs) || math.IsInf(e.TimestampMs, 0) || e.TimestampMs > 1e12:
			return nil, fmt.Errorf("trace %s line %d: timestamp_ms %g must be a non-negative number of milliseconds", name, line, e.TimestampMs)
		case len(out) > 0 && e.TimestampMs < out[len(out)-1].TimestampMs:
			return nil, fmt.Errorf("trace %s line %d: timestamp_ms %g goes back in time; sort the trace by timestamp", name, line, e.TimestampMs)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read trace %s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("trace %s has no requests", name)
	}
	return out, nil
}
