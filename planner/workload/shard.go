package workload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/infercrane/infercrane/planner/cputime"
)

// errShardSketch refuses to shard a profile with exact percentiles.
var errShardSketch = errors.New("a sharded profile merges sketches: use a full scan (--all) or sketch percentiles (--sketch)")

// ShardSchemaVersion is the schema_version of a shard result.
const ShardSchemaVersion = "infercrane.profile-shard/v2"

// Shard is the result of profiling one part of a trace's selected row
// groups: the mergeable state of every statistic (sketch bucket counts,
// exact counts and integer sums), not percentiles. Merging the shards of a
// selection gives, byte for byte, the profile a single process makes of it,
// in any merge order: every merged quantity is an integer.
type Shard struct {
	SchemaVersion string `json:"schema_version"`
	// Index is this shard's place among Shards (0-based).
	Index  int `json:"index"`
	Shards int `json:"shards"`
	// Trace identifies the object read; every shard of a profile must agree.
	Trace traceInfo `json:"trace"`
	// Options are the profile's settings; every shard must agree.
	Options ShardOptions `json:"options"`
	// RowGroups are the row groups this shard read.
	RowGroups []int      `json:"row_groups"`
	Stats     shardStats `json:"stats"`
	// BytesRead, ProjectedBytes and NeededBytes are as in Result.
	BytesRead      int64 `json:"bytes_read"`
	ProjectedBytes int64 `json:"projected_bytes"`
	NeededBytes    int64 `json:"needed_bytes"`
	// WallSeconds is the shard's time from opening the object to its
	// result; CPUSeconds the CPU time (user and system) its process used
	// meanwhile (0 where not measured): what the scan cost, as opposed to
	// the cores a sandbox reserves.
	WallSeconds float64 `json:"wall_seconds"`
	CPUSeconds  float64 `json:"cpu_seconds"`
}

// ShardOptions are the Options that change a profile's content. This is
// the one declaration of them: a shard's command line (Args), the check
// that shards agree before they merge (Differences), a saved shard's reuse
// and the shard key all derive from these fields, so an option added here
// cannot be dropped on the way to a sandbox. Each field's flag tag is the
// `infercrane profile shard` flag that sets it (",always": written even
// when zero, because the flag's default is not).
type ShardOptions struct {
	All             bool   `json:"all,omitempty" flag:"all"`
	Sketch          bool   `json:"sketch,omitempty" flag:"sketch"`
	RowGroups       int    `json:"row_groups,omitempty" flag:"row-groups"`
	RowGroupIndices []int  `json:"row_group_indices,omitempty" flag:"row-group-indices"`
	RowsPerGroup    int    `json:"rows_per_group,omitempty" flag:"rows-per-group,always"`
	MaxContext      int    `json:"max_context,omitempty" flag:"max-context"`
	Name            string `json:"name,omitempty" flag:"name"`
	License         string `json:"license,omitempty" flag:"license"`
	Citation        string `json:"citation,omitempty" flag:"citation"`
	Quantiles       bool   `json:"quantiles,omitempty" flag:"quantiles"`
}

// ShardOptions returns the options of o that change a profile's content,
// in the form that selects the same rows: a full scan drops a row-group
// count or list and sketch (always on with it), an explicit list drops a
// count.
func (o Options) ShardOptions() ShardOptions {
	var s ShardOptions
	copyShardFields(reflect.ValueOf(&s).Elem(), reflect.ValueOf(o))
	switch {
	case s.All:
		s.Sketch, s.RowGroups, s.RowGroupIndices = false, 0, nil
	case len(s.RowGroupIndices) > 0:
		s.RowGroups = 0
	}
	return s
}

func (s ShardOptions) options() Options {
	var o Options
	copyShardFields(reflect.ValueOf(&o).Elem(), reflect.ValueOf(s))
	return o
}

