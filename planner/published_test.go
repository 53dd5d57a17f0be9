package planner

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/infercrane/infercrane/lang/shape"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/lang/engine"
	"github.com/infercrane/infercrane/planner/perf"
)

// publishedPoint is one published vLLM measurement
// (perf/testdata/published/vllm.json; its "about" says what the file is).
type publishedPoint struct {
	ID     string `json:"id"`
	Set    string `json:"set"`
	Source struct {
		URL   string `json:"url"`
		Title string `json:"title"`
		// Note says what the point's figures are, how they were read or
		// computed, and what was assumed where the source is silent.
		Note string `json:"note"`
		// Seeds are the per-seed result files a point's figures average.
		Seeds []string `json:"seeds"`
	} `json:"source"`
	// Tool is the load generator that measured the point, and
	// ModelAsPublished the source's own name of the model where it is not
	// its Hugging Face id. Approximate marks figures read off a chart or
	// a fitted line; the *Assumed flags mark the conditions the source
	// leaves out, which the note states as assumed (ServerArgsAssumed:
	// the server args among ServerArgs that are).
	Tool              string   `json:"tool"`
	ModelAsPublished  string   `json:"model_as_published"`
	Approximate       bool     `json:"approximate"`
	GPUAssumed        bool     `json:"gpu_assumed"`
	VersionAssumed    bool     `json:"version_assumed"`
	EndpointAssumed   bool     `json:"endpoint_assumed"`
	RequestsAssumed   bool     `json:"requests_assumed"`
	ServerArgsAssumed []string `json:"server_args_assumed"`
	SizesAssumed      bool     `json:"sizes_assumed"`
	Model             string   `json:"model"`
	GPU               string   `json:"gpu"`
	GPUs              int      `json:"gpus"`
	Engine            string   `json:"engine"`
	Version           string   `json:"version"`
	ServerArgs        []string `json:"server_args"`
	Endpoint          string   `json:"endpoint"`
	InputTokens       int      `json:"input_tokens"`
	OutputTokens      int      `json:"output_tokens"`
	Sizes             [][2]int `json:"sizes"`
	// SizesLike names a point whose requests' sizes stand in for this
	// point's, which its source gives only as totals: they are repeated
	// to Requests and scaled to InputTokens and OutputTokens, the
	// point's mean lengths (likeSizes).
	SizesLike string `json:"sizes_like"`
	// CachedTokens is each request's prompt prefix that an earlier run
	// on the same server left in vLLM's prefix cache (whole blocks): the
	// source's prompts repeat across its points (the point's note says
	// how).
	CachedTokens int                `json:"cached_tokens"`
	Concurrency  int                `json:"concurrency"`
	RequestRate  float64            `json:"request_rate"`
	Arrival      string             `json:"arrival"`
	Requests     int                `json:"requests"`
	Measured     map[string]float64 `json:"measured"`
	// WeakRegime, when set, says why the point lies in a regime the
	// model is known to miss (docs/performance-model.md): the goals are
	// asserted on the points without it.
	WeakRegime string `json:"weak_regime"`
}

// planPublished plans a published point cold from the catalog: the
// model's architecture, the GPU's figures and the catalog's assumptions,
// the engine version's defaults under the point's server args, and the
// load the benchmark sent (its requests' own sizes when published). It
// returns the predicted figures by the dataset's metric names, and the
// virtual run's preemptions as "preemptions".
func planPublished(pt publishedPoint) (map[string]float64, error) {
	arch, hw, rs, maxLen, err := publishedServer(pt)
	if err != nil {
		return nil, err
	}
	hw.Assume.OmitAttention = *noAttentionFlag
	lane, err := perf.NewLane(arch, hw, rs.Engine(), maxLen)
	if err != nil {
		return nil, err
	}
	in := LaneInputs{Settings: shape.Settings{InputTokens: pt.InputTokens, OutputTokens: pt.OutputTokens, Concurrency: pt.Concurrency,
		RequestRate: pt.RequestRate, Arrival: pt.Arrival, Requests: pt.Requests}, Seed: 1}
	ld := (&Lane{Inputs: in}).PerfLoad()
	ld.CachedTokens = pt.CachedTokens
	for _, z := range pt.Sizes {
		ld.Sizes = append(ld.Sizes, perf.RequestSize{Input: z[0], Output: z[1]})
	}
	st, err := lane.Run(ld)
	if err != nil {
		return nil, err
	}
	return map[string]float64{
		"output_token_throughput": st.OutputTokenThroughput,
		"ttft_mean_ms":            st.TTFT.Mean, "ttft_p50_ms": st.TTFT.P50,
		"tpot_mean_ms": st.TPOT.Mean, "tpot_p50_ms": st.TPOT.P50, "itl_p50_ms": st.ITL.P50,
		"preemptions": float64(st.Preemptions),
	}, nil
}

