package workload

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// Columns are the trace columns every profile reads.
var Columns = []string{"started_at", "completed_at", "it", "ot", "ct", "ttft"}

// FunctionColumn is read too, when the trace has it, for the breakdown.
const FunctionColumn = "function_name"

// maxDurationSeconds bounds the durations and TTFTs a profile keeps.
const maxDurationSeconds = 300

// maxTokenCount bounds the token counts a profile keeps (2^30, a thousand
// times the longest context window): a larger count is a corrupt row, like
// a non-positive one, and kept it would wrap the exact int64 sums of the
// function breakdown (a row of it = 2^63-1 once failed the whole profile:
// "token means must be finite and non-negative").
const maxTokenCount = 1 << 30

// validTokens reports whether x is a token count a profile keeps.
func validTokens(x int64) bool { return x > 0 && x <= maxTokenCount }

// trace is an open Parquet trace with its projection resolved.
type trace struct {
	obj     *Object
	pf      *file.Reader
	columns []string // projected column names, in read order
	leaves  []int    // their leaf indices
	specs   []columnSpec
	hasFunc bool
	batch   int // rows decoded per batch
}

// columnWants says what each profiled column must hold.
var columnWants = map[string]want{
	"started_at": wantTimestamp, "completed_at": wantTimestamp,
	"it": wantInt, "ot": wantInt, "ct": wantInt, "ttft": wantSeconds,
	FunctionColumn: wantString,
}

func openTrace(obj *Object, batchRows int64) (*trace, error) {
	props := parquet.NewReaderProperties(&bufferPool{})
	props.BufferedStreamEnabled = true
	props.BufferSize = 64 << 10
	pf, err := file.NewParquetReader(obj, file.WithReadProps(props))
	if err != nil {
		return nil, fmt.Errorf("%s: read Parquet footer: %w", obj.Source, err)
	}
	t := &trace{obj: obj, pf: pf, batch: int(batchRows)}
	sch := pf.MetaData().Schema
	var missing []string
	for _, c := range Columns {
		i := sch.ColumnIndexByName(c)
		if i < 0 {
			missing = append(missing, c)
			continue
		}
		t.columns = append(t.columns, c)
		t.leaves = append(t.leaves, i)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: the trace has no column %s; a profile needs %s (the public trace's schema)", obj.Source, strings.Join(missing, ", "), strings.Join(Columns, ", "))
	}
	if i := sch.ColumnIndexByName(FunctionColumn); i >= 0 {
		t.columns = append(t.columns, FunctionColumn)
		t.leaves = append(t.leaves, i)
		t.hasFunc = true
	}
	for j, name := range t.columns {
		spec, err := resolveColumn(sch.Column(t.leaves[j]), name, t.leaves[j], columnWants[name])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", obj.Source, err)
		}
		t.specs = append(t.specs, spec)
	}
	return t, nil
}

// projectedBytes is the total size of the projected column chunks of groups.
func (t *trace) projectedBytes(groups []int) int64 {
	var n int64
	for _, g := range groups {
		rg := t.pf.MetaData().RowGroup(g)
		for _, leaf := range t.leaves {
			if cc, err := rg.ColumnChunk(leaf); err == nil {
				r := chunkRange(cc)
				n += r.end - r.start
			}
		}
	}
	return n
}

// scanner is one worker's reusable decoding state: column buffers and the
// per-batch value lists handed to the sinks.
type scanner struct {
	t    *trace
	cols []*columnReader

	in, cached, ratio, out, dur, ttft []float64
	recent                            []recentFunc
	starts                            []int64 // a row group's started_at values
}

// recentFunc caches a few function_name lookups (compared by content).
type recentFunc struct {
	name string
	agg  *funcAgg
}

func (t *trace) newScanner() *scanner {
	sc := &scanner{t: t}
	for _, spec := range t.specs {
		sc.cols = append(sc.cols, newColumnReader(spec, nil, t.batch))
	}
	for _, b := range []*[]float64{&sc.in, &sc.cached, &sc.ratio, &sc.out, &sc.dur, &sc.ttft} {
		*b = make([]float64, 0, t.batch)
	}
	return sc
}