// copyShardFields sets each field of dst that ShardOptions declares from
// the field of src with the same name (dst and src are Options or
// ShardOptions), so the list of options is ShardOptions alone.
func copyShardFields(dst, src reflect.Value) {
	t := reflect.TypeFor[ShardOptions]()
	for i := range t.NumField() {
		name := t.Field(i).Name
		dst.FieldByName(name).Set(src.FieldByName(name))
	}
}

// shardOption is one field of ShardOptions: its flag and its value.
type shardOption struct {
	flag   string
	always bool
	value  reflect.Value
}

func (s ShardOptions) fields() []shardOption {
	v := reflect.ValueOf(s)
	out := make([]shardOption, v.NumField())
	for i := range out {
		name, opt, _ := strings.Cut(v.Type().Field(i).Tag.Get("flag"), ",")
		out[i] = shardOption{flag: "--" + name, always: opt == "always", value: v.Field(i)}
	}
	return out
}

// args is the option's command-line form (none for a zero value the flag's
// default gives).
func (f shardOption) args() []string {
	v := f.value
	if v.IsZero() && !f.always {
		return nil
	}
	switch v.Kind() {
	case reflect.Bool:
		if !v.Bool() {
			return nil
		}
		return []string{f.flag}
	case reflect.Int:
		return []string{f.flag, strconv.FormatInt(v.Int(), 10)}
	case reflect.String:
		return []string{f.flag, v.String()}
	case reflect.Slice:
		s := make([]string, v.Len())
		for i := range s {
			s[i] = strconv.FormatInt(v.Index(i).Int(), 10)
		}
		return []string{f.flag, strings.Join(s, ",")}
	}
	panic("workload: ShardOptions field " + f.flag + " has no command-line form")
}

// describe says how the option was set, for an error.
func (f shardOption) describe() string {
	if a := f.args(); len(a) > 0 {
		return "with " + strings.Join(a, " ")
	}
	return "without " + f.flag
}

// Args is the options' `infercrane profile shard` command line: parsed
// back by that command, it gives the same ShardOptions.
func (s ShardOptions) Args() []string {
	var a []string
	for _, f := range s.fields() {
		a = append(a, f.args()...)
	}
	return a
}

// Differences names, for each option that differs between s and t, how
// each was set ("with --quantiles" and "without --quantiles"); none when
// they make the same profile.
func (s ShardOptions) Differences(t ShardOptions) [][2]string {
	var out [][2]string
	for i, a := range s.fields() {
		b := t.fields()[i]
		if a.value.Kind() == reflect.Slice && a.value.Len() == 0 && b.value.Len() == 0 {
			continue
		}
		if !reflect.DeepEqual(a.value.Interface(), b.value.Interface()) {
			out = append(out, [2]string{a.describe(), b.describe()})
		}
	}
	return out
}

// SketchState is a Sketch's exact content.
type SketchState struct {
	RelativeError float64 `json:"relative_error"`
	Count         int64   `json:"count"`
	Zeros         int64   `json:"zeros"`
	Offset        int     `json:"offset"`
	Bins          []int64 `json:"bins"`
	// Min and Max are the exact smallest and largest positive values,
	// MinCount and MaxCount how many values equal them.
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
	MinCount int64   `json:"min_count"`
	MaxCount int64   `json:"max_count"`
}

// State returns the sketch's exact content.
func (s *Sketch) State() SketchState {
	// Trim empty edges so equal sketches have equal states.
	lo, hi := 0, len(s.bins)
	for lo < hi && s.bins[lo] == 0 {
		lo++
	}
	for hi > lo && s.bins[hi-1] == 0 {
		hi--
	}
	return SketchState{RelativeError: s.alpha, Count: s.n, Zeros: s.zeros, Offset: s.offset + lo, Bins: slices.Clone(s.bins[lo:hi]),
		Min: s.min, Max: s.max, MinCount: s.minN, MaxCount: s.maxN}
}

// maxSketchIndex bounds the bucket indices a shard may carry: 1e-9 to
// 1e18 spans about -2,100..4,200 at 0.5%; anything far beyond is corrupt.
const maxSketchIndex = 100_000

