package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The server-side latency histograms the load generator reads from a
// server's /metrics before and after the measured requests (vLLM's names;
// the simulated engine exports the same ones with the same buckets).
const (
	ServerTTFT    = "vllm:time_to_first_token_seconds"
	ServerITL     = "vllm:inter_token_latency_seconds"
	ServerTPOT    = "vllm:request_time_per_output_token_seconds"
	ServerLatency = "vllm:e2e_request_latency_seconds"
	// ServerITLLegacy is the name vLLM used for the inter-token histogram
	// before vllm:inter_token_latency_seconds; read when the new one is absent.
	ServerITLLegacy = "vllm:time_per_output_token_seconds"
	// ServerQueue is a request's time queued in the engine (vLLM V1: from
	// its arrival in the scheduler to its first schedule), ServerPrefill
	// from then to its first token.
	ServerQueue   = "vllm:request_queue_time_seconds"
	ServerPrefill = "vllm:request_prefill_time_seconds"
)

// serverHistograms are the histograms a ServerView keeps.
var serverHistograms = []string{ServerTTFT, ServerITL, ServerITLLegacy, ServerTPOT, ServerLatency, ServerQueue, ServerPrefill}

// vLLM's prefix-cache counters (tokens looked up and tokens served), read
// with the histograms so a run's view has their change too.
const (
	ServerPrefixQueries = "vllm:prefix_cache_queries_total"
	ServerPrefixHits    = "vllm:prefix_cache_hits_total"
)

// serverCounters are the counters a server view keeps.
var serverCounters = []string{ServerPrefixQueries, ServerPrefixHits}

// Histogram is one Prometheus histogram, summed over its label sets.
type Histogram struct {
	// Le are the finite bucket upper bounds (seconds), ascending; Counts the
	// cumulative number of observations at or below each.
	Le     []float64 `json:"le"`
	Counts []float64 `json:"counts"`
	// Count is the number of observations (the +Inf bucket) and Sum their total.
	Count float64 `json:"count"`
	Sum   float64 `json:"sum"`
}

// ParseHistograms reads Prometheus text exposition and returns the named
// histograms, each summed over its label sets (vLLM labels them by engine
// and model). Names that are absent are absent from the map. A named
// counter (a plain sample) is returned as a histogram without buckets
// whose Count is its value, so its change between scrapes is Sub's too.
func ParseHistograms(r io.Reader, names ...string) (map[string]*Histogram, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	type acc struct {
		le          map[float64]float64
		count, sum  float64
		seenBuckets bool
		counter     bool
	}
	accs := map[string]*acc{}
	get := func(n string) *acc {
		a := accs[n]
		if a == nil {
			a = &acc{le: map[float64]float64{}}
			accs[n] = a
		}
		return a
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		nameEnd := strings.IndexAny(line, "{ ")
		if nameEnd < 0 {
			continue
		}
		name, rest := line[:nameEnd], line[nameEnd:]
		var labels string
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				return nil, fmt.Errorf("metrics line %q has an unclosed label set", truncate(line, 120))
			}
			labels, rest = rest[1:end], rest[end+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		var base, kind string
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if strings.HasSuffix(name, suf) && want[strings.TrimSuffix(name, suf)] {
				base, kind = strings.TrimSuffix(name, suf), suf
				break
			}
		}
		if base == "" && want[name] {
			base, kind = name, "counter"
		}
		if base == "" {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: value %q is not a number", truncate(line, 120), fields[0])
		}
		a := get(base)
		switch kind {
		case "_sum":
			a.sum += v
		case "_count":
			a.count += v
		case "counter":
			a.count += v
			a.counter = true
		case "_bucket":
			le, ok := labelValue(labels, "le")
			if !ok {
				return nil, fmt.Errorf("metrics line %q: a bucket without an le label", truncate(line, 120))
			}
			if le == "+Inf" {
				continue // equals _count
			}
			bound, err := strconv.ParseFloat(le, 64)
			if err != nil || math.IsNaN(bound) || math.IsInf(bound, -1) {
				return nil, fmt.Errorf("metrics line %q: le %q is not a bucket bound", truncate(line, 120), le)
			}
			if math.IsInf(bound, 1) {
				continue // another spelling of +Inf
			}
			a.le[bound] += v
			a.seenBuckets = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := map[string]*Histogram{}
	for n, a := range accs {
		if !a.seenBuckets && !a.counter {
			continue
		}
		h := &Histogram{Count: a.count, Sum: a.sum}
		for le := range a.le {
			h.Le = append(h.Le, le)
		}
		sort.Float64s(h.Le)
		for _, le := range h.Le {
			h.Counts = append(h.Counts, a.le[le])
		}
		out[n] = h
	}
	return out, nil
}

// labelValue returns the value of label key in a Prometheus label set.
func labelValue(labels, key string) (string, bool) {
	for labels != "" {
		eq := strings.IndexByte(labels, '=')
		if eq < 0 || eq+1 >= len(labels) || labels[eq+1] != '"' {
			return "", false
		}
		k := strings.TrimSpace(labels[:eq])
		rest := labels[eq+2:]
		var val strings.Builder
		i := 0
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
			}
			val.WriteByte(rest[i])
		}
		if k == key {
			return val.String(), true
		}
		labels = strings.TrimLeft(rest[min(i+1, len(rest)):], ", ")
	}
	return "", false
}

