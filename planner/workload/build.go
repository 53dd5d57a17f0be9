package workload

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"
)

// decodeBatch is how many rows are decoded at once per column: small
// enough that a batch of every column stays in the CPU cache.
const decodeBatch = 8192

// Options say what to profile and how.
type Options struct {
	// Source is a local path or s3://bucket/key.
	Source string
	Read   ReadOptions
	// RowGroups is k for the 10%..90% rule (default 3).
	RowGroups int
	// RowGroupIndices selects row groups explicitly instead.
	RowGroupIndices []int
	// All scans every row group; percentiles then come from a Sketch.
	All bool
	// Sketch computes percentiles with a Sketch even for a sample (always
	// on with All): memory stays bounded whatever the number of rows.
	Sketch bool
	// Quantiles sketches every distribution at QuantileGrid as well
	// (Distribution.Quantiles), for shapes that draw lengths from it; off,
	// a profile has the four percentiles only (the public prior's form).
	Quantiles bool
	// RowsPerGroup inspects only the first N rows of each group (0: all).
	RowsPerGroup int
	// MaxContext clips derived shapes to a context window (0: no clipping).
	MaxContext int
	// Workers is how many row groups are read at once (default 4).
	Workers int
	// Name, License and Citation describe the source (defaults: the file
	// name, "unspecified", none).
	Name, License, Citation string
	// Now stamps generated_at (default time.Now).
	Now func() time.Time
	// Progress, when set, is called after each row group is merged.
	Progress func(Progress)
}

// Progress reports a running profile.
type Progress struct {
	GroupsDone, GroupsTotal int
	RowsInspected           int64
	BytesRead               int64
}

// Result is a finished profile and what it cost to make.
type Result struct {
	// Document is the sealed profile (its Digest is set).
	Document Document
	// BytesRead is how many bytes were fetched; FileSize is the object's size.
	BytesRead, FileSize int64
	// ProjectedBytes is the size of the projected column chunks of the
	// selected row groups: an upper bound for the column data read.
	ProjectedBytes int64
	// NeededBytes is the column data the inspected rows need: whole chunks,
	// or for a sample of leading rows the pages holding them where the file
	// has an offset index (sampled chunks without one count 0 here).
	NeededBytes int64
	// IndexBytes is how many bytes of offset index a sample read.
	IndexBytes int64
	// PageChunks and PrefixChunks count the sampled column chunks read by
	// their offset index, and those read page by page from their start
	// because the file has no offset index for them.
	PageChunks, PrefixChunks int
	// Identity is the object's ETag or mtime+size (see Object.Identity).
	Identity string
}

// Build profiles a trace.
func Build(ctx context.Context, o Options) (*Result, error) {
	obj, err := Open(ctx, o.Source, o.Read)
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	return BuildFrom(ctx, obj, o)
}

// BuildFrom profiles an already opened trace object.
func BuildFrom(ctx context.Context, obj *Object, o Options) (*Result, error) {
	sc, err := scanSelection(ctx, obj, o, nil)
	if err != nil {
		return nil, err
	}
	doc, err := assemble(o, sc.t.info(), sc.groups, sc.method, sc.stats)
	if err != nil {
		return nil, err
	}
	return &Result{
		Document: doc, BytesRead: obj.BytesRead(), FileSize: obj.Size, ProjectedBytes: sc.t.projectedBytes(sc.groups),
		NeededBytes: sc.plan.needed, IndexBytes: sc.plan.indexBytes, PageChunks: sc.plan.pageChunks, PrefixChunks: sc.plan.prefixChunks,
		Identity: obj.Identity,
	}, nil
}

// scanned is the scan of (a part of) the row groups a profile selects.
type scanned struct {
	t      *trace
	groups []int // the selection
	part   []int // the row groups read
	method string
	plan   readPlan
	stats  *groupStats
}

// scanSelection selects the row groups o asks for and reads those pick
// keeps of them (nil: all), merged in row-group order.
func scanSelection(ctx context.Context, obj *Object, o Options, pick func([]int) []int) (*scanned, error) {
	if o.RowsPerGroup < 0 {
		return nil, fmt.Errorf("rows per group must not be negative (0 reads whole row groups)")
	}
	batch := int64(decodeBatch)
	if o.RowsPerGroup > 0 {
		batch = min(batch, int64(o.RowsPerGroup))
	}
	t, err := openTrace(obj, batch)
	if err != nil {
		return nil, err
	}
	groups, method, err := selectGroups(o, t.pf.NumRowGroups())
	if err != nil {
		return nil, err
	}
	part := groups
	if pick != nil {
		part = pick(groups)
	}
	plan, err := t.planReads(part, int64(o.RowsPerGroup))
	if err != nil {
		return nil, err
	}
	obj.plan(plan)
	newSink := func() quantileSink { return &exactSink{} }
	if o.All || o.Sketch {
		newSink = func() quantileSink { return NewSketch(SketchRelativeError) }
	}
	stats, err := scanGroups(ctx, t, part, int64(o.RowsPerGroup), defaultWorkers(o), newSink, func(done int, st *groupStats) {
		if o.Progress != nil {
			o.Progress(Progress{GroupsDone: done, GroupsTotal: len(part), RowsInspected: st.rows, BytesRead: obj.BytesRead()})
		}
	})
	if err != nil {
		return nil, err
	}
	return &scanned{t: t, groups: groups, part: part, method: method, plan: plan, stats: stats}, nil
}