// SketchFromState rebuilds a sketch, checking that the state is consistent.
func SketchFromState(st SketchState) (*Sketch, error) {
	if st.RelativeError != SketchRelativeError {
		return nil, fmt.Errorf("sketch relative error %v, want %v (shards from another version of InferCrane?)", st.RelativeError, SketchRelativeError)
	}
	if st.Offset < -maxSketchIndex || st.Offset > maxSketchIndex || len(st.Bins) > 2*maxSketchIndex {
		return nil, fmt.Errorf("sketch buckets %d..%d are outside any value a profile records", st.Offset, st.Offset+len(st.Bins))
	}
	sum := st.Zeros
	for _, c := range st.Bins {
		if c < 0 {
			return nil, errors.New("sketch has a negative bucket count")
		}
		sum += c
	}
	if st.Zeros < 0 || sum != st.Count {
		return nil, fmt.Errorf("sketch counts %d values but its buckets hold %d", st.Count, sum)
	}
	s := NewSketch(st.RelativeError)
	if err := checkEnds(s.m, st); err != nil {
		return nil, err
	}
	s.n, s.zeros, s.offset, s.bins = st.Count, st.Zeros, st.Offset, slices.Clone(st.Bins)
	s.min, s.max, s.minN, s.maxN = st.Min, st.Max, st.MinCount, st.MaxCount
	return s, nil
}

// checkEnds checks that a state's exact ends lie in its first and last
// buckets and count no more values than those buckets hold.
func checkEnds(m *sketchMapping, st SketchState) error {
	if st.Count == st.Zeros {
		if st.Min != 0 || st.Max != 0 || st.MinCount != 0 || st.MaxCount != 0 {
			return errors.New("sketch has ends but no positive values")
		}
		return nil
	}
	first, last := st.Bins[0], st.Bins[len(st.Bins)-1]
	switch {
	case !(st.Min >= sketchMinValue) || !(st.Max >= st.Min) || math.IsInf(st.Max, 0):
		return fmt.Errorf("sketch ends %v..%v are not a range of positive values", st.Min, st.Max)
	case m.index(st.Min) != st.Offset || m.index(st.Max) != st.Offset+len(st.Bins)-1:
		return fmt.Errorf("sketch ends %v..%v are not in its first and last buckets", st.Min, st.Max)
	case st.MinCount < 1 || st.MaxCount < 1 || st.MinCount > first || st.MaxCount > last || st.Min == st.Max && st.MinCount != st.MaxCount:
		return fmt.Errorf("sketch counts %d values at its minimum and %d at its maximum, outside its end buckets' %d and %d", st.MinCount, st.MaxCount, first, last)
	}
	return nil
}

// shardStats is groupStats in exact, serialisable form.
type shardStats struct {
	Rows        int64         `json:"rows"`
	Input       SketchState   `json:"input_tokens"`
	Output      SketchState   `json:"output_tokens"`
	Cached      SketchState   `json:"cached_tokens"`
	TTFT        SketchState   `json:"ttft_ms"`
	Duration    SketchState   `json:"duration_ms"`
	Ratio       SketchState   `json:"cache_hit_fraction"`
	PerSecond   SketchState   `json:"arrival_per_second"`
	PerMinute   SketchState   `json:"arrival_per_minute"`
	SecCount    int64         `json:"second_window_requests"`
	SecWindows  int64         `json:"second_windows"`
	MinCount    int64         `json:"minute_window_requests"`
	MinWindows  int64         `json:"minute_windows"`
	Gaps        int64         `json:"gaps"`
	GapSumUS    int64         `json:"gap_sum_us"`
	GapSumSqUS2 [2]uint64     `json:"gap_sum_sq_us2"` // high, low 64 bits
	Functions   []functionSum `json:"functions"`
	// Curve and CurveStart are the arrival curve's per-minute counts and
	// first minute (unix minutes).
	Curve      []int64 `json:"curve,omitempty"`
	CurveStart int64   `json:"curve_start,omitempty"`
}

