package workload

import "math"

// shapeSpec is one derived benchmark shape: which percentiles it takes.
type shapeSpec struct {
	name, key, description, objective string
	inputQ, outputQ                   func(Percentiles) float64
	concurrency                       int
}

func p50(p Percentiles) float64 { return p.P50 }
func p95(p Percentiles) float64 { return p.P95 }

// derivedShapes are the public prior's three shapes, in document order.
var derivedShapes = []shapeSpec{
	{"public-interactive", "interactive", "Median token shape from the sampled public trace.", "latency", p50, p50, 8},
	{"public-long-prefill", "long_prefill", "P95 input with median output to stress prefill.", "long_context", p95, p50, 4},
	{"public-decode-heavy", "decode_heavy", "Median input with P95 output to stress decode.", "long_generation", p50, p95, 4},
}

// ShapeKey maps a profile shape name to the key specs use under
// trace.NAME.shapes: "public-long-prefill" -> "long_prefill".
func ShapeKey(name string) string {
	for _, d := range derivedShapes {
		if d.name == name {
			return d.key
		}
	}
	out := []byte(name)
	for i, c := range out {
		if c == '-' || c == ' ' || c == '.' {
			out[i] = '_'
		}
	}
	return string(out)
}

// DeriveShapes builds the interactive, long-prefill and decode-heavy shapes
// from the token distributions. Token counts are rounded half to even; with
// maxContext > 0 a shape whose input + output exceeds it gets
// out = min(out, max(1, ctx/2)) and in = ctx - out and is marked clipped.
func DeriveShapes(input, output Percentiles, maxContext int) []Shape {
	out := make([]Shape, 0, len(derivedShapes))
	for _, d := range derivedShapes {
		in, o, clipped := boundedShape(d.inputQ(input), d.outputQ(output), maxContext)
		out = append(out, Shape{
			Name: d.name, Description: d.description, Objective: d.objective,
			Requests: max(32, 4*d.concurrency), Concurrency: d.concurrency,
			InputTokens: in, OutputTokens: o, Streaming: true, Clipped: clipped,
		})
	}
	return out
}

func boundedShape(in, out float64, ctx int) (int, int, bool) {
	i := max(1, int(math.RoundToEven(in)))
	o := max(1, int(math.RoundToEven(out)))
	if ctx <= 0 || i+o <= ctx {
		return i, o, false
	}
	o = min(o, max(1, ctx/2))
	i = max(1, ctx-o)
	return i, o, true
}