func defaultWorkers(o Options) int {
	if o.Workers > 0 {
		return o.Workers
	}
	return 4
}

func selectGroups(o Options, total int) ([]int, string, error) {
	lead := "with bounded leading batches"
	if o.RowsPerGroup == 0 {
		lead = "reading every row of each group"
	}
	switch {
	case o.All:
		return AllRowGroups(total), fmt.Sprintf("full scan of every row group; percentiles from a mergeable log-bucket sketch with relative error <= %g%%", SketchRelativeError*100), nil
	case len(o.RowGroupIndices) > 0:
		g, err := CheckIndices(o.RowGroupIndices, total)
		return g, "explicit row groups " + lead, err
	default:
		k := o.RowGroups
		if k == 0 {
			k = 3
		}
		g, err := SelectRowGroups(total, k)
		return g, "deterministic 10%-to-90% row-group coverage " + lead, err
	}
}

// scanGroups reads groups with a pool of workers and merges their stats in
// row-group order (so float sums, and the digest, do not depend on timing).
// At most 2*workers finished groups wait for their turn.
func scanGroups(ctx context.Context, t *trace, groups []int, limit int64, workers int, newSink func() quantileSink, progress func(int, *groupStats)) (*groupStats, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		pos int
		st  *groupStats
		err error
	}
	jobs := make(chan int)
	results := make(chan result)
	tokens := make(chan struct{}, 2*workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := t.newScanner()
			for pos := range jobs {
				st := newGroupStats(newSink)
				err := sc.scanGroup(ctx, groups[pos], limit, st)
				select {
				case results <- result{pos, st, err}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for pos := range groups {
			select {
			case tokens <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- pos:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()

	merged := newGroupStats(newSink)
	pending := map[int]*groupStats{}
	next := 0
	var firstErr error
	for r := range results {
		if r.err != nil {
			if firstErr == nil {
				firstErr = r.err
				cancel()
			}
			continue
		}
		pending[r.pos] = r.st
		for st, ok := pending[next]; ok; st, ok = pending[next] {
			merged.merge(st)
			delete(pending, next)
			next++
			<-tokens
			progress(next, merged)
		}
	}
	if firstErr == nil && next < len(groups) {
		firstErr = ctx.Err()
		if firstErr == nil {
			firstErr = errors.New("profile: scan stopped early")
		}
	}
	return merged, firstErr
}

// traceInfo is what a profile document says about the trace it came from.
type traceInfo struct {
	Source    string   `json:"source"` // as given
	URL       string   `json:"url"`
	Size      int64    `json:"size"`
	Identity  string   `json:"identity"`
	Remote    bool     `json:"remote"`
	Rows      int64    `json:"trace_rows"`
	RowGroups int      `json:"total_row_groups"`
	Columns   []string `json:"columns"`
	HasFunc   bool     `json:"has_function_name"`
}

func (t *trace) info() traceInfo {
	return traceInfo{Source: t.obj.Source, URL: t.obj.URL, Size: t.obj.Size, Identity: t.obj.Identity, Remote: t.obj.Remote,
		Rows: t.pf.NumRows(), RowGroups: t.pf.NumRowGroups(), Columns: t.columns, HasFunc: t.hasFunc}
}

func assemble(o Options, obj traceInfo, groups []int, method string, st *groupStats) (Document, error) {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	name := o.Name
	if name == "" {
		name = path.Base(strings.TrimSuffix(obj.Source, "/"))
	}
	license := o.License
	if license == "" {
		license = "unspecified"
	}
	d := st.distributions(o.Quantiles)
	for _, c := range []struct {
		name string
		n    int
	}{{"input tokens (it > 0)", d.InputTokens.Samples}, {"output tokens (ot > 0)", d.OutputTokens.Samples}} {
		if c.n == 0 {
			return Document{}, fmt.Errorf("%s: the inspected rows have no %s; inspect more rows or other row groups", obj.Source, c.name)
		}
	}
	doc := Document{
		SchemaVersion: SchemaVersion,
		EvidenceClass: EvidenceClass,
		GeneratedAt:   now().UTC().Truncate(time.Second).Format(time.RFC3339),
		Source: Source{
			Name: name, URL: obj.URL, License: license, Citation: o.Citation,
			TraceRows: obj.Rows, TraceBytes: obj.Size,
		},
		Sampling: Sampling{
			Method: method, Columns: obj.Columns, RowGroups: groups, TotalRowGroups: obj.RowGroups,
			RowsInspected: int(st.rows), RemoteOnly: obj.Remote,
		},
		Distributions:       d,
		Profiles:            DeriveShapes(d.InputTokens.Percentiles, d.OutputTokens.Percentiles, o.MaxContext),
		MethodologyBoundary: DefaultMethodologyBoundary,
		Traffic:             st.traffic(obj.HasFunc),
	}
	if o.All || o.Sketch {
		doc.Sampling.QuantileRelativeError = SketchRelativeError
	}
	doc, err := Seal(doc)
	if err != nil {
		return Document{}, err
	}
	if probs := Validate(doc); len(probs) > 0 {
		return Document{}, fmt.Errorf("%s: the profile is not valid: %w", obj.Source, &ValidationError{Problems: probs})
	}
	return doc, nil
}