// Sub returns h - before: the observations made between two scrapes. It
// fails when the buckets differ or a count went down (the server restarted).
func (h *Histogram) Sub(before *Histogram) (*Histogram, error) {
	if before == nil {
		return h, nil
	}
	if len(h.Le) != len(before.Le) {
		return nil, fmt.Errorf("the buckets changed between the scrapes")
	}
	d := &Histogram{Le: append([]float64(nil), h.Le...), Counts: make([]float64, len(h.Counts)),
		Count: h.Count - before.Count, Sum: h.Sum - before.Sum}
	for i := range h.Le {
		if h.Le[i] != before.Le[i] {
			return nil, fmt.Errorf("the buckets changed between the scrapes")
		}
		d.Counts[i] = h.Counts[i] - before.Counts[i]
		if d.Counts[i] < 0 {
			return nil, fmt.Errorf("a bucket count went down between the scrapes (the server restarted?)")
		}
	}
	if d.Count < 0 {
		return nil, fmt.Errorf("the observation count went down between the scrapes (the server restarted?)")
	}
	return d, nil
}

// Quantile estimates the q-quantile as Prometheus's histogram_quantile
// does: linear interpolation inside the bucket holding rank q*Count (the
// first bucket's lower bound is 0); a rank in the +Inf bucket gives the
// largest finite bound. Seconds; NaN without observations.
func (h *Histogram) Quantile(q float64) float64 {
	if h.Count <= 0 || len(h.Le) == 0 {
		return math.NaN()
	}
	rank := q * h.Count
	i := sort.Search(len(h.Counts), func(i int) bool { return h.Counts[i] >= rank })
	if i == len(h.Counts) {
		return h.Le[len(h.Le)-1]
	}
	lo, below := 0.0, 0.0
	if i > 0 {
		lo, below = h.Le[i-1], h.Counts[i-1]
	}
	in := h.Counts[i] - below
	if in <= 0 {
		return h.Le[i]
	}
	return lo + (h.Le[i]-lo)*(rank-below)/in
}

// LowerBound returns the lower bound of the bucket holding the observation
// a linearly interpolated q-quantile can reach from below: the one of rank
// floor((n-1)q)+1, numpy's lower neighbour (seconds; 0 for the first
// bucket, the largest finite bound for the +Inf bucket; NaN without
// observations).
func (h *Histogram) LowerBound(q float64) float64 {
	if h.Count <= 0 {
		return math.NaN()
	}
	rank := math.Min(math.Floor((h.Count-1)*q)+1, h.Count)
	i := sort.Search(len(h.Counts), func(i int) bool { return h.Counts[i] >= rank })
	switch {
	case i == 0:
		return 0
	case i == len(h.Counts):
		return h.Le[len(h.Le)-1]
	}
	return h.Le[i-1]
}

