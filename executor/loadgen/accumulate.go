package loadgen

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
)

// Accumulator computes a run's Summary from records fed one at a time, in
// memory that does not grow with the number of requests: counts are
// counted, and each metric's values (which exact percentiles need, numpy's
// linear interpolation) are kept in memory up to a bound and beyond it
// spilled to temporary files as sorted runs, merged back when the summary
// is made (an external merge sort). The summary is bit-identical to
// Compute over the same records in the same order: Compute is an
// Accumulator fed the whole slice.
type Accumulator struct {
	slo SLO
	s   Summary
	// dir is where spilled runs go ("" os.TempDir()); limit is the number
	// of values a metric holds in memory before it spills (0: never).
	dir   string
	limit int

	ttft, tpot, itl, lat, delay, ttftSched, latSched *extDist

	firstSend, lastDone                        int64
	firstSched, lastSched, firstSent, lastSent int64
	haveWindow                                 bool
	openN                                      int
	err                                        error
}

// NewAccumulator returns an accumulator for a run with the given SLO that
// keeps at most limit values per metric in memory (0: all of them, like
// Compute) and spills the rest to temporary files in dir ("" the system's
// temporary directory).
func NewAccumulator(slo SLO, dir string, limit int) *Accumulator {
	a := &Accumulator{slo: slo, dir: dir, limit: limit, s: Summary{Failures: map[string]int{}}}
	for _, d := range []**extDist{&a.ttft, &a.tpot, &a.itl, &a.lat, &a.delay, &a.ttftSched, &a.latSched} {
		*d = &extDist{dir: dir, limit: limit}
	}
	return a
}

