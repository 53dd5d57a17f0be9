package workload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/state"
	"github.com/zclconf/go-cty/cty"
)

// Resolve returns a spec trace's value. With profile (and digest) it reads
// the pinned profile, validates it and checks the digest; with only source
// and sample it profiles the trace, caching the result under
// SPECDIR/.infercrane/profiles/ keyed by the object's identity (ETag or
// mtime and size) and the sampling options.
func Resolve(ctx context.Context, t *lang.Trace, specDir string, ro ReadOptions) (cty.Value, hcl.Diagnostics) {
	if t.Profile != "" {
		return resolvePinned(t, specDir)
	}
	doc, err := ProfileCached(ctx, t, specDir, ro)
	if err != nil {
		return cty.DynamicVal, hcl.Diagnostics{{
			Severity: hcl.DiagError, Summary: "Cannot profile trace " + t.Name,
			Detail:  err.Error() + "\nOr pin a profile: run `infercrane profile trace` and set profile and digest in the trace block.",
			Subject: attrRange(t, "source").Ptr(),
		}}
	}
	return Resolved(t, doc), nil
}

// Profiler profiles an unpinned trace (source and sample, no profile
// file): in this process, or fanned out on the executor the trace names.
// Its value records the profile's digest in t.ProfileDigest (Resolved).
type Profiler func(ctx context.Context, t *lang.Trace, specDir string) (cty.Value, hcl.Diagnostics)

// ResolveTraces is the planner's trace step, run between a static
// lang.Load of the spec and a second Load with the result as
// lang.Options.Traces. It resolves cfg's traces in name order: a pinned
// trace (profile and digest) from its profile file, a local read that
// validate does too, and an unpinned one with profile, which reads the
// trace's source (a local file, S3, a Modal fan-out). A nil profile leaves
// unpinned traces out, not profiled yet, so nothing leaves the machine.
func ResolveTraces(ctx context.Context, cfg *lang.Config, profile Profiler) (map[string]lang.ResolvedTrace, hcl.Diagnostics) {
	names := make([]string, 0, len(cfg.Traces))
	for n := range cfg.Traces {
		names = append(names, n)
	}
	sort.Strings(names)
	out := map[string]lang.ResolvedTrace{}
	var diags hcl.Diagnostics
	for _, n := range names {
		t := cfg.Traces[n]
		var v cty.Value
		var d hcl.Diagnostics
		switch {
		case t == nil:
			continue
		case t.Profile != "":
			v, d = resolvePinned(t, cfg.Dir)
		case profile != nil:
			v, d = profile(ctx, t, cfg.Dir)
		default:
			continue
		}
		diags = append(diags, d...)
		if !d.HasErrors() && v != cty.NilVal && v.IsWhollyKnown() {
			out[n] = lang.ResolvedTrace{Value: v, ProfileDigest: t.ProfileDigest}
		}
	}
	return out, diags
}

// LoadSpec loads a spec in two decodes around ResolveTraces: load
// (lang.Load or lang.LoadSource of one spec) with opts as a static decode,
// the trace step, and load again with the traces' values. Without profile
// (validate) it reads no trace source: values that depend on an unpinned
// trace stay unknown, shapes list them as pending and other values warn.
func LoadSpec(load func(lang.Options) (*lang.Config, hcl.Diagnostics), opts lang.Options, profile Profiler) (*lang.Config, hcl.Diagnostics) {
	opts.Static = true
	cfg, diags := load(opts)
	if diags.HasErrors() || len(cfg.Traces) == 0 {
		return cfg, diags
	}
	traces, tdiags := ResolveTraces(context.Background(), cfg, profile)
	if tdiags.HasErrors() {
		return cfg, append(diags, tdiags...)
	}
	// Offline (no profile), what depends on an unpinned trace stays a
	// warning; with the traces profiled, the second decode is final.
	opts.Traces, opts.Static = traces, profile == nil
	if len(traces) == 0 && opts.Static {
		return cfg, diags
	}
	cfg, diags = load(opts)
	return cfg, append(diags, tdiags...)
}

// Resolved is a trace's value for the profile doc it resolved to, and
// records doc's digest in t.ProfileDigest (the provenance the plan and the
// evidence name).
func Resolved(t *lang.Trace, doc Document) cty.Value {
	if d, err := Digest(doc); err == nil {
		t.ProfileDigest = d
	}
	return Value(doc)
}