// publishedServer is a published point's server as the catalog plans it
// cold: the model's architecture, the GPUs and assumptions, the engine
// version's settings and the max model len.
func publishedServer(pt publishedPoint) (perf.ModelArch, perf.Hardware, perf.RuntimeSettings, int, error) {
	arch, ok := perf.LookupModel(pt.Model)
	if !ok {
		return perf.ModelArch{}, perf.Hardware{}, perf.RuntimeSettings{}, 0, fmt.Errorf("model %s is not in the catalog", pt.Model)
	}
	g, ok := perf.LookupGPU(pt.GPU)
	if !ok {
		return perf.ModelArch{}, perf.Hardware{}, perf.RuntimeSettings{}, 0, fmt.Errorf("GPU %s is not in the catalog", pt.GPU)
	}
	maxLen := maxModelLenArg(pt.ServerArgs)
	if maxLen == 0 {
		maxLen = arch.MaxPositions
	}
	// The engine version's settings, front end and precision as the
	// planner resolves them (the checkpoint's own quantization: DeepSeek's
	// FP8 blocks; gpt-oss chat through the completions front end).
	rt := engine.Runtime{RuntimeEngine: pt.Engine, RuntimeVersion: pt.Version, RuntimeArgs: pt.ServerArgs}
	hw, rs, err := perf.CatalogServer(pt.Model, g, max(pt.GPUs, 1), rt, pt.Endpoint, maxLen)
	return arch, hw, rs, maxLen, err
}

// TestWeakRegimeMissesAsPublished holds the misses the weak regimes
// state (perf.WeakRegimeOf) to the published measurements: every point of
// a regime misses within the regime's spans, per metric family, and every
// regime has points. -v prints the spans the points need.
func TestWeakRegimeMissesAsPublished(t *testing.T) {
	type span = [2]float64
	need := map[string]map[string]span{}
	for _, pt := range readPublished(t) {
		arch, hw, _, _, err := publishedServer(pt)
		if err != nil {
			t.Fatalf("%s: %v", pt.ID, err)
		}
		r, ok := perf.WeakRegimeOf(arch, hw)
		if !ok {
			continue
		}
		got, err := planPublished(pt)
		if err != nil {
			t.Fatalf("%s: %v", pt.ID, err)
		}
		stated := map[string]span{"throughput": r.Misses.Throughput, "tpot": r.Misses.TPOT, "ttft": r.Misses.TTFT}
		if need[r.Name] == nil {
			need[r.Name] = map[string]span{}
		}
		for family, metric := range metricFamily(pt.Measured) {
			miss := got[metric]/pt.Measured[metric] - 1
			s, seen := need[r.Name][family]
			if !seen {
				s = span{miss, miss}
			}
			need[r.Name][family] = span{math.Min(s[0], miss), math.Max(s[1], miss)}
			if st := stated[family]; miss < st[0]-1e-9 || miss > st[1]+1e-9 {
				t.Errorf("%s (%s): %s estimated %.4g against %.4g measured, %+.0f%%, outside the stated %+.0f%% to %+.0f%%",
					pt.ID, r.Name, metric, got[metric], pt.Measured[metric], 100*miss, 100*st[0], 100*st[1])
			}
		}
	}
	for _, name := range perf.WeakRegimeNames() {
		n := need[name]
		if n == nil {
			t.Errorf("weak regime %q has no published point", name)
			continue
		}
		t.Logf("%s: output tokens/s %+.1f%% to %+.1f%%, TPOT %+.1f%% to %+.1f%%, TTFT %+.1f%% to %+.1f%%", name,
			100*n["throughput"][0], 100*n["throughput"][1], 100*n["tpot"][0], 100*n["tpot"][1], 100*n["ttft"][0], 100*n["ttft"][1])
	}
}

// maxModelLenArg is --max-model-len in args (0 if absent).
func maxModelLenArg(args []string) int {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--max-model-len" {
			var n int
			fmt.Sscanf(args[i+1], "%d", &n)
			return n
		}
	}
	return 0
}

// metricFamily groups a dataset metric: TTFT (p50, or the mean where a
// source gives no median), TPOT (likewise; the median inter-token gap
// where a source gives neither) and output throughput.
func metricFamily(m map[string]float64) map[string]string {
	out := map[string]string{}
	if _, ok := m["ttft_p50_ms"]; ok {
		out["ttft"] = "ttft_p50_ms"
	} else if _, ok := m["ttft_mean_ms"]; ok {
		out["ttft"] = "ttft_mean_ms"
	}
	if _, ok := m["tpot_p50_ms"]; ok {
		out["tpot"] = "tpot_p50_ms"
	} else if _, ok := m["tpot_mean_ms"]; ok {
		out["tpot"] = "tpot_mean_ms"
	} else if _, ok := m["itl_p50_ms"]; ok {
		out["tpot"] = "itl_p50_ms"
	}
	if _, ok := m["output_token_throughput"]; ok {
		out["throughput"] = "output_token_throughput"
	}
	return out
}