// Add counts one record (warm-up records are ignored).
func (a *Accumulator) Add(r *Record) {
	s := &a.s
	if r.Warmup {
		return
	}
	if r.ErrorClass == FailCancelled {
		s.Cancelled++
		return
	}
	s.Requests++
	if !a.haveWindow || r.SentNs < a.firstSend {
		a.firstSend = r.SentNs
	}
	if !a.haveWindow || r.DoneNs > a.lastDone {
		a.lastDone = r.DoneNs
	}
	a.haveWindow = true
	if r.OpenLoop {
		if a.openN == 0 || r.ScheduledNs < a.firstSched {
			a.firstSched = r.ScheduledNs
		}
		if a.openN == 0 || r.ScheduledNs > a.lastSched {
			a.lastSched = r.ScheduledNs
		}
		if a.openN == 0 || r.SentNs < a.firstSent {
			a.firstSent = r.SentNs
		}
		if a.openN == 0 || r.SentNs > a.lastSent {
			a.lastSent = r.SentNs
		}
		a.openN++
		a.add(a.delay, float64(r.SentNs-r.ScheduledNs)/nsPerMs)
	}
	if !r.OK() {
		s.Failed++
		s.Failures[r.ErrorClass]++
		return
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
	slo := a.slo
	good := true
	if !r.NonStreaming {
		t := float64(r.FirstTokenNs-r.SentNs) / nsPerMs
		a.add(a.ttft, t)
		if slo.TTFTMs > 0 && t > slo.TTFTMs {
			good = false
		}
		if r.OutputTokens >= 2 {
			p := float64(r.LastTokenNs-r.FirstTokenNs) / nsPerMs / float64(r.OutputTokens-1)
			a.add(a.tpot, p)
			if slo.TPOTMs > 0 && p > slo.TPOTMs {
				good = false
			}
		}
		for j := 1; j < len(r.ChunkNs); j++ {
			a.add(a.itl, float64(r.ChunkNs[j]-r.ChunkNs[j-1])/nsPerMs)
		}
	}
	l := float64(r.LastTokenNs-r.SentNs) / nsPerMs
	a.add(a.lat, l)
	if slo.LatencyMs > 0 && l > slo.LatencyMs {
		good = false
	}
	if r.OpenLoop {
		if !r.NonStreaming {
			a.add(a.ttftSched, float64(r.FirstTokenNs-r.ScheduledNs)/nsPerMs)
		}
		a.add(a.latSched, float64(r.LastTokenNs-r.ScheduledNs)/nsPerMs)
	}
	if good {
		s.Good++
	}
}

func (a *Accumulator) add(d *extDist, v float64) {
	if err := d.add(v); err != nil && a.err == nil {
		a.err = err
	}
}

// Summary returns the summary of the records added so far, and an error
// when spilling to or reading back the temporary files failed. It removes
// the temporary files; the accumulator is spent afterwards.
func (a *Accumulator) Summary() (Summary, error) {
	s := a.s
	var errs []error
	if a.err != nil {
		errs = append(errs, a.err)
	}
	dist := func(d *extDist) Dist {
		out, err := d.dist()
		if err != nil {
			errs = append(errs, err)
		}
		return out
	}
	s.TTFTMs, s.TPOTMs, s.ITLMs, s.LatencyMs = dist(a.ttft), dist(a.tpot), dist(a.itl), dist(a.lat)
	if a.slo != (SLO{}) {
		sl := a.slo
		s.SLO = &sl
	}
	if a.haveWindow && a.lastDone > a.firstSend {
		w := float64(a.lastDone-a.firstSend) / 1e9
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
	if a.openN > 0 {
		d, ts, ls := dist(a.delay), dist(a.ttftSched), dist(a.latSched)
		s.DispatchDelayMs, s.TTFTFromScheduledMs, s.LatencyFromScheduledMs = &d, &ts, &ls
		if a.openN > 1 && a.lastSched > a.firstSched {
			rr := float64(a.openN-1) / (float64(a.lastSched-a.firstSched) / 1e9)
			s.RequestedRate = &rr
		}
		if a.openN > 1 && a.lastSent > a.firstSent {
			ar := float64(a.openN-1) / (float64(a.lastSent-a.firstSent) / 1e9)
			s.AchievedRate = &ar
		}
	} else {
		for _, d := range []*extDist{a.delay, a.ttftSched, a.latSched} {
			d.discard()
		}
	}
	return s, errors.Join(errs...)
}

// extDist holds one metric's values: in memory up to limit, then as sorted
// runs in temporary files.
type extDist struct {
	dir   string
	limit int
	buf   []float64
	runs  []*os.File
	n     int
}

func (d *extDist) add(v float64) error {
	d.buf = append(d.buf, v)
	d.n++
	if d.limit > 0 && len(d.buf) >= d.limit {
		return d.spill()
	}
	return nil
}

// spill writes the buffer as one sorted run.
func (d *extDist) spill() error {
	sort.Float64s(d.buf)
	f, err := os.CreateTemp(d.dir, "infercrane-values-*")
	if err != nil {
		return fmt.Errorf("spill metric values to a temporary file: %w; free disk space or set TMPDIR", err)
	}
	os.Remove(f.Name()) // unlinked: the space is freed whatever happens
	w := bufio.NewWriterSize(f, 64<<10)
	var b [8]byte
	for _, v := range d.buf {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
		w.Write(b[:])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("spill metric values: %w; free disk space or set TMPDIR", err)
	}
	d.runs = append(d.runs, f)
	d.buf = d.buf[:0]
	return nil
}

func (d *extDist) discard() {
	for _, f := range d.runs {
		f.Close()
	}
	d.runs, d.buf = nil, nil
}

// dist summarises the values exactly as newDist does: the same sorted
// sequence (a merge of the sorted runs), summed in that order.
func (d *extDist) dist() (Dist, error) {
	defer d.discard()
	if len(d.runs) == 0 {
		return newDist(d.buf), nil
	}
	if len(d.buf) > 0 {
		if err := d.spill(); err != nil {
			return Dist{}, err
		}
	}
	n := d.n
	// Ranks the percentiles interpolate between (load.Percentile).
	qs := []float64{50, 90, 95, 99}
	want := map[int]float64{}
	for _, q := range qs {
		h := q / 100 * float64(n-1)
		lo := int(math.Floor(h))
		want[lo], want[min(lo+1, n-1)] = 0, 0
	}
	var sum, first, last float64
	err := d.merge(func(i int, v float64) {
		if i == 0 {
			first = v
		}
		last = v
		sum += v
		if _, ok := want[i]; ok {
			want[i] = v
		}
	})
	if err != nil {
		return Dist{}, err
	}
	mean := sum / float64(n)
	var ss float64
	if err := d.merge(func(_ int, v float64) { dv := v - mean; ss += dv * dv }); err != nil {
		return Dist{}, err
	}
	// As load.Percentile computes it from the sorted slice.
	pct := func(q float64) float64 {
		pos := q / 100 * float64(n-1)
		lo := int(math.Floor(pos))
		if lo >= n-1 {
			return last
		}
		frac := pos - float64(lo)
		return want[lo] + frac*(want[lo+1]-want[lo])
	}
	return Dist{Count: n, Mean: mean, Std: math.Sqrt(ss / float64(n)), Min: first, Max: last,
		P50: pct(50), P90: pct(90), P95: pct(95), P99: pct(99)}, nil
}

// merge calls fn with every value in ascending order (with its rank).
func (d *extDist) merge(fn func(int, float64)) error {
	h := &runHeap{}
	for _, f := range d.runs {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("read back spilled metric values: %w", err)
		}
		c := &runCursor{r: bufio.NewReaderSize(f, 32<<10)}
		ok, err := c.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Push(h, c)
		}
	}
	i := 0
	for h.Len() > 0 {
		c := (*h)[0]
		fn(i, c.v)
		i++
		ok, err := c.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return nil
}

type runCursor struct {
	r *bufio.Reader
	v float64
	b [8]byte
}

func (c *runCursor) next() (bool, error) {
	if _, err := io.ReadFull(c.r, c.b[:]); err != nil {
		if err == io.EOF {
			return false, nil
		}
		return false, fmt.Errorf("read back spilled metric values: %w", err)
	}
	c.v = math.Float64frombits(binary.LittleEndian.Uint64(c.b[:]))
	return true, nil
}

type runHeap []*runCursor

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return h[i].v < h[j].v }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*runCursor)) }
func (h *runHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}