// scanGroup reads the first limit rows (0: all) of row group g into st.
func (sc *scanner) scanGroup(ctx context.Context, g int, limit int64, st *groupStats) error {
	t := sc.t
	fail := func(err error) error { return fmt.Errorf("%s: row group %d: %w", t.obj.Source, g, err) }
	rg := t.pf.RowGroup(g)
	want := rg.NumRows()
	if limit > 0 {
		want = min(want, limit)
	}
	for i, c := range sc.cols {
		r, err := rg.Column(c.spec.leaf)
		if err != nil {
			return fail(err)
		}
		sc.cols[i].r = r
	}
	sc.recent = sc.recent[:0]
	defer func() {
		for _, c := range sc.cols {
			if c.r != nil {
				c.r.Close() // its page buffers go back to the pool
				c.r = nil
			}
		}
	}()
	if int64(cap(sc.starts)) < want {
		sc.starts = make([]int64, 0, want)
	}
	starts := sc.starts[:0]
	var taken int64
	for taken < want {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := int(min(int64(t.batch), want-taken))
		got := n
		for _, c := range sc.cols {
			m, err := c.read(n)
			if err != nil {
				return fail(err)
			}
			got = min(got, m)
		}
		if got == 0 {
			return fail(fmt.Errorf("the row group ends after %d of %d rows", taken, want))
		}
		starts = sc.addBatch(got, st, starts)
		taken += int64(got)
	}
	st.rows += taken
	st.arrival.addGroup(starts)
	return nil
}

// addBatch folds the first n decoded rows into st, one quantity at a time,
// and appends their started_at values to starts.
func (sc *scanner) addBatch(n int, st *groupStats, starts []int64) []int64 {
	started, completed := sc.cols[0].ints[:n], sc.cols[1].ints[:n]
	it, ot, ct := sc.cols[2].ints[:n], sc.cols[3].ints[:n], sc.cols[4].ints[:n]
	ttft := sc.cols[5].floats[:n]

	in, cached, ratio := sc.in[:0], sc.cached[:0], sc.ratio[:0]
	for i, x := range it {
		if validTokens(x) {
			f := float64(x)
			in = append(in, f)
			if c := ct[i]; c >= 0 && c <= maxTokenCount {
				cached = append(cached, float64(c))
				ratio = append(ratio, min(1, float64(c)/f))
			}
		}
	}
	st.input.AddAll(in)
	st.cached.AddAll(cached)
	st.ratio.AddAll(ratio)

	out := sc.out[:0]
	for _, x := range ot {
		if validTokens(x) {
			out = append(out, float64(x))
		}
	}
	st.output.AddAll(out)

	dur := sc.dur[:0]
	for i, s := range started {
		if s == nullInt {
			continue
		}
		starts = append(starts, s)
		if c := completed[i]; c != nullInt {
			if d := float64(c-s) / 1e6; d > 0 && d < maxDurationSeconds {
				dur = append(dur, d*1000)
			}
		}
	}
	st.duration.AddAll(dur)

	tt := sc.ttft[:0]
	for _, x := range ttft {
		if x > 0 && x < maxDurationSeconds {
			tt = append(tt, x*1000)
		}
	}
	st.ttft.AddAll(tt)

	if sc.t.hasFunc {
		sc.addFunctions(sc.cols[6], n, st, it, ot)
	}
	return starts
}

func (sc *scanner) addFunctions(c *columnReader, n int, st *groupStats, it, ot []int64) {
	names := c.strs[:n]
	for i, b := range names {
		if c.def != nil && c.def[i] != c.spec.maxDef {
			continue
		}
		f := sc.lookup(b, st)
		f.requests++
		if x := it[i]; validTokens(x) {
			f.inN++
			f.inSum += x
		}
		if x := ot[i]; validTokens(x) {
			f.outN++
			f.outSum += x
		}
	}
}

// lookup finds a function's totals, trying the recent names first.
func (sc *scanner) lookup(b []byte, st *groupStats) *funcAgg {
	for _, r := range sc.recent {
		if r.name == string(b) {
			return r.agg
		}
	}
	f := st.funcs[string(b)]
	if f == nil {
		f = st.fn(string(b))
	}
	if len(sc.recent) < 16 {
		sc.recent = append(sc.recent, recentFunc{name: string(b), agg: f})
	}
	return f
}