type functionSum struct {
	Name     string `json:"name"`
	Requests int64  `json:"requests"`
	InN      int64  `json:"input_n"`
	InSum    int64  `json:"input_sum"`
	OutN     int64  `json:"output_n"`
	OutSum   int64  `json:"output_sum"`
}

func (g *groupStats) state() (shardStats, error) {
	sk := func(q quantileSink) (SketchState, error) {
		s, ok := q.(*Sketch)
		if !ok {
			return SketchState{}, errors.New("shards need sketch percentiles (all or sketch)")
		}
		return s.State(), nil
	}
	var st shardStats
	var err error
	for _, p := range []struct {
		dst *SketchState
		q   quantileSink
	}{{&st.Input, g.input}, {&st.Output, g.output}, {&st.Cached, g.cached}, {&st.TTFT, g.ttft}, {&st.Duration, g.duration},
		{&st.Ratio, g.ratio}, {&st.PerSecond, g.arrival.perSecond}, {&st.PerMinute, g.arrival.perMinute}} {
		if *p.dst, err = sk(p.q); err != nil {
			return st, err
		}
	}
	a := g.arrival
	st.Rows = g.rows
	st.SecCount, st.SecWindows, st.MinCount, st.MinWindows = a.secCount, a.secWindows, a.minCount, a.minWindows
	st.Gaps, st.GapSumUS, st.GapSumSqUS2 = a.gaps, a.gapSum, [2]uint64{a.gapSumSq.hi, a.gapSumSq.lo}
	st.Curve, st.CurveStart = a.curve, a.curveStart
	st.Functions = []functionSum{}
	for name, f := range g.funcs {
		st.Functions = append(st.Functions, functionSum{Name: name, Requests: f.requests, InN: f.inN, InSum: f.inSum, OutN: f.outN, OutSum: f.outSum})
	}
	sort.Slice(st.Functions, func(i, j int) bool { return st.Functions[i].Name < st.Functions[j].Name })
	return st, nil
}

func (st shardStats) groupStats() (*groupStats, error) {
	g := &groupStats{funcs: map[string]*funcAgg{}, arrival: &arrivalStats{}}
	for _, p := range []struct {
		name string
		dst  *quantileSink
		src  SketchState
	}{{"input_tokens", &g.input, st.Input}, {"output_tokens", &g.output, st.Output}, {"cached_tokens", &g.cached, st.Cached},
		{"ttft_ms", &g.ttft, st.TTFT}, {"duration_ms", &g.duration, st.Duration}, {"cache_hit_fraction", &g.ratio, st.Ratio},
		{"arrival_per_second", &g.arrival.perSecond, st.PerSecond}, {"arrival_per_minute", &g.arrival.perMinute, st.PerMinute}} {
		s, err := SketchFromState(p.src)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		*p.dst = s
	}
	g.rows = st.Rows
	a := g.arrival
	a.secCount, a.secWindows, a.minCount, a.minWindows = st.SecCount, st.SecWindows, st.MinCount, st.MinWindows
	a.gaps, a.gapSum, a.gapSumSq = st.Gaps, st.GapSumUS, uint128{st.GapSumSqUS2[0], st.GapSumSqUS2[1]}
	a.curve, a.curveStart = st.Curve, st.CurveStart
	for _, f := range st.Functions {
		if g.funcs[f.Name] != nil {
			return nil, fmt.Errorf("function %q is listed twice", f.Name)
		}
		g.funcs[f.Name] = &funcAgg{requests: f.Requests, inN: f.InN, inSum: f.InSum, outN: f.OutN, outSum: f.OutSum}
	}
	return g, nil
}

// MaxShards is the most shards a profile is split into.
const MaxShards = 10_000

// Partition splits the selected row groups into n contiguous parts whose
// sizes differ by at most one; part i is the row groups of shard i.
func Partition(groups []int, n int) [][]int {
	out := make([][]int, n)
	for i := range n {
		out[i] = groups[i*len(groups)/n : (i+1)*len(groups)/n]
	}
	return out
}