// Bound returns the upper bound of the bucket holding the observation a
// linearly interpolated q-quantile (numpy's default, which the load
// generator uses) can reach: the one of rank ceil((n-1)q)+1, so with few
// observations it is the upper neighbour of the interpolation (seconds;
// +Inf when it is in the +Inf bucket).
func (h *Histogram) Bound(q float64) float64 {
	if h.Count <= 0 {
		return math.NaN()
	}
	rank := math.Min(math.Ceil((h.Count-1)*q)+1, h.Count)
	i := sort.Search(len(h.Counts), func(i int) bool { return h.Counts[i] >= rank })
	if i == len(h.Counts) {
		return math.Inf(1)
	}
	return h.Le[i]
}

// ServerDist is the server's view of one metric over a run, in ms.
type ServerDist struct {
	// Metric is the histogram it comes from.
	Metric string `json:"metric"`
	Count  int    `json:"count"`
	// Mean is exact (sum / count); P50 and P95 are interpolated from the
	// buckets, so their resolution is the bucket width.
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
}

// ServerView is what the server's own latency histograms say about the
// measured requests of a run: the change of each histogram between a
// scrape of /metrics right before the measured requests (after warmup) and
// one right after, with the figures derived from it.
type ServerView struct {
	// Histograms are the deltas, by metric name.
	Histograms map[string]*Histogram `json:"histograms"`
	TTFTMs     *ServerDist           `json:"ttft_ms,omitempty"`
	ITLMs      *ServerDist           `json:"itl_ms,omitempty"`
	TPOTMs     *ServerDist           `json:"tpot_ms,omitempty"`
	LatencyMs  *ServerDist           `json:"latency_ms,omitempty"`
	// QueueMs and PrefillMs are the parts of the TTFT the engine
	// measures: queued until its first schedule, and from then to the
	// first token (ServerQueue, ServerPrefill).
	QueueMs   *ServerDist `json:"queue_ms,omitempty"`
	PrefillMs *ServerDist `json:"prefill_ms,omitempty"`
	// PrefixCache is the server's own count of prompt tokens looked up in
	// and served from its prefix cache over the measured requests, when it
	// exports vLLM's prefix-cache counters.
	PrefixCache *ServerPrefixCache `json:"prefix_cache,omitempty"`
}

// ServerPrefixCache is a run's change in vLLM's prefix-cache counters.
type ServerPrefixCache struct {
	QueriedTokens float64 `json:"queried_tokens"`
	HitTokens     float64 `json:"hit_tokens"`
}

// NewServerView derives the figures of a view from histogram deltas.
func NewServerView(deltas map[string]*Histogram) *ServerView {
	v := &ServerView{Histograms: deltas}
	dist := func(names ...string) *ServerDist {
		for _, n := range names {
			h := deltas[n]
			if h == nil || h.Count <= 0 || len(h.Le) == 0 {
				continue
			}
			d := &ServerDist{Metric: n, Count: int(h.Count), Mean: h.Sum / h.Count * 1e3,
				P50: h.Quantile(0.5) * 1e3, P95: h.Quantile(0.95) * 1e3}
			if !finite(d.Mean) || !finite(d.P50) || !finite(d.P95) {
				continue // a server reporting NaN or Inf sums describes nothing usable
			}
			return d
		}
		return nil
	}
	v.TTFTMs = dist(ServerTTFT)
	v.ITLMs = dist(ServerITL, ServerITLLegacy)
	v.TPOTMs = dist(ServerTPOT)
	v.LatencyMs = dist(ServerLatency)
	v.QueueMs, v.PrefillMs = dist(ServerQueue), dist(ServerPrefill)
	if q, h := deltas[ServerPrefixQueries], deltas[ServerPrefixHits]; q != nil && h != nil {
		v.PrefixCache = &ServerPrefixCache{QueriedTokens: q.Count, HitTokens: h.Count}
	}
	return v
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// scrapeHistograms reads the server histograms from base/metrics; nil
// (and no error) when the server has no /metrics.
func scrapeHistograms(ctx context.Context, hc *http.Client, base, apiKey string) (map[string]*Histogram, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil, nil
	}
	return ParseHistograms(io.LimitReader(resp.Body, 16<<20), append(slices.Clip(serverHistograms), serverCounters...)...)
}