// publishedMAPE is the model's mean absolute percentage error per metric
// family over the points of one set, with a line per point.
func publishedMAPE(t *testing.T, points []publishedPoint, set string, withWeak bool) (map[string]float64, []string) {
	t.Helper()
	sums, counts := map[string]float64{}, map[string]int{}
	var lines []string
	for _, pt := range points {
		if pt.Set != set || (!withWeak && pt.WeakRegime != "") {
			continue
		}
		pred, err := planPublished(pt)
		if err != nil {
			t.Errorf("%s does not plan: %v", pt.ID, err)
			continue
		}
		fams := metricFamily(pt.Measured)
		keys := make([]string, 0, len(fams))
		for f := range fams {
			keys = append(keys, f)
		}
		sort.Strings(keys)
		var parts []string
		for _, f := range keys {
			name := fams[f]
			meas, got := pt.Measured[name], pred[name]
			rel := got/meas - 1
			sums[f] += math.Abs(rel)
			counts[f]++
			parts = append(parts, fmt.Sprintf("%s %.4g vs %.4g (%+.0f%%)", name, got, meas, 100*rel))
		}
		mark := ""
		if n := pred["preemptions"]; n > 0 {
			mark = fmt.Sprintf(" (%.0f preemptions)", n)
		}
		if pt.WeakRegime != "" {
			mark += " [weak regime]"
		}
		lines = append(lines, fmt.Sprintf("  %-48s %s%s", pt.ID, strings.Join(parts, ", "), mark))
	}
	out := map[string]float64{}
	for f, s := range sums {
		out[f] = s / float64(counts[f])
	}
	return out, lines
}

func readPublished(t *testing.T) []publishedPoint {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("perf", "testdata", "published", "vllm.json"))
	if err != nil {
		t.Fatal(err)
	}
	points, err := decodePublished(b)
	if err != nil {
		t.Fatalf("perf/testdata/published/vllm.json: %v", err)
	}
	return points
}

