package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Problem is one rule a document breaks, located by a JSON path such as
// "profiles[1].concurrency".
type Problem struct {
	Path    string
	Message string
}

func (p Problem) String() string { return p.Path + ": " + p.Message }

// ValidationError lists every problem found in a document.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return "invalid workload profile: " + strings.Join(parts, "; ")
}

// maxShapeTokens bounds the token counts of a shape.
const maxShapeTokens = 2_000_000

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Decode parses a profile document strictly: unknown fields, a second JSON
// value or trailing data are errors. It does not apply the rules; call
// Validate (or Parse, which does both).
func Decode(data []byte) (Document, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var doc Document
	if err := dec.Decode(&doc); err != nil {
		return Document{}, fmt.Errorf("decode workload profile: %w (the file must be one %s JSON object with only the schema's fields)", err, SchemaVersion)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Document{}, errors.New("decode workload profile: trailing data after the JSON object; remove everything after the closing brace")
	}
	return doc, nil
}

// Parse decodes and validates a document, returning it with its computed
// digest (which equals doc.Digest when the document carries one).
func Parse(data []byte) (Document, string, error) {
	doc, err := Decode(data)
	if err != nil {
		return Document{}, "", err
	}
	digest, err := Digest(doc)
	if err != nil {
		return Document{}, "", err
	}
	if probs := Validate(doc); len(probs) > 0 {
		return doc, digest, &ValidationError{Problems: probs}
	}
	return doc, digest, nil
}

// Validate applies every rule of the schema and returns the problems found
// (none for a valid document). A digest the document carries must equal the
// computed one.
func Validate(doc Document) []Problem {
	var v validator
	v.check(doc.SchemaVersion == SchemaVersion, "schema_version", fmt.Sprintf("must be %q", SchemaVersion))
	v.check(doc.EvidenceClass == EvidenceClass, "evidence_class", fmt.Sprintf("must be %q", EvidenceClass))
	if _, err := time.Parse(time.RFC3339, doc.GeneratedAt); err != nil {
		v.add("generated_at", "must be an RFC 3339 timestamp such as 2026-09-20T07:18:56Z")
	}
	v.source(doc.Source)
	v.sampling(doc.Sampling)
	d := doc.Distributions
	v.distribution("distributions.input_tokens", d.InputTokens, math.Inf(1))
	v.distribution("distributions.output_tokens", d.OutputTokens, math.Inf(1))
	v.distribution("distributions.cached_tokens", d.CachedTokens, math.Inf(1))
	v.distribution("distributions.ttft_ms", d.TTFTMs, math.Inf(1))
	v.distribution("distributions.duration_ms", d.DurationMs, math.Inf(1))
	v.distribution("distributions.cache_hit_fraction", d.CacheHitFraction, 1) // min(1, ct/it)
	v.check(len(doc.Profiles) > 0, "profiles", "at least one benchmark shape is required")
	seen := map[string]int{}
	for i, s := range doc.Profiles {
		path := fmt.Sprintf("profiles[%d]", i)
		v.shape(path, s)
		key := strings.ToLower(s.Name)
		if j, dup := seen[key]; dup && key != "" {
			v.add(path+".name", fmt.Sprintf("%q repeats profiles[%d].name (names are compared case-insensitively); rename one", s.Name, j))
		} else {
			seen[key] = i
		}
	}
	v.check(strings.TrimSpace(doc.MethodologyBoundary) != "", "methodology_boundary", "is required: say what the profile does not represent")
	if doc.Traffic != nil {
		v.traffic(*doc.Traffic)
	}
	if doc.Digest != "" {
		if !digestPattern.MatchString(doc.Digest) {
			v.add("digest", "must be \"sha256:\" followed by 64 lowercase hex digits")
		} else if got, err := Digest(doc); err != nil {
			v.add("digest", err.Error())
		} else if got != doc.Digest {
			v.add("digest", fmt.Sprintf("the document says %s but its content hashes to %s; the file was edited after it was sealed (re-run `infercrane profile trace`, or remove the digest to accept the content)", doc.Digest, got))
		}
	}
	return v.problems
}

type validator struct{ problems []Problem }

func (v *validator) add(path, msg string) { v.problems = append(v.problems, Problem{path, msg}) }

func (v *validator) check(ok bool, path, msg string) {
	if !ok {
		v.add(path, msg)
	}
}

