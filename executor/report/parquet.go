package report

import (
	"bytes"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/infercrane/infercrane/executor/loadgen"
	"github.com/infercrane/infercrane/executor/redact"
)

// column is one Parquet column of the records file: its field and how a
// record fills it.
type column struct {
	field arrow.Field
	fill  func(b array.Builder, lr *LaneRecords, r *loadgen.Record, red *redact.Set)
}

func str(name string, get func(*LaneRecords, *loadgen.Record) string) column {
	return column{arrow.Field{Name: name, Type: arrow.BinaryTypes.String}, func(b array.Builder, lr *LaneRecords, r *loadgen.Record, _ *redact.Set) {
		b.(*array.StringBuilder).Append(get(lr, r))
	}}
}

func optStr(name string, get func(*loadgen.Record) string) column {
	return column{arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}, func(b array.Builder, _ *LaneRecords, r *loadgen.Record, red *redact.Set) {
		if v := get(r); v != "" {
			b.(*array.StringBuilder).Append(red.String(v))
		} else {
			b.AppendNull()
		}
	}}
}

func i64(name string, get func(*LaneRecords, *loadgen.Record) int64) column {
	return column{arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64}, func(b array.Builder, lr *LaneRecords, r *loadgen.Record, _ *redact.Set) {
		b.(*array.Int64Builder).Append(get(lr, r))
	}}
}

// optNs is a nanosecond time that is absent (null) when zero.
func optNs(name string, get func(*loadgen.Record) int64) column {
	return column{arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64, Nullable: true}, func(b array.Builder, _ *LaneRecords, r *loadgen.Record, _ *redact.Set) {
		if v := get(r); v != 0 {
			b.(*array.Int64Builder).Append(v)
		} else {
			b.AppendNull()
		}
	}}
}

// optMs is a derived duration in ms, null for failed requests.
func optMs(name string, get func(*loadgen.Record) (float64, bool)) column {
	return column{arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Float64, Nullable: true}, func(b array.Builder, _ *LaneRecords, r *loadgen.Record, _ *redact.Set) {
		if v, ok := get(r); ok {
			b.(*array.Float64Builder).Append(v)
		} else {
			b.AppendNull()
		}
	}}
}

func boolean(name string, get func(*loadgen.Record) bool) column {
	return column{arrow.Field{Name: name, Type: arrow.FixedWidthTypes.Boolean}, func(b array.Builder, _ *LaneRecords, r *loadgen.Record, _ *redact.Set) {
		b.(*array.BooleanBuilder).Append(get(r))
	}}
}