// decodePublished reads the published measurements strictly: a field the
// schema does not have (a misspelt cached_tokens would plan the point
// cold) is an error, and so is a point without a source, a set or
// figures, a sizes_like that names no point with sizes, or a cached
// prefix that is not whole blocks of the prompt or that its note does
// not explain.
func decodePublished(b []byte) ([]publishedPoint, error) {
	var doc struct {
		Schema   string           `json:"schema"`
		About    string           `json:"about"`
		FrontEnd json.RawMessage  `json:"front_end"`
		Points   []publishedPoint `json:"points"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	byID := map[string]publishedPoint{}
	for _, p := range doc.Points {
		if p.Source.URL == "" || (p.Set != "fit" && p.Set != "heldout") || len(p.Measured) == 0 {
			return nil, fmt.Errorf("point %s: a source URL, a set (fit or heldout) and measured figures are required", p.ID)
		}
		if p.CachedTokens != 0 && (p.CachedTokens < 0 || p.CachedTokens%cacheBlockTokens != 0 || p.CachedTokens >= p.InputTokens ||
			!strings.Contains(p.Source.Note, "Prefix cache:")) {
			return nil, fmt.Errorf("point %s: cached_tokens %d must be whole %d-token blocks short of the prompt's %d tokens, explained in the note (\"Prefix cache: ...\")",
				p.ID, p.CachedTokens, cacheBlockTokens, p.InputTokens)
		}
		byID[p.ID] = p
	}
	for i, p := range doc.Points {
		if p.SizesLike == "" {
			continue
		}
		like, ok := byID[p.SizesLike]
		if !ok || len(like.Sizes) == 0 || len(p.Sizes) > 0 || p.Requests <= 0 {
			return nil, fmt.Errorf("point %s: sizes_like %q must name a point with sizes, for a point with requests and without sizes of its own", p.ID, p.SizesLike)
		}
		doc.Points[i].Sizes = likeSizes(like.Sizes, p.Requests, p.InputTokens, p.OutputTokens)
	}
	return doc.Points, nil
}

// cacheBlockTokens is vLLM's default KV-cache block on a CUDA GPU, the
// unit its prefix cache serves.
const cacheBlockTokens = 16

// TestPublishedDatasetIsStrict: decodePublished refuses what would
// silently change how a point is planned.
func TestPublishedDatasetIsStrict(t *testing.T) {
	const ok = `{"id": "p", "set": "fit", "source": {"url": "u", "note": "Prefix cache: an earlier run."}, "input_tokens": 2048, "measured": {"ttft_mean_ms": 1}`
	if _, err := decodePublished([]byte(`{"points": [` + ok + `, "cached_tokens": 1008}]}`)); err != nil {
		t.Fatalf("a valid point is refused: %v", err)
	}
	for name, c := range map[string]struct{ doc, want string }{
		"misspelt field":      {`{"points": [` + ok + `, "cached_token": 1008}]}`, `unknown field "cached_token"`},
		"part of a block":     {`{"points": [` + ok + `, "cached_tokens": 1000}]}`, "whole 16-token blocks"},
		"the whole prompt":    {`{"points": [` + ok + `, "cached_tokens": 2048}]}`, "short of the prompt's 2048 tokens"},
		"unexplained":         {`{"points": [` + strings.Replace(ok, "Prefix cache: an earlier run.", "", 1) + `, "cached_tokens": 16}]}`, "explained in the note"},
		"no set":              {`{"points": [{"id": "p", "source": {"url": "u"}, "measured": {"ttft_mean_ms": 1}}]}`, "a set (fit or heldout)"},
		"unknown top field":   {`{"pointz": []}`, `unknown field "pointz"`},
		"sizes_like dangling": {`{"points": [` + ok + `, "sizes_like": "q", "requests": 3}]}`, `sizes_like "q" must name a point with sizes`},
	} {
		if _, err := decodePublished([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, c.want)
		}
	}
}

// likeSizes is n requests' sizes drawn from sizes: repeated in order and
// scaled so their mean input and output lengths are in and out (every
// length at least one token).
func likeSizes(sizes [][2]int, n, in, out int) [][2]int {
	var sumIn, sumOut float64
	for _, z := range sizes {
		sumIn += float64(z[0])
		sumOut += float64(z[1])
	}
	fi, fo := float64(in)*float64(len(sizes))/sumIn, float64(out)*float64(len(sizes))/sumOut
	res := make([][2]int, n)
	for i := range res {
		z := sizes[i%len(sizes)]
		res[i] = [2]int{max(int(math.Round(float64(z[0])*fi)), 1), max(int(math.Round(float64(z[1])*fo)), 1)}
	}
	return res
}

// noAttentionFlag measures the model without attention's own FLOPs
// (perf.Assumptions.OmitAttention), as it was before issue 27 counted
// them: the limits below are the model's with them.
var noAttentionFlag = flag.Bool("perf.noattention", false, "leave attention's FLOPs out in TestPublishedMeasurements (a measurement of the model before they were counted; the limits do not apply)")

// TestPublishedMeasurements plans every published vLLM measurement cold
// from the catalog and reports the mean absolute percentage error per
// metric on the fit set and on the held-out set (never used to choose a
// parameter). The goal is output tokens/s and TPOT within 15% MAPE and
// TTFT within 25% on each set's points outside the weak regimes
// (publishedGoals); each whole set, weak regimes included, is held to
// what the model reaches (publishedLimits).
//
//	go test ./planner -run TestPublishedMeasurements -v
//	go test ./planner -run TestPublishedMeasurements -v -args -perf.noattention
func TestPublishedMeasurements(t *testing.T) {
	points := readPublished(t)
	if *noAttentionFlag {
		t.Log("attention's own FLOPs left out (-perf.noattention): the limits do not apply")
	}
	count := map[string]int{}
	for _, p := range points {
		count[p.Set]++
	}
	for _, set := range []string{"fit", "heldout"} {
		// The sets only grow: a point dropped to meet a goal fails here.
		if count[set] < publishedMinPoints[set] {
			t.Errorf("%s set: %d points, fewer than the %d it had", set, count[set], publishedMinPoints[set])
		}
		mape, lines := publishedMAPE(t, points, set, true)
		t.Logf("%s set, all points: MAPE throughput %.2f%%, TPOT %.2f%%, TTFT %.2f%%\n%s", set, 100*mape["throughput"], 100*mape["tpot"], 100*mape["ttft"], strings.Join(lines, "\n"))
		for f, limit := range publishedLimits[set] {
			if mape[f] > limit && !*noAttentionFlag {
				t.Errorf("%s set, all points: %s MAPE %.1f%% is over %.0f%% (what the model reached)", set, f, 100*mape[f], 100*limit)
			}
		}
		goal, _ := publishedMAPE(t, points, set, false)
		t.Logf("%s set without the weak regimes: MAPE throughput %.2f%%, TPOT %.2f%%, TTFT %.2f%%", set, 100*goal["throughput"], 100*goal["tpot"], 100*goal["ttft"])
		for f, limit := range publishedGoals {
			if goal[f] > limit {
				t.Errorf("%s set without the weak regimes: %s MAPE %.1f%% misses the goal, %.0f%%", set, f, 100*goal[f], 100*limit)
			}
		}
	}
}

// TestPublishedAccuracyAsDocumented: the errors the README and the
// performance model's accuracy table state are the ones the model
// reaches today (rounded to a tenth of a percent), so a change of the
// model that moves them fails until the documents say so.
func TestPublishedAccuracyAsDocumented(t *testing.T) {
	if *noAttentionFlag {
		t.Skip("-perf.noattention measures another model")
	}
	points := readPublished(t)
	pct := func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(string(b)), " ")
	}
	readme, model := read(filepath.Join("..", "README.md")), read(filepath.Join("..", "docs", "performance-model.md"))
	rows := map[string]string{"fit": "fit", "heldout": "held-out"}
	for _, set := range []string{"fit", "heldout"} {
		for _, withWeak := range []bool{true, false} {
			m, lines := publishedMAPE(t, points, set, withWeak)
			n := len(lines) // a line per point planned
			which := "all points"
			if !withWeak {
				which = "without the weak regime"
			}
			row := fmt.Sprintf("| %s, %s | %d | %s | %s | %s |", rows[set], which, n, pct(m["throughput"]), pct(m["tpot"]), pct(m["ttft"]))
			if !strings.Contains(model, row) {
				t.Errorf("docs/performance-model.md's accuracy table lacks the row %q", row)
			}
			if set == "heldout" {
				lines := []string{
					fmt.Sprintf("miss %d held-out published vLLM measurements", n),
					fmt.Sprintf("by %s (output tokens/s), %s (TPOT) and %s (TTFT p50)", pct(m["throughput"]), pct(m["tpot"]), pct(m["ttft"])),
				}
				if !withWeak {
					lines = []string{
						fmt.Sprintf("and the %d of them outside the weak regimes", n),
						fmt.Sprintf("by %s, %s and %s", pct(m["throughput"]), pct(m["tpot"]), pct(m["ttft"])),
					}
				}
				for _, line := range lines {
					if !strings.Contains(readme, line) {
						t.Errorf("README.md does not say %q", line)
					}
				}
			}
		}
	}
}

// TestEveryPublishedPointPlans: issue 27 asks that every published point
// plan cold from the catalog. GPUStack's eight Qwen3-32B bursts did not
// (the KV cache of an "80 GB" part counted as 80e9 bytes held fewer tokens
// than vLLM's default max model len, where vLLM served them).
func TestEveryPublishedPointPlans(t *testing.T) {
	for _, pt := range readPublished(t) {
		if _, err := planPublished(pt); err != nil {
			t.Errorf("%s does not plan: %v", pt.ID, err)
		}
	}
}

// publishedGoals are the accuracy goals: output tokens/s and TPOT within
// 15% MAPE, TTFT within 25%, asserted on each set's points outside the
// weak regimes (docs/performance-model.md, "Accuracy against published
// measurements").
var publishedGoals = map[string]float64{"throughput": 0.15, "tpot": 0.15, "ttft": 0.25}

// publishedLimits hold each whole set, weak regimes included, to what the
// model reaches there, rounded up (a change that makes it worse fails).
// Measured (go test ./planner -run TestPublishedMeasurements -v), 11 fit
// and 15 held-out points: fit throughput 17.41%, TPOT 16.66%, TTFT
// 20.64%; held-out 13.33%, 17.59%, 20.04%. Without the weak regimes (7
// and 11 points): fit 6.34%, 6.49%, 20.93%; held-out 8.29%, 14.36%,
// 18.74%. (Before vLLM V1's chat front end batched a burst,
// perf.FrontEnd: fit 37.44%, 21.92%, 29.18%; held-out 16.87%, 17.58%,
// 22.89%; without the weak regimes held-out 8.27%, 14.36%, 18.74%.)
//
// With each GPU's memory the device's total as vLLM sees it (the
// catalog's memory figures, H100 79.22 GiB where it was 80e9 bytes): fit
// 17.77%, 16.20%, 21.02%; held-out 13.23%, 16.94%, 19.43%; without the
// weak regimes unchanged.
//
// With GPUStack's eight Qwen3-32B bursts (15 fit and 19 held-out points,
// all eight in the weak regime): fit 23.66%, 74.78%, 39.10%; held-out
// 26.86%, 37.85%, 40.35%; without the weak regimes unchanged. The A100's
// 32,000/100 and 4,000/200 bursts preempt themselves in the model (TPOT
// +863% and +382%): docs/performance-model.md.
//
// With vLLM V1's preemption (a step that preempts admits nobody; a
// preempted request's cached blocks are hit again, so it recomputes only
// what was evicted: Scheduler): fit 23.23%, 17.11%, 19.80%; held-out
// 30.79%, 20.10%, 23.68%; without the weak regimes unchanged. The
// held-out throughput limit rose from 27% to 31%: GPUStack's Qwen3-14B
// 32,000-token burst on the H100 (-12% before) was right only through
// 420 full recomputes, and is +136% without them, the H100 gap that
// docs/performance-model.md describes.
//
// With attention's own FLOPs counted (perf.Assumptions.OmitAttention
// false, the catalog's default since): fit 16.26%, 14.83%, 17.20%;
// held-out 23.62%, 19.04%, 22.01%; without the weak regimes fit 6.36%,
// 6.50%, 20.75% and held-out 8.20%, 14.33%, 19.17%.
//
// With GPUStack's vLLM 0.11 baseline of Qwen3-8B on an H100 at 1, 2 and 8
// chat requests in flight (c=1 and c=8 fit, c=2 held out beside the c=4
// point; 17 fit and 20 held-out points) the model missed their TTFT p50 by
// -75%, -73% and -73%: fit 14.84%, 14.29%, 23.87%. With the 0.8-0.11
// chat front end's latency (perf.FrontEnd, v1ChatLatencyMs): fit 15.10%,
// 14.30%, 15.74%; held-out 22.92%, 18.67%, 18.36%; without the weak
// regimes fit 6.38%, 7.35%, 17.19% and held-out 8.39%, 14.10%, 13.13%.
//
// With the efficiency of a layer's matrix multiplies falling with its
// size (perf.ModelArch.GEMMEfficiency, fitted to Vidur's kernel profiles,
// not to these points: every point checks it): fit 14.59%, 14.12%,
// 15.01%; held-out 22.17%, 18.22%, 17.77%; without the weak regimes fit
// 6.47%, 7.74%, 16.10% and held-out 8.15%, 13.54%, 12.47%.
//
// With the V1 engine's step overhead following its CUDA graph mode on a
// CUDA GPU (perf.cudaGraphStepMs: 2.5 ms up to 0.10, 1.4 ms from 0.11,
// fitted to the fit set's single-stream TPOTs): fit 13.09%, 12.35%,
// 14.32%; held-out 20.53%, 17.00%, 17.34%; without the weak regimes fit
// 3.22%, 4.28%, 14.73% and held-out 4.96%, 11.35%, 11.63%.
//
// With a step the sum of its kernels (the weights' matrix multiplies and
// the attention kernel each at its own roofline, plus the memory-bound
// norms, rotary embeddings, activations and residual adds,
// perf.ModelArch.ElementwiseBytesPerToken) and the size law refitted to
// the profiles' matrix multiplies alone (none of it fitted to these
// points): fit 11.21%, 11.36%, 13.96%; held-out 18.38%, 16.00%, 17.48%;
// without the weak regimes fit 3.40%, 5.03%, 14.08% and held-out 4.32%,
// 9.89%, 12.79%.
//
// With the H100's and H200's prefill MFU 0.50 (the A100's stays 0.65;
// docs/performance-model.md, "The H100's prefill MFU"): fit 8.32%,
// 8.65%, 14.45%; held-out 12.34%, 12.88%, 17.64%; without the weak
// regimes fit 3.72%, 6.19%, 15.64% and held-out 3.39%, 8.13%, 17.84%.
// Every set then met the goals over all its points, weak regimes
// included (TestPublishedMeasurements asserted it until the Qwen3-235B
// points below).
//
// With NCCL's measured times for all-reduces over vLLM's 8 MiB custom
// all-reduce limit (perf.ncclAllReduce): held-out TTFT 17.64% -> 17.32%
// over all points and 17.84% -> 17.29% without the weak regimes; the rest
// unchanged.
//
// With GPUStack's eight Qwen3-235B-A22B bursts over 8 H100s and 8 A100s
// (21 fit and 24 held-out points, all eight in the weak regime; added
// after the model's error on them had been seen once): fit 16.72%,
// 11.64%, 21.47%; held-out 16.14%, 14.00%, 18.98%; without the weak
// regimes unchanged. The sets over all points miss the throughput goal
// again, by the A100 bursts (+46% to +100%): the test no longer asserts
// the goals over all points (it did from the H100's MFU scan until these
// points came).
//
// With the routed experts' multiplies and reads added up (the fused MoE
// kernel, perf.fusedMoESeconds, fitted to the kernel's own timings, not
// to these points): fit 13.65%, 9.73%, 20.58%; held-out 14.41%, 12.30%,
// 18.79%; without the weak regimes unchanged (no mixture of experts
// there). Over all points both sets met the throughput and TPOT goals
// again.
//
// With GPUStack's eight GLM-4.5-Air bursts over 4 A100s and 4 H100s (25
// fit and 28 held-out points, all eight in the weak regime; the H100
// ones without TTFT): fit 16.61%, 12.72%, 21.55%; held-out 17.57%,
// 14.03%, 19.85%; without the weak regimes unchanged. The A100 bursts
// (+47% to +95% on throughput) miss the throughput goal over all points.
//
// With GPUStack's eight bursts on 8 x H200 (vLLM 0.11, TP 8; GLM-4.6 in
// BF16 and DeepSeek-R1-0528 in its FP8 checkpoint; 29 fit and 32
// held-out points, all eight in the weak regime; added before their
// errors were seen), planned at the checkpoint's precision as the
// planner plans them (planPublished had planned every point at 16-bit,
// and DeepSeek-R1-0528's 671B parameters did not fit): fit 19.46%,
// 15.63%, 23.07%; held-out 20.26%, 15.94%, 20.00%; without the weak
// regimes unchanged. Their throughput comes out +30% to +66%, as
// GPUStack's H100 bursts of dense models.
//
// With GPUStack's twelve gpt-oss bursts (20b and 120b, one A100 or H100
// each, vLLM 0.11 and 0.10.2; the 4,000/200 bursts left out by a rule
// set before their errors were seen, as they generated 33-48% short; 35
// fit and 38 held-out points): fit 29.36%, 17.95%, 44.22%; held-out
// 25.24%, 27.18%, 46.50%; without the weak regimes unchanged. Their
// 128/4 bursts' TTFT is +157% to +803%: vLLM serves gpt-oss chat
// through harmony, without the chat template whose preparation the
// 0.8-0.11 chat front end charges (docs/performance-model.md).
//
// With gpt-oss chat through the completions front end (perf.FrontEndAPI,
// from vLLM's serving code, not fitted): fit 27.81%, 21.20%, 25.57%;
// held-out 25.70%, 27.08%, 23.69% (the 128/4 bursts' TTFT -37% to +60%,
// their TPOT further under: the model's completions front end streams
// each request's few tokens at once).
//
// With LambdaLabsML's twelve bursts of Llama 3 70B and Mixtral 8x7B
// (vLLM 0.6, ShareGPT, 10-320 prompts on 2-8 H100s and, for Llama 3 70B,
// 2 A100s; all held out by a rule stated before any was planned; 35 fit
// and 50 held-out points): held-out 23.25%, 23.67%, 28.10%; without the
// weak regimes 4.35%, 7.75%, 13.76% (19 points; the seven Llama 3 70B
// bursts within 15% on every figure). The five Mixtral bursts are in the
// weak regime: a fresh vLLM 0.6 server stalled 1.7-1.9 s at a time
// compiling the fused MoE kernel's variants (their TTFT -67% to -96%).
//
// With LambdaLabsML's ten bursts of the FP8 checkpoints of Llama 3.1 70B
// Instruct and Llama 3.1 8B (the same rule; 1-4 H100s, 1-2 A100s; 60
// held-out points): held-out 21.00%, 21.47%, 25.75%; without the weak
// regimes 6.37%, 8.69%, 14.09% (29 points). On the H100 they come out
// fast, more so over more GPUs (four H100s +20% and +29% on throughput,
// TPOT -20% and -27%; one -2% to +6%); on the A100s (FP8 weights through
// Marlin) within -4% to +9%.
//
// With LambdaLabsML's ten bursts of Llama 3 8B and Mistral 7B over two
// and four H100s (the same rule; 70 held-out points): held-out 19.38%,
// 20.15%, 22.83%; without the weak regimes 7.27%, 9.59%, 12.01% (39
// points). At 10 and 80 prompts within -13% to +11% on every figure; the
// 320-prompt bursts over four H100s +19% and +20% on throughput, TPOT
// -32% and -34% (on one H100 -11% and -12%): the model's large decode
// batches over several GPUs are short of something the step's size does
// not give.
//
// With GPUStack's forty-four ShareGPT bursts of 1,000 chat requests (6
// fit, 38 held out; sizes_like), the V1 engine's 65 us a sequence a step
// (vLLM 0.8-0.11), weight-only multiplies at 0.7 of the roof, gpt-oss's
// MXFP4 layout and the windowed readmission: fit 19.80%, 18.96%, 20.77%
// (41 points), held-out 19.13%, 22.02%, 25.40% (109); without the weak
// regimes 3.49%, 6.67%, 14.82% (11) and 7.41%, 9.60%, 12.11% (46). With
// pipeline parallelism modelled and gpt-oss-120b's -pp 2 burst (held
// out): held-out 19.00%, 21.82%, 25.62% (110). On
// the 105 points before them: fit 21.36%, 19.48%, 23.02%, held-out
// 15.78%, 17.90%, 22.19%.
//
// With async scheduling modelled (perf.AsyncOverlapShare, fitted to
// GPUStack's A100 gpt-oss-20b run with --async-scheduling, which moved
// from the held-out set to the fit set for it): fit 19.64%, 19.14%,
// 20.38% (42 points), held-out 18.54%, 20.92%, 25.67% (109); without the
// weak regimes unchanged (every async run is gpt-oss's).
//
// With the routed experts' served factor (perf.Hardware.ServedExpertFactor,
// chosen on the fit set; the eager steps' launches in place): fit 15.91%,
// 16.44%, 18.45%, held-out 12.99%, 13.55%, 24.03%, which meets the goals
// over all points too; without the weak regimes 3.87%, 7.58%, 13.48% and
// 6.66%, 8.59%, 11.74%.
//
// With gpt-oss's attention in vLLM's Triton kernel on an A100
// (perf.ModelArch.AttentionKernelFactor, from a timing outside the sets):
// fit 12.13%, 14.74%, 16.86%, held-out 13.00%, 13.60%, 24.04%. With the
// vLLM blog's ten vLLM 0.19.1 points held out: held-out 12.78%, 13.60%,
// 23.88% (119); without the weak regimes 3.87%, 7.58%, 13.48% and 6.59%,
// 8.95%, 11.97% (53). With Tenstorrent's sweep's cached prefixes
// (cached_tokens) and its three Qwen3-0.6B points held out: fit 12.13%,
// 14.74%, 16.91%, held-out 13.02%, 13.78%, 23.75% (122); without the weak
// regimes 3.86%, 7.58%, 13.67% and 7.40%, 9.59%, 12.40% (56). With
// Qwen3-0.6B's points in the weak regime of models under 1B parameters:
// without the weak regimes 4.20%, 6.39%, 7.79% (10) and 6.69%, 8.25%,
// 11.47% (52); over all points unchanged.
var publishedLimits = map[string]map[string]float64{
	"fit":     {"throughput": 0.13, "tpot": 0.15, "ttft": 0.17},
	"heldout": {"throughput": 0.14, "tpot": 0.14, "ttft": 0.25},
}

// publishedMinPoints are the sizes of the sets: they only grow, but for
// a point moved from one to the other with its reason in its note (the
// A100 gpt-oss-20b async run, from held-out to fit: 41 and 110 before).
var publishedMinPoints = map[string]int{"fit": 42, "heldout": 122}

// TestAsyncSchedulingAgainstPublishedPairs holds the async scheduling
// model (perf.AsyncOverlapShare) to GPUStack's runs of one server with and
// without --async-scheduling (vLLM 0.11, 1,000 ShareGPT chat requests at
// once): the ratio of the estimated TPOT p50s, async over synchronous,
// against the measured one. The A100 gpt-oss-20b pair set the share (0.874
// measured); the gpt-oss-120b A100 pair is held out and must agree within
// 0.03; the H100 pair, where the model's gain is far larger than the
// measured one (docs/performance-model.md, "Async scheduling"), is only
// logged. A pipeline-parallel run is not async in 0.11: its estimate must
// not move with the flag.
func TestAsyncSchedulingAgainstPublishedPairs(t *testing.T) {
	byID := map[string]publishedPoint{}
	for _, p := range readPublished(t) {
		byID[p.ID] = p
	}
	tpot := func(id string, dropAsync bool) (est, measured float64) {
		t.Helper()
		pt, ok := byID[id]
		if !ok {
			t.Fatalf("no published point %s", id)
		}
		if dropAsync {
			pt.ServerArgs = slices.DeleteFunc(slices.Clone(pt.ServerArgs), func(a string) bool { return a == "--async-scheduling" })
		}
		pred, err := planPublished(pt)
		if err != nil {
			t.Fatal(err)
		}
		return pred["tpot_p50_ms"], pt.Measured["tpot_p50_ms"]
	}
	for _, c := range []struct {
		sync, async string
		tol         float64 // 0: logged only
	}{
		{"gpustack-a100-gpt-oss-20b-sharegpt1000", "gpustack-a100-gpt-oss-20b-async-sharegpt1000", 0.03},
		{"gpustack-a100-gpt-oss-120b-sharegpt1000", "gpustack-a100-gpt-oss-120b-async-sharegpt1000", 0.03},
		{"gpustack-h100-gpt-oss-20b-sharegpt1000", "gpustack-h100-gpt-oss-20b-async-sharegpt1000", 0},
	} {
		es, ms := tpot(c.sync, false)
		ea, ma := tpot(c.async, false)
		got, want := ea/es, ma/ms
		t.Logf("%s: TPOT p50 async/sync estimated %.3f (%.2f/%.2f ms), measured %.3f (%.2f/%.2f ms)", c.async, got, ea, es, want, ma, ms)
		if c.tol > 0 && math.Abs(got-want) > c.tol {
			t.Errorf("%s: estimated async/sync TPOT %.3f, measured %.3f: more than %.2f apart", c.async, got, want, c.tol)
		}
		if got >= 1 {
			t.Errorf("%s: async scheduling does not shorten the estimated TPOT (%.3f)", c.async, got)
		}
	}
	with, _ := tpot("gpustack-h100-gpt-oss-120b-async-pp2-sharegpt1000", false)
	without, _ := tpot("gpustack-h100-gpt-oss-120b-async-pp2-sharegpt1000", true)
	if with != without {
		t.Errorf("pipeline-parallel run on vLLM 0.11: TPOT %.3f ms with --async-scheduling, %.3f without; want no change", with, without)
	}
}
