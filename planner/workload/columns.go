package workload

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// nullInt marks a missing integer or timestamp in a decoded batch. No filter
// keeps it: token filters want > 0 or >= 0, and durations need both ends.
const nullInt = math.MinInt64

// colKind is how a leaf column is decoded into a batch.
type colKind int

const (
	kindInt64   colKind = iota // INT64 (token counts)
	kindInt32                  // INT32, signed
	kindUint32                 // INT32 with an unsigned logical type
	kindDouble                 // DOUBLE read as an integer (token counts) or seconds (ttft)
	kindFloat                  // FLOAT seconds (ttft)
	kindTS                     // INT64 timestamp, scaled to microseconds
	kindInt96                  // INT96 timestamp
	kindStrings                // BYTE_ARRAY (function_name)
)

// columnSpec says how one projected leaf is decoded; it is resolved once per
// trace from the schema, so every batch decodes without type switches.
type columnSpec struct {
	name     string
	leaf     int
	kind     colKind
	maxDef   int16
	mul, div int64 // timestamp unit -> microseconds
}

// want is what a projected column must hold.
type want int

const (
	wantInt want = iota
	wantTimestamp
	wantSeconds
	wantString
)

// resolveColumn checks a leaf's physical and logical type against what the
// profile needs from it, with the same messages for every reader.
func resolveColumn(col *schema.Column, name string, leaf int, w want) (columnSpec, error) {
	s := columnSpec{name: name, leaf: leaf, maxDef: col.MaxDefinitionLevel(), mul: 1, div: 1}
	if col.MaxRepetitionLevel() > 0 {
		return s, fmt.Errorf("%s: a repeated column cannot be profiled", name)
	}
	pt := col.PhysicalType()
	lt := col.LogicalType()
	typeName := func() string {
		if lt != nil && lt.IsValid() && lt.String() != "None" {
			return fmt.Sprintf("%s (%s)", pt, lt)
		}
		return pt.String()
	}
	switch w {
	case wantInt:
		switch {
		case pt == parquet.Types.Int64 && !isTimestamp(col):
			s.kind = kindInt64
		case pt == parquet.Types.Int32:
			s.kind = kindInt32
			if it, ok := lt.(*schema.IntLogicalType); ok && !it.IsSigned() {
				s.kind = kindUint32
			}
		case pt == parquet.Types.Double:
			s.kind = kindDouble
		default:
			return s, fmt.Errorf("%s: type %s is not an integer column", name, typeName())
		}
	case wantTimestamp:
		switch {
		case pt == parquet.Types.Int96:
			s.kind = kindInt96
		case pt == parquet.Types.Int64 && isTimestamp(col):
			s.kind = kindTS
			switch timestampUnit(col) {
			case schema.TimeUnitMillis:
				s.mul = 1000
			case schema.TimeUnitNanos:
				s.div = 1000
			}
		default:
			return s, fmt.Errorf("%s: type %s is not a timestamp column", name, typeName())
		}
	case wantSeconds:
		switch pt {
		case parquet.Types.Float:
			s.kind = kindFloat
		case parquet.Types.Double:
			s.kind = kindDouble
		default:
			return s, fmt.Errorf("%s: type %s is not a floating-point column (seconds)", name, typeName())
		}
	case wantString:
		if pt != parquet.Types.ByteArray {
			return s, fmt.Errorf("%s: type %s is not a string column", name, typeName())
		}
		s.kind = kindStrings
	}
	return s, nil
}

type timeUnitType interface{ TimeUnit() schema.TimeUnitType }

func isTimestamp(col *schema.Column) bool {
	if _, ok := col.LogicalType().(timeUnitType); ok {
		_, isTime := col.LogicalType().(*schema.TimeLogicalType)
		return !isTime
	}
	ct := col.ConvertedType()
	return ct == schema.ConvertedTypes.TimestampMillis || ct == schema.ConvertedTypes.TimestampMicros
}

func timestampUnit(col *schema.Column) schema.TimeUnitType {
	if t, ok := col.LogicalType().(timeUnitType); ok {
		return t.TimeUnit()
	}
	if col.ConvertedType() == schema.ConvertedTypes.TimestampMillis {
		return schema.TimeUnitMillis
	}
	return schema.TimeUnitMicros
}

// columnReader decodes one column chunk batch by batch into reused buffers:
// ints (token counts, timestamps in microseconds; nullInt where null),
// floats (seconds; NaN where null) or strs (nil where null). Values are
// spaced: index i is row i of the batch.
type columnReader struct {
	spec columnSpec
	r    file.ColumnChunkReader
	def  []int16

	ints   []int64
	floats []float64
	strs   []parquet.ByteArray
	own    []byte // strings kept across a page boundary (readStrings)

	i32 []int32
	f32 []float32
	i96 []parquet.Int96
}

func newColumnReader(spec columnSpec, r file.ColumnChunkReader, batch int) *columnReader {
	c := &columnReader{spec: spec, r: r}
	if spec.maxDef > 0 {
		c.def = make([]int16, batch)
	}
	switch spec.kind {
	case kindStrings:
		c.strs = make([]parquet.ByteArray, batch)
	case kindFloat, kindDouble:
		c.floats = make([]float64, batch)
	}
	if spec.kind != kindStrings && spec.kind != kindFloat {
		c.ints = make([]int64, batch)
	}
	switch spec.kind {
	case kindInt32, kindUint32:
		c.i32 = make([]int32, batch)
	case kindFloat:
		c.f32 = make([]float32, batch)
	case kindInt96:
		c.i96 = make([]parquet.Int96, batch)
	}
	return c
}