// serverDelta scrapes again after the measured requests and returns the
// view of what changed since before. vLLM records a request's latencies
// when its output is processed, which may trail the client's last read by
// a moment, so it rescrapes (up to about a second) until the server has
// finished at least finished requests.
func serverDelta(ctx context.Context, hc *http.Client, base, apiKey string, before map[string]*Histogram, finished int) (*ServerView, error) {
	var after map[string]*Histogram
	var err error
	for try := 0; ; try++ {
		after, err = scrapeHistograms(ctx, hc, base, apiKey)
		if err != nil || after == nil {
			return nil, err
		}
		done := 0.0
		if h, b := after[ServerLatency], before[ServerLatency]; h != nil {
			done = h.Count
			if b != nil {
				done -= b.Count
			}
		}
		if int(done) >= finished || try >= 10 || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	deltas := map[string]*Histogram{}
	for n, h := range after {
		d, err := h.Sub(before[n])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		deltas[n] = d
	}
	return NewServerView(deltas), nil
}

// Margin is how far a client figure may sit from the server's own, above
// or below, before a run is flagged: the larger of FloorMs and the server's
// own spread of that metric (ServerSpreadMs: the range of its mean over the
// lane's runs, how much the server's own record moves from one run to the
// next). A difference smaller than the server's own spread cannot change
// what a comparison of runs concludes, and one larger than it is the client,
// the network or a proxy adding time (or, below, losing it). A quantile is
// held to the bounds of the server bucket that holds it, widened by the
// same margin, so the buckets' resolution never raises a flag by itself.
type Margin struct {
	FloorMs float64 `json:"floor_ms"`
	// ServerSpreadMs is by metric (ttft, tpot, itl, latency); absent for a
	// metric the server recorded in fewer than two runs, whose spread is
	// not known (the floor applies alone).
	ServerSpreadMs map[string]float64 `json:"server_spread_ms,omitempty"`
}

// Ms is the margin for metric.
func (m Margin) Ms(metric string) float64 {
	return math.Max(m.FloorMs, m.ServerSpreadMs[metric])
}

// MarginFloorMs is the least margin: what the client's own HTTP read and
// the loopback cost on a busy 2-core host, about 1 ms, doubled. A planted
// delay of 5 ms on a steady server is above it.
const MarginFloorMs = 2.0

// DefaultMargin is the margin of a single run, whose server's spread is not
// known: the floor alone.
var DefaultMargin = Margin{FloorMs: MarginFloorMs}

// LaneMargin derives the margin of a lane's runs from their server views
// (nil entries, runs without one, are skipped): the floor, and per metric
// the range of the server's own mean over the runs that recorded it.
func LaneMargin(views []*ServerView) Margin {
	m := Margin{FloorMs: MarginFloorMs}
	for _, metric := range ReconciledMetrics {
		var lo, hi float64
		n := 0
		for _, v := range views {
			d := v.dist(metric)
			if d == nil {
				continue
			}
			if n == 0 || d.Mean < lo {
				lo = d.Mean
			}
			if n == 0 || d.Mean > hi {
				hi = d.Mean
			}
			n++
		}
		if n >= 2 {
			if m.ServerSpreadMs == nil {
				m.ServerSpreadMs = map[string]float64{}
			}
			m.ServerSpreadMs[metric] = hi - lo
		}
	}
	return m
}

// ReconciledMetrics are the metrics Reconcile compares, in order.
var ReconciledMetrics = []string{"ttft", "tpot", "itl", "latency"}

// dist returns the view's figures of metric (nil when absent or v is nil).
func (v *ServerView) dist(metric string) *ServerDist {
	if v == nil {
		return nil
	}
	switch metric {
	case "ttft":
		return v.TTFTMs
	case "tpot":
		return v.TPOTMs
	case "itl":
		return v.ITLMs
	case "latency":
		return v.LatencyMs
	}
	return nil
}

// Check compares one client figure with the server's.
type Check struct {
	// Metric is ttft, itl, tpot or latency; Stat is mean, p50 or p95.
	Metric string `json:"metric"`
	Stat   string `json:"stat"`
	// ClientMs is the load generator's figure; ServerMs the server's (the
	// exact mean, or the quantile interpolated from its buckets).
	ClientMs float64 `json:"client_ms"`
	ServerMs float64 `json:"server_ms"`
	// LowMs and LimitMs are the range the client figure may lie in: the
	// server's mean, or for a quantile the bounds of the server bucket that
	// holds it, widened by the margin on both sides. LimitMs is absent when
	// the server's quantile lies beyond its largest bucket.
	LowMs   float64  `json:"low_ms"`
	LimitMs *float64 `json:"limit_ms,omitempty"`
	// Outside is true when ClientMs is below LowMs or above LimitMs.
	Outside bool `json:"outside"`
}

// Reconciliation sets a run's client figures beside its server's.
type Reconciliation struct {
	Margin Margin `json:"margin"`
	// Comparable is false when the server's histograms cannot describe the
	// same requests (Reason says why); no check is made then.
	Comparable bool    `json:"comparable"`
	Reason     string  `json:"reason,omitempty"`
	Checks     []Check `json:"checks"`
	// Flagged names every check whose client figure lies outside its
	// range: above, client-side, network or proxy time is in the figures;
	// below, the client misses time the server counts.
	Flagged []string `json:"flagged"`
}

// Reconcile compares a run's summary with its server view under margin m.
// A run is comparable when the server finished at least the run's
// succeeded requests and no more than all of them (other traffic on the
// server would mix into its histograms).
func Reconcile(s *Summary, v *ServerView, m Margin) *Reconciliation {
	if v == nil {
		return nil
	}
	rc := &Reconciliation{Margin: m, Checks: []Check{}, Flagged: []string{}}
	switch {
	case v.LatencyMs == nil && v.TTFTMs == nil:
		rc.Reason = "the server's histograms recorded no request during the run"
		return rc
	case v.LatencyMs != nil && (v.LatencyMs.Count < s.Succeeded || v.LatencyMs.Count > s.Requests):
		rc.Reason = fmt.Sprintf("the server finished %d requests during the run, the client measured %d (%d succeeded): other traffic or a restart, so the histograms describe other requests",
			v.LatencyMs.Count, s.Requests, s.Succeeded)
		return rc
	}
	rc.Comparable = true
	add := func(metric string, client Dist, sd *ServerDist) {
		if sd == nil || client.Count == 0 {
			return
		}
		h := v.Histograms[sd.Metric]
		if h == nil {
			return // a view without its histograms (not one the load generator wrote)
		}
		margin := m.Ms(metric)
		for _, st := range []struct {
			stat         string
			client, sv   float64
			lower, upper float64
		}{
			{"mean", client.Mean, sd.Mean, sd.Mean, sd.Mean},
			{"p50", client.P50, sd.P50, h.LowerBound(0.5) * 1e3, h.Bound(0.5) * 1e3},
			{"p95", client.P95, sd.P95, h.LowerBound(0.95) * 1e3, h.Bound(0.95) * 1e3},
		} {
			c := Check{Metric: metric, Stat: st.stat, ClientMs: st.client, ServerMs: st.sv, LowMs: math.Max(0, st.lower-margin)}
			c.Outside = c.ClientMs < c.LowMs
			if !math.IsInf(st.upper, 1) {
				limit := st.upper + margin
				c.LimitMs = &limit
				c.Outside = c.Outside || c.ClientMs > limit
			}
			switch {
			case c.Outside && c.ClientMs < c.LowMs:
				rc.Flagged = append(rc.Flagged, fmt.Sprintf("%s %s: client %.1f ms is below %s's %.1f ms by more than the margin of %.1f ms (low %.1f ms): the client misses time the server counts",
					metric, st.stat, c.ClientMs, sd.Metric, c.ServerMs, margin, c.LowMs))
			case c.Outside:
				rc.Flagged = append(rc.Flagged, fmt.Sprintf("%s %s: client %.1f ms exceeds %s's %.1f ms by more than the margin of %.1f ms (limit %.1f ms)",
					metric, st.stat, c.ClientMs, sd.Metric, c.ServerMs, margin, *c.LimitMs))
			}
			rc.Checks = append(rc.Checks, c)
		}
	}
	add("ttft", s.TTFTMs, v.TTFTMs)
	add("tpot", s.TPOTMs, v.TPOTMs)
	add("itl", s.ITLMs, v.ITLMs)
	add("latency", s.LatencyMs, v.LatencyMs)
	return rc
}
