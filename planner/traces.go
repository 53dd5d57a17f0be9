package planner

import (
	"sort"
	"strings"

	"github.com/infercrane/infercrane/lang"
)

// TraceProfile is the workload profile a spec trace resolved to, as the
// plan records it for the evidence's provenance: where the trace is, the
// pinned profile file (if any) and the profile document's digest.
type TraceProfile struct {
	// Name is the trace block's name.
	Name string `json:"name"`
	// Source is the trace's source (a local path or s3:// URL; Redacted
	// when it holds a sensitive value).
	Source string `json:"source"`
	// Profile is the pinned profile file, relative to the spec directory
	// (empty: the trace was profiled from Source).
	Profile string `json:"profile,omitempty"`
	// Digest is the profile document's digest, the one a trace block's
	// digest attribute pins and `infercrane profile validate` prints (not
	// the digest of the file's bytes).
	Digest string `json:"digest"`
}

// traceProfiles lists the resolved traces of cfg by name; a trace not
// profiled yet (its lanes wait for it) is left out.
func traceProfiles(cfg *lang.Config) []TraceProfile {
	var out []TraceProfile
	for name, t := range cfg.Traces {
		if t == nil || t.ProfileDigest == "" {
			continue
		}
		src := t.Source
		for _, s := range cfg.Secrets {
			if s != "" && strings.Contains(src, s) {
				src = Redacted
			}
		}
		out = append(out, TraceProfile{Name: name, Source: src, Profile: t.Profile, Digest: t.ProfileDigest})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