// read decodes the next n rows (n <= the batch size) and returns how many
// rows it got (fewer only at the end of the chunk).
func (c *columnReader) read(n int) (int, error) {
	var def []int16
	if c.def != nil {
		def = c.def[:n]
	}
	var rows int64
	var vals int
	var err error
	switch r := c.r.(type) {
	case *file.Int64ColumnChunkReader:
		rows, vals, err = r.ReadBatch(int64(n), c.ints[:n], def, nil)
	case *file.Int32ColumnChunkReader:
		rows, vals, err = r.ReadBatch(int64(n), c.i32[:n], def, nil)
	case *file.Float64ColumnChunkReader:
		rows, vals, err = r.ReadBatch(int64(n), c.floats[:n], def, nil)
	case *file.Float32ColumnChunkReader:
		rows, vals, err = r.ReadBatch(int64(n), c.f32[:n], def, nil)
	case *file.Int96ColumnChunkReader:
		rows, vals, err = r.ReadBatch(int64(n), c.i96[:n], def, nil)
	case *file.ByteArrayColumnChunkReader:
		rows, vals, err = c.readStrings(r, n, def)
	default:
		return 0, fmt.Errorf("%s: unsupported column reader %T", c.spec.name, c.r)
	}
	if err == nil {
		// ReadBatch stops at a page it cannot read (an I/O or decoding
		// error) as it does at the end of the chunk: short, with no error.
		// The error is in Err(); without it a failed read would pass for
		// the chunk's end and a later read could resume mid-page.
		err = c.r.Err()
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w", c.spec.name, err)
	}
	m := int(rows)
	c.widen(vals)
	if c.def != nil && vals < m {
		c.space(m, vals)
	}
	return m, nil
}

// readStrings reads n rows of a string column page by page
// (ReadBatchInPage), leaving the values where the page holds them rather
// than copying each batch's strings as ReadBatch does: they are used before
// the next read. Only when a batch spans pages are the values read so far
// copied (into own), before the next page's bytes replace them.
func (c *columnReader) readStrings(r *file.ByteArrayColumnChunkReader, n int, def []int16) (rows int64, vals int, err error) {
	for rows < int64(n) {
		if rows > 0 {
			c.keep(vals)
		}
		var d []int16
		if def != nil {
			d = def[rows:]
		}
		m, v, err := r.ReadBatchInPage(int64(n)-rows, c.strs[vals:n], d, nil)
		rows, vals = rows+m, vals+v
		if err != nil || m == 0 {
			return rows, vals, err
		}
	}
	return rows, vals, nil
}

// keep copies the first vals strings read into the column's own buffer.
func (c *columnReader) keep(vals int) {
	size := 0
	for _, b := range c.strs[:vals] {
		size += len(b)
	}
	if cap(c.own) < size {
		c.own = make([]byte, 0, 2*size)
	}
	own := c.own[:0]
	for i, b := range c.strs[:vals] {
		at := len(own)
		own = append(own, b...)
		c.strs[i] = own[at:len(own):len(own)]
	}
}

// widen converts the vals dense values just read into ints or floats.
func (c *columnReader) widen(vals int) {
	s := c.spec
	switch s.kind {
	case kindInt32:
		for i, v := range c.i32[:vals] {
			c.ints[i] = int64(v)
		}
	case kindUint32:
		for i, v := range c.i32[:vals] {
			c.ints[i] = int64(uint32(v))
		}
	case kindFloat:
		for i, v := range c.f32[:vals] {
			c.floats[i] = float64(v)
		}
	case kindDouble:
		for i, v := range c.floats[:vals] {
			c.ints[i] = int64(v)
		}
	case kindInt96:
		for i, v := range c.i96[:vals] {
			c.ints[i] = v.ToTime().UnixMicro()
		}
	case kindTS:
		if s.mul != 1 || s.div != 1 {
			for i, v := range c.ints[:vals] {
				c.ints[i] = v * s.mul / s.div
			}
		}
	}
}

// space spreads vals dense values over m rows by the definition levels,
// back to front in place, marking nulls.
func (c *columnReader) space(m, vals int) {
	def, max := c.def[:m], c.spec.maxDef
	j := vals - 1
	if c.ints != nil {
		for i := m - 1; i >= 0; i-- {
			if def[i] == max {
				c.ints[i] = c.ints[j]
				j--
			} else {
				c.ints[i] = nullInt
			}
		}
		j = vals - 1
	}
	if c.floats != nil {
		for i := m - 1; i >= 0; i-- {
			if def[i] == max {
				c.floats[i] = c.floats[j]
				j--
			} else {
				c.floats[i] = math.NaN()
			}
		}
		j = vals - 1
	}
	if c.strs != nil {
		for i := m - 1; i >= 0; i-- {
			if def[i] == max {
				c.strs[i] = c.strs[j]
				j--
			} else {
				c.strs[i] = nil
			}
		}
	}
}