func resolvePinned(t *lang.Trace, specDir string) (cty.Value, hcl.Diagnostics) {
	p := t.Profile
	if !filepath.IsAbs(p) {
		p = filepath.Join(specDir, p)
	}
	diag := func(attr, summary, detail string) hcl.Diagnostics {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: attrRange(t, attr).Ptr()}}
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return cty.DynamicVal, diag("profile", "Cannot read workload profile", fmt.Sprintf("%v. Write it with `infercrane profile trace %s --out %s`.", err, t.Source, t.Profile))
	}
	doc, digest, err := Parse(data)
	if err != nil {
		return cty.DynamicVal, diag("profile", "Invalid workload profile", fmt.Sprintf("%s: %v. Check it with `infercrane profile validate %s`.", t.Profile, err, t.Profile))
	}
	if t.Digest != "" && t.Digest != digest {
		return cty.DynamicVal, diag("digest", "Workload profile digest mismatch",
			fmt.Sprintf("The spec pins %s but %s has digest %s. If the new profile is intended, set digest = %q; otherwise restore the profile file.", t.Digest, t.Profile, digest, digest))
	}
	return Resolved(t, doc), nil
}

// attrRange is the range of a trace block attribute's expression, or the
// block's range when the attribute is not set.
func attrRange(t *lang.Trace, attr string) hcl.Range {
	if r, ok := t.AttrRanges[attr]; ok {
		return r
	}
	return t.DeclRange
}

// CacheKey names the cached profile of a trace object at a given identity
// and with given options: every option that changes a profile's content is
// in it, as ShardOptions declares them (in the form that selects the same
// rows, so options that make the same profile share a key).
func CacheKey(source, identity string, o Options) string {
	b, _ := json.Marshal(struct {
		Source, Identity string
		Options          ShardOptions
	}{source, identity, o.ShardOptions()})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// TraceOptions turns a spec trace block into profiling options.
func TraceOptions(t *lang.Trace, specDir string, ro ReadOptions) Options {
	o := Options{Source: t.Source, MaxContext: t.MaxContext, Read: ro, RowsPerGroup: 50_000}
	if !strings.HasPrefix(o.Source, "s3://") && !filepath.IsAbs(o.Source) {
		o.Source = filepath.Join(specDir, o.Source)
	}
	if t.Region != "" {
		o.Read.Region = t.Region
	}
	o.Read.Anonymous = o.Read.Anonymous || t.Anonymous
	if s := t.Sample; s != nil {
		o.RowGroups, o.RowGroupIndices, o.All, o.RowsPerGroup, o.Sketch = s.RowGroups, s.RowGroupIndices, s.All, s.RowsPerGroup, s.Sketch
		o.Quantiles = s.Quantiles
	}
	return o
}

// ProfileCached profiles a spec trace, reusing the state directory's cached
// profile when the object is unchanged.
func ProfileCached(ctx context.Context, t *lang.Trace, specDir string, ro ReadOptions) (Document, error) {
	return ProfileCachedBy(ctx, t, specDir, ro, nil)
}

// ProfileCachedBy is ProfileCached with the profile made by build when it
// is not cached (nil: in this process). A sharded profile (build fans the
// scan out) is cached under the same key, as it is the same document.
func ProfileCachedBy(ctx context.Context, t *lang.Trace, specDir string, ro ReadOptions, build func(context.Context, Options) (*Result, error)) (Document, error) {
	o := TraceOptions(t, specDir, ro)
	obj, err := Open(ctx, o.Source, o.Read)
	if err != nil {
		return Document{}, err
	}
	defer obj.Close()
	dir := filepath.Join(specDir, state.DefaultDir, "profiles")
	file := filepath.Join(dir, CacheKey(t.Source, obj.Identity, o)+".json")
	if data, err := os.ReadFile(file); err == nil {
		if doc, _, err := Parse(data); err == nil {
			return doc, nil
		}
	}
	var res *Result
	if build != nil {
		res, err = build(ctx, o)
	} else {
		res, err = BuildFrom(ctx, obj, o)
	}
	if err != nil {
		return Document{}, err
	}
	data, err := Encode(res.Document)
	if err != nil {
		return Document{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Document{}, fmt.Errorf("cache profile: %w", err)
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return Document{}, fmt.Errorf("cache profile: %w", err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return Document{}, errors.Join(fmt.Errorf("cache profile: %w", err), os.Remove(tmp))
	}
	return res.Document, nil
}
