package planner

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/cputime"
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
// time_ratio (wall), cpu_ratio (process CPU time, steadier on a shared
// machine) and bytes_ratio near 10 mean linear growth.
func BenchmarkBuildScaling(b *testing.B) {
	small, large := genConfig(50, 10, 2), genConfig(500, 10, 2)
	measure := func(cfg *lang.Config) (wall, cpu time.Duration, bytes uint64) {
		return measureRun(func() { Build(cfg, nil, Options{}) })
	}
	var ws, wl, cs, cl time.Duration
	var bs, bl uint64
	for b.Loop() {
		w, c, m := measure(small)
		ws, cs, bs = ws+w, cs+c, bs+m
		w, c, m = measure(large)
		wl, cl, bl = wl+w, cl+c, bl+m
	}
	b.ReportMetric(float64(ws.Nanoseconds())/float64(b.N)/1000, "ns/lane@1k")
	b.ReportMetric(float64(wl.Nanoseconds())/float64(b.N)/10000, "ns/lane@10k")
	b.ReportMetric(float64(wl)/float64(ws), "time_ratio")
	if cs > 0 {
		b.ReportMetric(float64(cl)/float64(cs), "cpu_ratio")
	}
	b.ReportMetric(float64(bl)/float64(bs), "bytes_ratio")
}

// writeSpec writes an HCL spec of models x shapes x 2 GPUs lanes to dir.
func writeSpec(b *testing.B, dir string, models, shapes int) {
	var s strings.Builder
	s.WriteString("gpu \"l40s\" {\n  type = \"L40S\"\n}\n\ngpu \"h100\" {\n  type = \"H100\"\n}\n\n")
	s.WriteString("runtime \"vllm\" {\n  engine  = \"vllm\"\n  version = \"0.22.1\"\n}\n\nexecutor \"modal\" {\n  type = \"modal\"\n}\n\n")
	var ms, ss []string
	for i := 0; i < models; i++ {
		fmt.Fprintf(&s, "model \"m%d\" {\n  id          = \"gen/m%d\"\n  revision    = \"r\"\n  max_context = 32768\n  params      = %d\n  layers      = 24\n  hidden      = 2048\n  heads       = 16\n  kv_heads    = 8\n}\n\n", i, i, 500_000_000+i*1_000_000)
		ms = append(ms, fmt.Sprintf("model.m%d", i))
	}
	for i := 0; i < shapes; i++ {
		fmt.Fprintf(&s, "shape \"s%d\" {\n  input_tokens      = %d\n  output_tokens     = 128\n  template_headroom = 256\n  concurrency       = 4\n  requests          = 32\n}\n\n", i, 256+i)
		ss = append(ss, fmt.Sprintf("shape.s%d", i))
	}
	fmt.Fprintf(&s, "screen \"gen\" {\n  models   = [%s]\n  shapes   = [%s]\n  gpus     = [gpu.l40s, gpu.h100]\n  runtime  = runtime.vllm\n  executor = executor.modal\n  runs     = 3\n  seed     = 1\n}\n",
		strings.Join(ms, ", "), strings.Join(ss, ", "))
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(s.String()), 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPlanSpec is the whole of `infercrane plan` but the rendering:
// load a generated HCL spec of 1,000 or 10,000 lanes with the spec
// language, then build the plan and its canonical JSON.
func BenchmarkPlanSpec(b *testing.B) {
	for _, size := range []struct {
		name           string
		models, shapes int
	}{{"lanes=1000", 50, 10}, {"lanes=10000", 500, 10}} {
		dir := b.TempDir()
		writeSpec(b, dir, size.models, size.shapes)
		b.Run(size.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cfg, diags := lang.Load(dir, lang.Options{})
				if diags.HasErrors() {
					b.Fatal(diags)
				}
				p, _ := Build(cfg, nil, Options{})
				if _, err := Marshal(p); err != nil || len(p.Lanes) != size.models*size.shapes*2 {
					b.Fatal("wrong plan")
				}
			}
		})
	}
}

