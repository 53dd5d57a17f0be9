package planner

import (
	"runtime"

	"github.com/infercrane/infercrane/lang"
	"testing"
	"time"
)

// BenchmarkBuild plans generated specs of 1,000 and 10,000 lanes (one
// screen, 3 runs per lane): ns/op and B/op per size.
func BenchmarkBuild(b *testing.B) {
	for _, size := range []struct {
		name           string
		models, shapes int
	}{{"lanes=1000", 50, 10}, {"lanes=10000", 500, 10}} {
		cfg := genConfig(size.models, size.shapes, 2)
		b.Run(size.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if p, _ := Build(cfg, nil, Options{}); len(p.Lanes) != size.models*size.shapes*2 {
					b.Fatal("wrong lane count")
				}
			}
		})
	}
}

// BenchmarkBuildScaling plans the 1,000-lane and the 10,000-lane spec in
// the same process and reports how time and allocated bytes grow:
// time_ratio and bytes_ratio near 10 mean linear growth.
func BenchmarkBuildScaling(b *testing.B) {
	small, large := genConfig(50, 10, 2), genConfig(500, 10, 2)
	measure := func(cfg any) (time.Duration, uint64) {
		runtime.GC() // start each measurement from a clean heap
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		Build(cfg.(*lang.Config), nil, Options{})
		d := time.Since(start)
		runtime.ReadMemStats(&after)
		return d, after.TotalAlloc - before.TotalAlloc
	}
	var ts, tl time.Duration
	var bs, bl uint64
	for b.Loop() {
		d, m := measure(small)
		ts, bs = ts+d, bs+m
		d, m = measure(large)
		tl, bl = tl+d, bl+m
	}
	b.ReportMetric(float64(ts.Nanoseconds())/float64(b.N)/1000, "ns/lane@1k")
	b.ReportMetric(float64(tl.Nanoseconds())/float64(b.N)/10000, "ns/lane@10k")
	b.ReportMetric(float64(tl)/float64(ts), "time_ratio")
	b.ReportMetric(float64(bl)/float64(bs), "bytes_ratio")
}