func (v *validator) source(s Source) {
	v.check(strings.TrimSpace(s.Name) != "", "source.name", "is required")
	u, err := url.Parse(s.URL)
	okURL := err == nil && u.Scheme != "" && (u.Host != "" || u.Opaque != "" || u.Path != "")
	switch {
	case !okURL:
		v.add("source.url", "must be an absolute URL (https://..., s3://bucket/key or file:...)")
	case u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "s3" && u.Scheme != "file":
		v.add("source.url", fmt.Sprintf("scheme %q is not one of https, http, s3, file", u.Scheme))
	}
	v.check(strings.TrimSpace(s.License) != "", "source.license", "is required (e.g. CC-BY-4.0, or \"proprietary\")")
	v.check(s.TraceRows >= 1, "source.trace_rows", "must be at least 1")
	v.check(s.TraceBytes >= 0, "source.trace_bytes", "must not be negative")
}

func (v *validator) sampling(s Sampling) {
	v.check(strings.TrimSpace(s.Method) != "", "sampling.method", "is required")
	v.check(len(s.Columns) > 0, "sampling.columns", "must name the columns read")
	v.check(len(s.RowGroups) > 0, "sampling.row_groups", "must list the row groups read")
	prev := -1
	for i, g := range s.RowGroups {
		if g < 0 || g >= s.TotalRowGroups {
			v.add(fmt.Sprintf("sampling.row_groups[%d]", i), fmt.Sprintf("%d is outside 0..total_row_groups-1 (%d)", g, s.TotalRowGroups-1))
		} else if g <= prev {
			v.add(fmt.Sprintf("sampling.row_groups[%d]", i), "row groups must be strictly increasing")
		}
		prev = g
	}
	v.check(s.TotalRowGroups >= len(s.RowGroups) && s.TotalRowGroups >= 1, "sampling.total_row_groups", "must be at least the number of row groups read")
	v.check(s.RowsInspected >= 1, "sampling.rows_inspected", "must be at least 1")
	e := s.QuantileRelativeError
	v.check(!math.IsNaN(e) && !math.IsInf(e, 0) && e >= 0 && e < 1, "sampling.quantile_relative_error", "must be in [0, 1)")
}

func finiteNonNeg(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) && x >= 0 }

// distribution checks one distribution whose values lie in [0, most]
// (1 for a fraction, +Inf for counts and durations).
func (v *validator) distribution(path string, d Distribution, most float64) {
	v.check(strings.TrimSpace(d.Unit) != "", path+".unit", "is required (tokens, milliseconds, ratio)")
	v.check(d.Samples >= 1, path+".samples", "must be at least 1")
	ps := []struct {
		name string
		x    float64
	}{{"p50", d.Percentiles.P50}, {"p90", d.Percentiles.P90}, {"p95", d.Percentiles.P95}, {"p99", d.Percentiles.P99}}
	for i, p := range ps {
		if !finiteNonNeg(p.x) {
			v.add(path+".percentiles."+p.name, "must be a finite, non-negative number")
		} else if p.x > most {
			v.add(path+".percentiles."+p.name, fmt.Sprintf("%v is above %v: a fraction is between 0 and 1", p.x, most))
		} else if i > 0 && p.x < ps[i-1].x {
			v.add(path+".percentiles."+p.name, fmt.Sprintf("%v is below %s (%v): percentiles must not decrease", p.x, ps[i-1].name, ps[i-1].x))
		}
	}
	pct := map[float64]float64{0.5: d.Percentiles.P50, 0.9: d.Percentiles.P90, 0.95: d.Percentiles.P95, 0.99: d.Percentiles.P99}
	for i, q := range d.Quantiles {
		at := fmt.Sprintf("%s.quantiles[%d]", path, i)
		switch {
		case !(q.Q > 0 && q.Q < 1):
			v.add(at+".q", fmt.Sprintf("%v must be strictly between 0 and 1", q.Q))
		case i > 0 && q.Q <= d.Quantiles[i-1].Q:
			v.add(at+".q", fmt.Sprintf("%v is not above the quantile before it (%v): quantiles must be in increasing q", q.Q, d.Quantiles[i-1].Q))
		case !finiteNonNeg(q.V):
			v.add(at+".v", "must be a finite, non-negative number")
		case q.V > most:
			v.add(at+".v", fmt.Sprintf("%v is above %v: a fraction is between 0 and 1", q.V, most))
		case i > 0 && q.V < d.Quantiles[i-1].V:
			v.add(at+".v", fmt.Sprintf("%v is below the quantile before it (%v): quantiles must not decrease", q.V, d.Quantiles[i-1].V))
		default:
			if p, ok := pct[q.Q]; ok && p != q.V {
				v.add(at+".v", fmt.Sprintf("%v disagrees with the percentile at %v (%v): both are the nearest-rank value", q.V, q.Q, p))
			}
		}
	}
}