// BenchmarkPlanSpecScaling is `infercrane plan` but the rendering (load the
// HCL spec, build the plan, its canonical JSON) of 10,000 and 20,000 lanes
// in the same process, and guards that it stays linear in lanes: cpu_ratio
// (process CPU time, steadier than wall time on a shared machine) and
// bytes_ratio (bytes allocated) must stay at or under 2.2 for twice the
// lanes (the fastest of at least three rounds of each size is compared),
// and so must the live heap of the built plan, at most maxLiveBytes10k at
// 10,000 lanes (memory, unlike time, does not depend on the machine's
// load). It also reports the 10,000-lane CPU and wall time and allocation, and
// the CPU time and bytes per lane at each size (flat when linear). Run it
// with
//
//	go test -run '^$' -bench BenchmarkPlanSpecScaling ./planner
func BenchmarkPlanSpecScaling(b *testing.B) {
	small, large := b.TempDir(), b.TempDir()
	writeSpec(b, small, 500, 10)
	writeSpec(b, large, 1000, 10)
	measure := func(dir string, lanes int) (wall, cpu time.Duration, bytes uint64) {
		return measureRun(func() {
			cfg, diags := lang.Load(dir, lang.Options{})
			if diags.HasErrors() {
				b.Fatal(diags)
			}
			p, _ := Build(cfg, nil, Options{NoDigest: true}) // as the plan command builds
			if _, err := Marshal(p); err != nil || len(p.Lanes) != lanes {
				b.Fatalf("wrong plan: %v, %d lanes", err, len(p.Lanes))
			}
		})
	}
	// The fastest of the rounds for each size: the least disturbed by
	// other processes on a shared machine.
	var ws, wl, cs, cl time.Duration
	var bs, bl uint64
	round := func() {
		w, c, m := measure(small, 10_000)
		if ws == 0 || c < cs {
			ws, cs, bs = w, c, m
		}
		w, c, m = measure(large, 20_000)
		if wl == 0 || c < cl {
			wl, cl, bl = w, c, m
		}
	}
	rounds := 0
	for b.Loop() {
		round()
		rounds++
	}
	// At least three rounds, whatever -benchtime (make bench's default
	// gives one): single rounds' cpu_ratio varies 1.8-2.3 on a loaded
	// 2-core machine, and one failed the guard there.
	for ; rounds < 3; rounds++ {
		round()
	}
	b.ReportMetric(float64(cs.Milliseconds()), "cpu-ms@10k")
	b.ReportMetric(float64(cl.Milliseconds()), "cpu-ms@20k")
	b.ReportMetric(float64(ws.Milliseconds()), "wall-ms@10k")
	b.ReportMetric(float64(bs)/(1<<20), "MiB-alloc@10k")
	// Per lane: flat from 10k to 20k when planning is linear.
	b.ReportMetric(float64(cs.Microseconds())/10_000, "cpu-us/lane@10k")
	b.ReportMetric(float64(cl.Microseconds())/20_000, "cpu-us/lane@20k")
	b.ReportMetric(float64(bs)/10_000/1024, "KiB/lane@10k")
	b.ReportMetric(float64(bl)/20_000/1024, "KiB/lane@20k")
	b.ReportMetric(float64(wl)/float64(ws), "time_ratio")
	b.ReportMetric(float64(bl)/float64(bs), "bytes_ratio")
	if cs > 0 {
		r := float64(cl) / float64(cs)
		b.ReportMetric(r, "cpu_ratio")
		if r > 2.2 {
			b.Errorf("planning 20,000 lanes took %.2fx the CPU time of 10,000 (want at most 2.2x: linear)", r)
		}
	}
	if r := float64(bl) / float64(bs); r > 2.2 {
		b.Errorf("planning 20,000 lanes allocated %.2fx the bytes of 10,000 (want at most 2.2x: linear)", r)
	}
	// The memory a plan holds (its live heap once built; not timed).
	lives, livel := planLiveBytes(b, small), planLiveBytes(b, large)
	b.ReportMetric(float64(lives)/(1<<20), "MiB-live@10k")
	if r := float64(livel) / float64(lives); r > 2.2 {
		b.Errorf("a plan of 20,000 lanes holds %.2fx the memory of 10,000 (want at most 2.2x: linear)", r)
	}
	if lives > maxLiveBytes10k {
		b.Errorf("a plan of 10,000 lanes holds %.1f MiB (want at most %d MiB)", float64(lives)/(1<<20), maxLiveBytes10k>>20)
	}
}

// maxLiveBytes10k bounds the live heap of the 10,000-lane plan
// (BenchmarkPlanSpecScaling). `infercrane plan`'s peak RSS is about three
// times it (the collector lets the heap grow to twice the live one, and
// the plan's estimates leave garbage): 35 MiB live and 110 MiB RSS on 2
// December 2026, where issue 29 asked for under 153 MiB.
const maxLiveBytes10k = 50 << 20

// planLiveBytes is the heap that the spec in dir's plan (loaded and
// built as the plan command builds it) holds once built.
func planLiveBytes(b *testing.B, dir string) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cfg, diags := lang.Load(dir, lang.Options{})
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	p, _ := Build(cfg, nil, Options{NoDigest: true})
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(p)
	runtime.KeepAlive(cfg)
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return after.HeapAlloc - before.HeapAlloc
}

// measureRun runs f from a clean heap and returns its wall time, the
// process's CPU time and the bytes it allocated.
func measureRun(f func()) (wall, cpu time.Duration, bytes uint64) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c0, start := cputime.Used(), time.Now()
	f()
	wall, cpu = time.Since(start), cputime.Used()-c0
	runtime.ReadMemStats(&after)
	return wall, cpu, after.TotalAlloc - before.TotalAlloc
}