// ShardPlan is what a sharded profile will read, from the trace's footer.
type ShardPlan struct {
	// Trace is the object's source, size and identity.
	Source   string
	Identity string
	Size     int64
	// RowGroups is the selection; Parts its split over the shards, and
	// Rows the rows each part will inspect.
	RowGroups []int
	Parts     [][]int
	Rows      []int64
	// Bytes is each part's projected column data (an upper bound).
	Bytes []int64
}

// PlanShards reads the trace's footer and splits the selection of o into
// n shards, without reading any column data.
func PlanShards(ctx context.Context, o Options, n int) (*ShardPlan, error) {
	if n < 1 || n > MaxShards {
		return nil, fmt.Errorf("shards must be 1 to %d (got %d)", MaxShards, n)
	}
	if !o.All && !o.Sketch {
		return nil, errShardSketch
	}
	obj, err := Open(ctx, o.Source, o.Read)
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	t, err := openTrace(obj, decodeBatch)
	if err != nil {
		return nil, err
	}
	groups, _, err := selectGroups(o, t.pf.NumRowGroups())
	if err != nil {
		return nil, err
	}
	p := &ShardPlan{Source: o.Source, Identity: obj.Identity, Size: obj.Size, RowGroups: groups, Parts: Partition(groups, n)}
	for _, part := range p.Parts {
		var rows int64
		for _, g := range part {
			r := t.pf.MetaData().RowGroup(g).NumRows()
			if o.RowsPerGroup > 0 {
				r = min(r, int64(o.RowsPerGroup))
			}
			rows += r
		}
		p.Rows = append(p.Rows, rows)
		p.Bytes = append(p.Bytes, t.projectedBytes(part))
	}
	return p, nil
}

// BuildShard profiles shard index of shards of the selection o describes
// (see Partition) and returns its mergeable state.
func BuildShard(ctx context.Context, o Options, index, shards int) (*Shard, error) {
	if shards < 1 || shards > MaxShards || index < 0 || index >= shards {
		return nil, fmt.Errorf("shard %d of %d does not exist: shards are 0..N-1", index, shards)
	}
	if !o.All && !o.Sketch {
		return nil, errShardSketch
	}
	start, cpu := time.Now(), cputime.Used()
	obj, err := Open(ctx, o.Source, o.Read)
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	sc, err := scanSelection(ctx, obj, o, func(groups []int) []int { return Partition(groups, shards)[index] })
	if err != nil {
		return nil, err
	}
	st, err := sc.stats.state()
	if err != nil {
		return nil, err
	}
	t, part, plan := sc.t, sc.part, sc.plan
	return &Shard{
		SchemaVersion: ShardSchemaVersion, Index: index, Shards: shards, Trace: t.info(), Options: o.ShardOptions(),
		RowGroups: append([]int{}, part...), Stats: st, BytesRead: obj.BytesRead(), ProjectedBytes: t.projectedBytes(part),
		NeededBytes: plan.needed, WallSeconds: time.Since(start).Seconds(), CPUSeconds: (cputime.Used() - cpu).Seconds(),
	}, nil
}

// Matches reports whether the shard was made from the object with identity
// by a profile with options o (a saved shard can then be reused).
func (s *Shard) Matches(o Options, identity string) bool {
	return s.Trace.Source == o.Source && s.Trace.Identity == identity && len(s.Options.Differences(o.ShardOptions())) == 0
}

