package workload

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Columns are the trace columns every profile reads.
var Columns = []string{"started_at", "completed_at", "it", "ot", "ct", "ttft"}

// FunctionColumn is read too, when the trace has it, for the breakdown.
const FunctionColumn = "function_name"

// maxDurationSeconds bounds the durations and TTFTs a profile keeps.
const maxDurationSeconds = 300

// trace is an open Parquet trace with its projection resolved.
type trace struct {
	obj     *Object
	pf      *file.Reader
	fr      *pqarrow.FileReader
	columns []string // projected column names, in read order
	leaves  []int    // their leaf indices
	hasFunc bool
}

func openTrace(obj *Object, batchRows int64) (*trace, error) {
	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	props.BufferedStreamEnabled = true
	props.BufferSize = 64 << 10
	pf, err := file.NewParquetReader(obj, file.WithReadProps(props))
	if err != nil {
		return nil, fmt.Errorf("%s: read Parquet footer: %w", obj.Source, err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: batchRows}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", obj.Source, err)
	}
	t := &trace{obj: obj, pf: pf, fr: fr}
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
	return t, nil
}

// extents returns the byte ranges of the projected column chunks of groups.
func (t *trace) extents(groups []int) []extent {
	md := t.pf.MetaData()
	var out []extent
	for _, g := range groups {
		rg := md.RowGroup(g)
		for _, leaf := range t.leaves {
			cc, err := rg.ColumnChunk(leaf)
			if err != nil {
				continue
			}
			start := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
				start = cc.DictionaryPageOffset()
			}
			out = append(out, extent{start, start + cc.TotalCompressedSize()})
		}
	}
	return out
}

// projectedBytes is the total size of the projected column chunks of groups.
func (t *trace) projectedBytes(groups []int) int64 {
	var n int64
	for _, e := range t.extents(groups) {
		n += e.end - e.start
	}
	return n
}

// scanGroup reads the first limit rows (0: all) of row group g into st.
func (t *trace) scanGroup(ctx context.Context, g int, limit int64, st *groupStats) error {
	rr, err := t.fr.GetRecordReader(ctx, t.leaves, []int{g})
	if err != nil {
		return fmt.Errorf("%s: row group %d: %w", t.obj.Source, g, err)
	}
	defer rr.Release()
	var starts []int64
	var taken int64
	for (limit <= 0 || taken < limit) && rr.Next() {
		rec := rr.RecordBatch()
		n := rec.NumRows()
		if limit > 0 {
			n = min(n, limit-taken)
		}
		s, err := t.addBatch(rec, int(n), st, starts)
		if err != nil {
			return fmt.Errorf("%s: row group %d: %w", t.obj.Source, g, err)
		}
		starts = s
		taken += n
	}
	if err := rr.Err(); err != nil {
		return fmt.Errorf("%s: row group %d: %w", t.obj.Source, g, err)
	}
	st.rows += taken
	st.arrival.addGroup(starts)
	return nil
}

// addBatch folds the first n rows of a record batch into st, column by
// column, and appends the batch's started_at values to starts.
func (t *trace) addBatch(rec arrow.RecordBatch, n int, st *groupStats, starts []int64) ([]int64, error) {
	started, err := timestampsUS(rec.Column(0))
	if err != nil {
		return starts, fmt.Errorf("started_at: %w", err)
	}
	completed, err := timestampsUS(rec.Column(1))
	if err != nil {
		return starts, fmt.Errorf("completed_at: %w", err)
	}
	it, err := ints(rec.Column(2))
	if err != nil {
		return starts, fmt.Errorf("it: %w", err)
	}
	ot, err := ints(rec.Column(3))
	if err != nil {
		return starts, fmt.Errorf("ot: %w", err)
	}
	ct, err := ints(rec.Column(4))
	if err != nil {
		return starts, fmt.Errorf("ct: %w", err)
	}
	ttft, err := floats(rec.Column(5))
	if err != nil {
		return starts, fmt.Errorf("ttft: %w", err)
	}
	var fn *array.String
	if t.hasFunc {
		fn, _ = rec.Column(6).(*array.String)
	}
	for i := range n {
		in, inOK := it(i)
		if inOK && in > 0 {
			x := float64(in)
			st.input.Add(x)
			if c, ok := ct(i); ok && c >= 0 {
				st.cached.Add(float64(c))
				st.ratio.Add(min(1, float64(c)/x))
			}
		}
		out, outOK := ot(i)
		if outOK && out > 0 {
			st.output.Add(float64(out))
		}
		s, sOK := started(i)
		if sOK {
			starts = append(starts, s)
		}
		if c, ok := completed(i); ok && sOK {
			if d := float64(c-s) / 1e6; d > 0 && d < maxDurationSeconds {
				st.duration.Add(d * 1000)
			}
		}
		if x, ok := ttft(i); ok && x > 0 && x < maxDurationSeconds {
			st.ttft.Add(x * 1000)
		}
		if fn != nil && fn.IsValid(i) {
			f := st.fn(fn.Value(i))
			f.requests++
			if inOK && in > 0 {
				f.inN++
				f.inSum += float64(in)
			}
			if outOK && out > 0 {
				f.outN++
				f.outSum += float64(out)
			}
		}
	}
	return starts, nil
}

// getter returns a row's value and whether it is present.
type getter[T any] func(i int) (T, bool)

func ints(a arrow.Array) (getter[int64], error) {
	switch c := a.(type) {
	case *array.Int64:
		return func(i int) (int64, bool) { return c.Value(i), c.IsValid(i) }, nil
	case *array.Int32:
		return func(i int) (int64, bool) { return int64(c.Value(i)), c.IsValid(i) }, nil
	case *array.Uint32:
		return func(i int) (int64, bool) { return int64(c.Value(i)), c.IsValid(i) }, nil
	case *array.Float64:
		return func(i int) (int64, bool) { return int64(c.Value(i)), c.IsValid(i) }, nil
	}
	return nil, fmt.Errorf("type %s is not an integer column", a.DataType())
}

func floats(a arrow.Array) (getter[float64], error) {
	switch c := a.(type) {
	case *array.Float32:
		return func(i int) (float64, bool) { return float64(c.Value(i)), c.IsValid(i) }, nil
	case *array.Float64:
		return func(i int) (float64, bool) { return c.Value(i), c.IsValid(i) }, nil
	}
	return nil, fmt.Errorf("type %s is not a floating-point column (seconds)", a.DataType())
}

// timestampsUS reads a timestamp column as microseconds since the epoch.
func timestampsUS(a arrow.Array) (getter[int64], error) {
	c, ok := a.(*array.Timestamp)
	if !ok {
		return nil, fmt.Errorf("type %s is not a timestamp column", a.DataType())
	}
	var mul, div int64 = 1, 1
	switch c.DataType().(*arrow.TimestampType).Unit {
	case arrow.Second:
		mul = 1_000_000
	case arrow.Millisecond:
		mul = 1000
	case arrow.Nanosecond:
		div = 1000
	}
	return func(i int) (int64, bool) { return int64(c.Value(i)) * mul / div, c.IsValid(i) }, nil
}