// recordColumns are the columns of the records Parquet file: the lane's
// identity, every Record field, and ttft_ms / latency_ms derived by the
// design's definitions for convenience (null for failed requests).
var recordColumns = []column{
	str("lane", func(lr *LaneRecords, _ *loadgen.Record) string { return lr.Lane }),
	str("model", func(lr *LaneRecords, _ *loadgen.Record) string { return lr.Model }),
	str("model_id", func(lr *LaneRecords, _ *loadgen.Record) string { return lr.ModelID }),
	str("shape", func(lr *LaneRecords, _ *loadgen.Record) string { return lr.Shape }),
	str("gpu", func(lr *LaneRecords, _ *loadgen.Record) string { return lr.GPU }),
	i64("run", func(lr *LaneRecords, _ *loadgen.Record) int64 { return int64(lr.Run) }),
	i64("index", func(_ *LaneRecords, r *loadgen.Record) int64 { return int64(r.Index) }),
	boolean("warmup", func(r *loadgen.Record) bool { return r.Warmup }),
	i64("scheduled_ns", func(_ *LaneRecords, r *loadgen.Record) int64 { return r.ScheduledNs }),
	i64("sent_ns", func(_ *LaneRecords, r *loadgen.Record) int64 { return r.SentNs }),
	optNs("first_token_ns", func(r *loadgen.Record) int64 { return r.FirstTokenNs }),
	optNs("last_token_ns", func(r *loadgen.Record) int64 { return r.LastTokenNs }),
	i64("done_ns", func(_ *LaneRecords, r *loadgen.Record) int64 { return r.DoneNs }),
	{arrow.Field{Name: "chunk_ns", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}, func(b array.Builder, _ *LaneRecords, r *loadgen.Record, _ *redact.Set) {
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		vb := lb.ValueBuilder().(*array.Int64Builder)
		vb.AppendValues(r.ChunkNs, nil)
	}},
	i64("input_tokens", func(_ *LaneRecords, r *loadgen.Record) int64 { return int64(r.InputTokens) }),
	i64("prompt_tokens", func(_ *LaneRecords, r *loadgen.Record) int64 { return int64(r.PromptTokens) }),
	i64("max_tokens", func(_ *LaneRecords, r *loadgen.Record) int64 { return int64(r.MaxTokens) }),
	i64("output_tokens", func(_ *LaneRecords, r *loadgen.Record) int64 { return int64(r.OutputTokens) }),
	i64("client_tokens", func(_ *LaneRecords, r *loadgen.Record) int64 { return int64(r.ClientTokens) }),
	boolean("usage_missing", func(r *loadgen.Record) bool { return r.UsageMissing }),
	i64("status", func(_ *LaneRecords, r *loadgen.Record) int64 { return int64(r.Status) }),
	optStr("error_class", func(r *loadgen.Record) string { return r.ErrorClass }),
	optStr("error", func(r *loadgen.Record) string { return r.Error }),
	boolean("open_loop", func(r *loadgen.Record) bool { return r.OpenLoop }),
	boolean("non_streaming", func(r *loadgen.Record) bool { return r.NonStreaming }),
	optMs("ttft_ms", func(r *loadgen.Record) (float64, bool) {
		return float64(r.FirstTokenNs-r.SentNs) / 1e6, r.OK() && !r.NonStreaming && r.FirstTokenNs != 0
	}),
	optMs("latency_ms", func(r *loadgen.Record) (float64, bool) {
		return float64(r.LastTokenNs-r.SentNs) / 1e6, r.OK() && r.LastTokenNs != 0
	}),
}

// RecordsSchema is the Arrow schema of the records Parquet file.
func RecordsSchema() *arrow.Schema {
	fields := make([]arrow.Field, len(recordColumns))
	for i, c := range recordColumns {
		fields[i] = c.field
	}
	return arrow.NewSchema(fields, nil)
}

// parquetRowGroup bounds the rows per record batch and row group.
const parquetRowGroup = 64 * 1024

// WriteParquetFile writes every record of runs into one Snappy-compressed
// Parquet file (one row per request) that DuckDB, pandas and arrow read
// directly, atomically (temporary file, fsync, rename). Error messages are
// redacted of secrets.
func WriteParquetFile(path string, runs []LaneRecords, secrets []string) error {
	b, err := encodeParquet(runs, redact.New(secrets...))
	if err != nil {
		return err
	}
	return writeAtomic(path, b)
}

// encodeParquet encodes the records of runs as a Parquet file. The bytes
// depend only on the records, so the evidence can carry their digest.
func encodeParquet(runs []LaneRecords, red *redact.Set) ([]byte, error) {
	var buf bytes.Buffer
	schema := RecordsSchema()
	// Dictionary encoding only pays for the repetitive string columns; on
	// the nanosecond timestamps it costs time and saves nothing.
	popts := []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(parquetRowGroup), parquet.WithDictionaryDefault(false)}
	for _, c := range []string{"lane", "model", "model_id", "shape", "gpu", "error_class"} {
		popts = append(popts, parquet.WithDictionaryFor(c, true))
	}
	props := parquet.NewWriterProperties(popts...)
	w, err := pqarrow.NewFileWriter(schema, &buf, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	rows := 0
	flush := func() error {
		if rows == 0 {
			return nil
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		rows = 0
		return w.Write(rec)
	}
	for i := range runs {
		lr := &runs[i]
		for j := range lr.Records {
			for k, c := range recordColumns {
				c.fill(b.Field(k), lr, &lr.Records[j], red)
			}
			if rows++; rows == parquetRowGroup {
				if err := flush(); err != nil {
					w.Close()
					return nil, err
				}
			}
		}
	}
	if err := flush(); err != nil {
		w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("finish the Parquet file: %w", err)
	}
	return buf.Bytes(), nil
}