// ShardKey names a sharded profile of the object with identity by what it
// reads and how (a directory name for its saved shards).
func ShardKey(identity string, o Options, shards int) string {
	b, _ := json.Marshal(struct {
		Source, Identity string
		Options          ShardOptions
		Shards           int
	}{o.Source, identity, o.ShardOptions(), shards})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// EncodeShard writes a shard as one line of compact JSON.
func EncodeShard(s *Shard) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ParseShard reads a shard strictly: unknown fields, trailing data and
// inconsistent counts are errors.
func ParseShard(data []byte) (*Shard, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Shard
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("not a profile shard: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not a profile shard: trailing data after the JSON document")
	}
	if s.SchemaVersion != ShardSchemaVersion {
		return nil, fmt.Errorf("schema_version %q, want %q", s.SchemaVersion, ShardSchemaVersion)
	}
	if s.Shards < 1 || s.Shards > MaxShards || s.Index < 0 || s.Index >= s.Shards {
		return nil, fmt.Errorf("shard %d of %d does not exist (1 to %d shards)", s.Index, s.Shards, MaxShards)
	}
	if _, err := s.Stats.groupStats(); err != nil {
		return nil, fmt.Errorf("shard %d of %d: %w", s.Index, s.Shards, err)
	}
	return &s, nil
}

// Merge combines the shards of one sharded profile into the profile a
// single process makes of the same selection. Every shard must be there
// exactly once, made from the same object with the same options; the order
// they come in does not matter. now stamps generated_at (nil: time.Now).
func Merge(shards []*Shard, now func() time.Time) (*Result, error) {
	if len(shards) == 0 {
		return nil, errors.New("no shards to merge")
	}
	first := shards[0]
	byIndex := make([]*Shard, first.Shards)
	for _, s := range shards {
		switch {
		case s.Shards != first.Shards:
			return nil, fmt.Errorf("shard %d is one of %d shards, shard %d one of %d: they come from different runs", s.Index, s.Shards, first.Index, first.Shards)
		case !sameTrace(s.Trace, first.Trace):
			return nil, fmt.Errorf("shard %d read %s (%s), shard %d read %s (%s): the trace changed between shards or they are from different traces; profile again", s.Index, s.Trace.Source, s.Trace.Identity, first.Index, first.Trace.Source, first.Trace.Identity)
		case len(s.Options.Differences(first.Options)) > 0:
			var says []string
			for _, d := range s.Options.Differences(first.Options) {
				says = append(says, fmt.Sprintf("shard %d was made %s, shard %d %s", s.Index, d[0], first.Index, d[1]))
			}
			return nil, fmt.Errorf("%s: every shard of a profile needs the same options; make them again with the same flags", strings.Join(says, "; "))
		case byIndex[s.Index] != nil:
			return nil, fmt.Errorf("shard %d of %d is given twice", s.Index, s.Shards)
		}
		byIndex[s.Index] = s
	}
	var missing []int
	for i, s := range byIndex {
		if s == nil {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("shards %v of %d are missing; run them (profile shard --shard I/N) and merge all of them", missing, first.Shards)
	}
	o := first.Options.options()
	o.Now = now
	groups, method, err := selectGroups(o, first.Trace.RowGroups)
	if err != nil {
		return nil, err
	}
	parts := Partition(groups, first.Shards)
	merged := newGroupStats(func() quantileSink { return NewSketch(SketchRelativeError) })
	res := &Result{FileSize: first.Trace.Size, Identity: first.Trace.Identity}
	for i, s := range byIndex {
		if !slices.Equal(s.RowGroups, parts[i]) {
			return nil, fmt.Errorf("shard %d of %d read row groups %v, but its part of the selection is %v", i, s.Shards, s.RowGroups, parts[i])
		}
		st, err := s.Stats.groupStats()
		if err != nil {
			return nil, fmt.Errorf("shard %d of %d: %w", i, s.Shards, err)
		}
		merged.merge(st)
		res.BytesRead += s.BytesRead
		res.ProjectedBytes += s.ProjectedBytes
		res.NeededBytes += s.NeededBytes
	}
	doc, err := assemble(o, first.Trace, groups, method, merged)
	if err != nil {
		return nil, err
	}
	res.Document = doc
	return res, nil
}

func sameTrace(a, b traceInfo) bool {
	return a.Source == b.Source && a.URL == b.URL && a.Size == b.Size && a.Identity == b.Identity && a.Remote == b.Remote &&
		a.Rows == b.Rows && a.RowGroups == b.RowGroups && slices.Equal(a.Columns, b.Columns) && a.HasFunc == b.HasFunc
}