func (v *validator) shape(path string, s Shape) {
	v.check(strings.TrimSpace(s.Name) != "", path+".name", "is required")
	v.check(strings.TrimSpace(s.Description) != "", path+".description", "is required")
	v.check(strings.TrimSpace(s.Objective) != "", path+".objective", "is required")
	v.check(s.Concurrency >= 1, path+".concurrency", "must be at least 1")
	v.check(s.Requests >= s.Concurrency && s.Requests >= 1, path+".requests", fmt.Sprintf("must be at least concurrency (%d)", s.Concurrency))
	v.check(s.InputTokens >= 1 && s.InputTokens <= maxShapeTokens, path+".input_tokens", fmt.Sprintf("must be between 1 and %d", maxShapeTokens))
	v.check(s.OutputTokens >= 1 && s.OutputTokens <= maxShapeTokens, path+".output_tokens", fmt.Sprintf("must be between 1 and %d", maxShapeTokens))
	switch s.ArrivalPattern {
	case "", "constant", "poisson", "gamma":
	default:
		v.add(path+".arrival_pattern", fmt.Sprintf("%q is not one of constant, poisson, gamma", s.ArrivalPattern))
	}
	if !finiteNonNeg(s.RequestRate) {
		v.add(path+".request_rate", "must be a finite, positive number")
	} else if (s.ArrivalPattern == "") != (s.RequestRate == 0) {
		v.add(path, "arrival_pattern and a positive request_rate go together: set both (open loop) or neither (closed loop)")
	}
}

func (v *validator) rates(path string, r RateWindows) {
	for _, x := range []float64{r.Mean, r.P50, r.P99} {
		if !finiteNonNeg(x) {
			v.add(path, "rates must be finite and non-negative")
			return
		}
	}
	v.check(r.Windows >= 0, path+".windows", "must not be negative")
	v.check(r.P50 <= r.P99, path+".p99", "must not be below p50")
}

func (v *validator) traffic(t Traffic) {
	v.rates("traffic.arrival_per_second", t.PerSecond)
	v.rates("traffic.arrival_per_minute", t.PerMinute)
	v.check(finiteNonNeg(t.InterarrivalCV), "traffic.interarrival_cv", "must be finite and non-negative")
	v.check(t.InterarrivalSamples >= 0, "traffic.interarrival_samples", "must not be negative")
	if c := t.ArrivalCurve; c != nil {
		v.check(c.WindowSeconds > 0, "traffic.arrival_curve.window_seconds", "must be positive")
		v.check(len(c.Rates) > 0 && len(c.Rates) <= maxCurve, "traffic.arrival_curve.rates", fmt.Sprintf("must hold 1 to %d rates", maxCurve))
		_, err := time.Parse(time.RFC3339, c.Start)
		v.check(err == nil, "traffic.arrival_curve.start", "must be an RFC 3339 time")
		for i, r := range c.Rates {
			v.check(finiteNonNeg(r), fmt.Sprintf("traffic.arrival_curve.rates[%d]", i), "must be finite and non-negative")
		}
	}
	seen := map[string]bool{}
	for i, f := range t.Functions {
		path := fmt.Sprintf("traffic.functions[%d]", i)
		v.check(f.Name != "" && !seen[f.Name], path+".name", "must be non-empty and unique")
		seen[f.Name] = true
		v.check(f.Requests >= 0, path+".requests", "must not be negative")
		v.check(finiteNonNeg(f.Share) && f.Share <= 1, path+".share", "must be in [0, 1]")
		v.check(finiteNonNeg(f.InputTokensMean) && finiteNonNeg(f.OutputTokensMean), path, "token means must be finite and non-negative")
	}
}
