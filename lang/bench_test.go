package lang

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// bigSpec is a spec with n shapes fed by n locals, m models and one screen
// over all of them.
func bigSpec(n, m int) []byte {
	var b strings.Builder
	b.WriteString("variable \"scale\" {\n  default = 2\n}\nlocals {\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  in%d = %d * var.scale\n", i, 64+i)
	}
	b.WriteString("}\ngpu \"g\" {\n  type = \"L40S\"\n}\n")
	for i := 0; i < m; i++ {
		fmt.Fprintf(&b, "model \"m%d\" {\n  id          = \"org/model-%d\"\n  max_context = 8192\n}\n", i, i)
	}
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "shape \"s%d\" {\n  input_tokens  = local.in%d\n  output_tokens = 16\n  concurrency   = 4\n  requests      = 16\n}\n", i, i)
	}
	b.WriteString("screen \"all\" {\n  models = [")
	for i := 0; i < m; i++ {
		fmt.Fprintf(&b, "model.m%d, ", i)
	}
	b.WriteString("]\n  shapes = [")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "shape.s%d, ", i)
	}
	b.WriteString("]\n  gpus = [gpu.g]\n}\n")
	return []byte(b.String())
}

// BenchmarkLoad measures parsing plus evaluation of a 200-shape spec and
// reports its cost as a ratio to parsing alone (the baseline, measured in
// the same process): evaluation should stay a small multiple of parsing.
func BenchmarkLoad(b *testing.B) {
	src := bigSpec(200, 10)
	parse := func() {
		if _, d := hclsyntax.ParseConfig(src, "main.hcl", hcl.InitialPos); d.HasErrors() {
			b.Fatal(d)
		}
	}
	const baseRounds = 20
	start := time.Now()
	for i := 0; i < baseRounds; i++ {
		parse()
	}
	base := time.Since(start) / baseRounds
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, d := LoadSource(".", "main.hcl", src, testOptions()); d.HasErrors() {
			b.Fatal(d)
		}
	}
	b.StopTimer()
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(per)/float64(base), "x_parse")
}

// BenchmarkLoadScaling reports how load time grows when the spec grows
// from 100 to 400 shapes: about 4 is linear, 16 would be quadratic.
func BenchmarkLoadScaling(b *testing.B) {
	small, large := bigSpec(100, 5), bigSpec(400, 5)
	timeIt := func(src []byte) time.Duration {
		start := time.Now()
		if _, d := LoadSource(".", "main.hcl", src, testOptions()); d.HasErrors() {
			b.Fatal(d)
		}
		return time.Since(start)
	}
	var ts, tl time.Duration
	for i := 0; i < b.N; i++ {
		ts += timeIt(small)
		tl += timeIt(large)
	}
	b.ReportMetric(float64(tl)/float64(ts), "x_4x_spec")
}
