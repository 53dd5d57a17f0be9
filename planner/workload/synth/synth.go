// Package synth writes synthetic serving traces with the exact Parquet schema
// of the public "A Year in LLM Serving" (Chutes) trace, for tests, benchmarks
// and examples. Output is deterministic for a given Options value.
package synth

import (
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Options control a synthetic trace.
type Options struct {
	// Rows is the number of requests (default 100,000).
	Rows int64
	// RowsPerGroup is the Parquet row-group length (default 10,000).
	RowsPerGroup int
	// Seed makes the trace reproducible (default 1).
	Seed uint64
	// Start is the started_at of the first request (default 2025-01-01 UTC).
	Start time.Time
	// RatePerSecond is the mean arrival rate (default 50).
	RatePerSecond float64
	// PageIndex writes Parquet's page index (column and offset indexes),
	// which lets a sampled profile read only the pages holding its rows.
	PageIndex bool
}

// NullTokenFraction is the share of rows without token counts, as in the
// public trace.
const NullTokenFraction = 0.075

// Functions are the function_name values; names ending in "_stream" are
// streaming calls and the only ones with a ttft.
var Functions = []string{"chat_stream", "chat", "completion_stream", "completion"}

var functionWeights = []float64{0.55, 0.25, 0.12, 0.08}

// Schema is the public trace's schema: string ids, microsecond timestamps,
// nullable int64 token counts and a float32 ttft in seconds.
func Schema() *arrow.Schema {
	ts := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	return arrow.NewSchema([]arrow.Field{
		{Name: "invocation_id", Type: arrow.BinaryTypes.String},
		{Name: "function_name", Type: arrow.BinaryTypes.String},
		{Name: "chute_id", Type: arrow.BinaryTypes.String},
		{Name: "user_id", Type: arrow.BinaryTypes.String},
		{Name: "rehash_round", Type: arrow.PrimitiveTypes.Int64},
		{Name: "instance_id", Type: arrow.BinaryTypes.String},
		{Name: "started_at", Type: ts},
		{Name: "completed_at", Type: ts},
		{Name: "it", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ot", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ct", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ttft", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	}, nil)
}

func (o *Options) defaults() {
	if o.Rows <= 0 {
		o.Rows = 100_000
	}
	if o.RowsPerGroup <= 0 {
		o.RowsPerGroup = 10_000
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if o.RatePerSecond <= 0 {
		o.RatePerSecond = 50
	}
}

// Write writes a synthetic trace as Parquet (Snappy, one row group per
// RowsPerGroup rows) to w.
func Write(w io.Writer, opts Options) error {
	opts.defaults()
	schema := Schema()
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(int64(opts.RowsPerGroup)),
		parquet.WithDictionaryFor("invocation_id", false),
		parquet.WithPageIndexEnabled(opts.PageIndex),
	)
	// The Parquet writer closes an io.Closer it is given; the caller owns w.
	fw, err := pqarrow.NewFileWriter(schema, writeOnly{w}, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	g := newGen(opts)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for done := int64(0); done < opts.Rows; {
		n := min(int64(opts.RowsPerGroup), opts.Rows-done)
		for range n {
			g.row(b)
		}
		rec := b.NewRecordBatch()
		err := fw.Write(rec)
		rec.Release()
		if err != nil {
			fw.Close()
			return fmt.Errorf("synth: write row group: %w", err)
		}
		done += n
	}
	if err := fw.Close(); err != nil {
		return fmt.Errorf("synth: close: %w", err)
	}
	return nil
}

// writeOnly hides the Close method of the caller's writer.
type writeOnly struct{ w io.Writer }

func (w writeOnly) Write(p []byte) (int, error) { return w.w.Write(p) }

type gen struct {
	r       *rand.Rand
	t       int64 // current started_at, microseconds since the epoch
	meanGap float64
	id      [8]byte
	idHex   [16]byte
	chutes  []string
	users   []string
	insts   []string
}

func newGen(o Options) *gen {
	g := &gen{r: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15)), t: o.Start.UnixMicro(), meanGap: 1e6 / o.RatePerSecond}
	g.chutes = names(g.r, "chute-", 64)
	g.users = names(g.r, "user-", 512)
	g.insts = names(g.r, "inst-", 128)
	return g
}

func names(r *rand.Rand, prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%08x", prefix, r.Uint32())
	}
	return out
}

// lognormal draws exp(N(ln median, sigma)).
func (g *gen) lognormal(median, sigma float64) float64 {
	return median * math.Exp(sigma*g.r.NormFloat64())
}

func (g *gen) pick(weights []float64) int {
	u := g.r.Float64()
	for i, w := range weights {
		if u < w {
			return i
		}
		u -= w
	}
	return len(weights) - 1
}

func (g *gen) row(b *array.RecordBuilder) {
	// Bursty arrivals: one gap in ten comes from a burst ten times denser.
	gap := g.meanGap
	if g.r.IntN(10) == 0 {
		gap /= 10
	}
	g.t += int64(g.r.ExpFloat64() * gap)
	fn := g.pick(functionWeights)
	streaming := fn%2 == 0

	binary := func(i int) *array.BinaryBuilder { return b.Field(i).(*array.StringBuilder).BinaryBuilder }
	ts := func(i int) *array.TimestampBuilder { return b.Field(i).(*array.TimestampBuilder) }
	i64 := func(i int) *array.Int64Builder { return b.Field(i).(*array.Int64Builder) }

	binary(0).Append(g.invocationID())
	b.Field(1).(*array.StringBuilder).Append(Functions[fn])
	b.Field(2).(*array.StringBuilder).Append(g.chutes[g.r.IntN(len(g.chutes))])
	b.Field(3).(*array.StringBuilder).Append(g.users[g.r.IntN(len(g.users))])
	i64(4).Append(int64(g.r.IntN(3)))
	b.Field(5).(*array.StringBuilder).Append(g.insts[g.r.IntN(len(g.insts))])

	// Durations: lognormal around 6.5 s, with 1% zero-length and 0.5%
	// over-300 s rows that the profile's filter must drop.
	var dur int64
	switch u := g.r.Float64(); {
	case u < 0.01:
		dur = 0
	case u < 0.015:
		dur = int64((300 + g.r.Float64()*600) * 1e6)
	default:
		dur = int64(g.lognormal(6.5, 1.0) * 1e6)
	}
	ts(6).Append(arrow.Timestamp(g.t))
	ts(7).Append(arrow.Timestamp(g.t + dur))

	if g.r.Float64() < NullTokenFraction {
		i64(8).AppendNull()
		i64(9).AppendNull()
		i64(10).AppendNull()
		b.Field(11).(*array.Float32Builder).AppendNull()
		return
	}
	it := max(1, int64(g.lognormal(3900, 1.2)))
	if g.r.IntN(100) == 0 {
		it = 0 // rejected by the it > 0 filter
	}
	ot := max(1, int64(g.lognormal(300, 1.1)))
	if g.r.IntN(50) == 0 {
		ot = 0 // rejected by the ot > 0 filter
	}
	i64(8).Append(it)
	i64(9).Append(ot)
	if g.r.Float64() < 0.18 {
		u := g.r.Float64()
		ct := int64(float64(it) * u * u * u)
		if g.r.IntN(100) == 0 {
			ct = it + 16 // a cache report above the prompt: the fraction clamps to 1
		}
		i64(10).Append(ct)
	} else {
		i64(10).AppendNull()
	}
	if streaming {
		ttft := g.lognormal(1.0, 1.2)
		if g.r.IntN(500) == 0 {
			ttft = 300 + g.r.Float64()*100
		}
		b.Field(11).(*array.Float32Builder).Append(float32(ttft))
	} else {
		b.Field(11).(*array.Float32Builder).AppendNull()
	}
}

func (g *gen) invocationID() []byte {
	v := g.r.Uint64()
	for i := range g.id {
		g.id[i] = byte(v >> (8 * i))
	}
	hex.Encode(g.idHex[:], g.id[:])
	return g.idHex[:]
}
