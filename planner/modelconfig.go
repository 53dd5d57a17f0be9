package planner

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/arch"
)

// modelConfig is what the planner found of a model block's config.json.
type modelConfig struct {
	// pinned is the config (nil: none found; the block's architecture
	// attributes are all there is).
	pinned *arch.Pinned
	// looked is the Hugging Face cache file looked for when nothing else
	// gave a config ("" when the cache was not consulted).
	looked string
}

// Env reads an environment variable; the planner reads the Hugging Face
// cache's location through it (HF_HUB_CACHE, HF_HOME, XDG_CACHE_HOME,
// HOME).
type Env func(string) string

// modelConfigs finds every model block's config.json, in this order: the
// block's config file (its digest checked), the catalog's pinned config of
// its id, or the local Hugging Face cache's config for its revision (main
// when it pins none). Nothing is fetched. A config file that is missing,
// unreadable, changed or unparsable is an error at the config attribute; a
// cached one that does not parse is an error at the id.
func modelConfigs(cfg *lang.Config, env Env) (map[*lang.Model]modelConfig, hcl.Diagnostics) {
	out := map[*lang.Model]modelConfig{}
	var diags hcl.Diagnostics
	for _, name := range sortedKeys(cfg.Models) {
		m := cfg.Models[name]
		if m == nil {
			continue
		}
		if ref := m.Config; ref != nil {
			p, d := configFile(cfg.Dir, m, ref)
			diags = append(diags, d...)
			out[m] = modelConfig{pinned: p}
			continue
		}
		if p, ok := arch.Lookup(m.ID); ok {
			out[m] = modelConfig{pinned: &p}
			continue
		}
		if env == nil {
			out[m] = modelConfig{}
			continue
		}
		path := hfCacheConfig(env, m.ID, m.Revision)
		mc := modelConfig{looked: path}
		if data, err := os.ReadFile(path); err == nil && path != "" {
			p, err := arch.Pin(data, m.ID, "Hugging Face cache "+path)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unreadable model config",
					Detail:  fmt.Sprintf("%s: %v. Set config = \"path/to/config.json\" on model %q to one InferCrane reads, or give its architecture attributes.", path, err, m.Name),
					Subject: rangeOr(m.AttrRanges, "id", m.DeclRange).Ptr()})
			} else {
				p.Revision = snapshotRevision(path)
				mc.pinned = &p
			}
		}
		out[m] = mc
	}
	return out, diags
}

// configFile reads and checks a model block's config file.
func configFile(dir string, m *lang.Model, ref *lang.PinnedFile) (*arch.Pinned, hcl.Diagnostics) {
	path := ref.File
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	bad := func(summary, detail string, subject hcl.Range) (*arch.Pinned, hcl.Diagnostics) {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: subject.Ptr()}}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return bad("Cannot read model config", fmt.Sprintf("%v. config names the model's config.json (from its Hugging Face repository at the pinned revision), relative to the spec directory.", err), ref.FileRange)
	}
	p, err := arch.Pin(data, m.ID, filepath.ToSlash(ref.File))
	if err != nil {
		return bad("Invalid model config", fmt.Sprintf("%s: %v.", ref.File, err), ref.FileRange)
	}
	if ref.Digest != "" && ref.Digest != p.Digest {
		return bad("Model config digest mismatch", fmt.Sprintf("The spec pins %s but %s has digest %s. If the new config is intended, set config_digest = %q; otherwise restore the file.",
			ref.Digest, ref.File, p.Digest, p.Digest), ref.DigestRange)
	}
	p.Revision = m.Revision
	return &p, nil
}

// hfCacheConfig is where the Hugging Face cache keeps id's config.json
// at revision: HUB/models--ORG--NAME/snapshots/COMMIT/config.json, where
// HUB is $HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub, and
// COMMIT is revision when it is a commit hash, else the commit
// refs/REVISION (refs/main without a revision) names. "" when no home
// directory is known.
func hfCacheConfig(env Env, id, revision string) string {
	hub := env("HF_HUB_CACHE")
	if hub == "" {
		if home := env("HF_HOME"); home != "" {
			hub = filepath.Join(home, "hub")
		} else if xdg := env("XDG_CACHE_HOME"); xdg != "" {
			hub = filepath.Join(xdg, "huggingface", "hub")
		} else if home := env("HOME"); home != "" {
			hub = filepath.Join(home, ".cache", "huggingface", "hub")
		} else {
			return ""
		}
	}
	repo := filepath.Join(hub, "models--"+strings.ReplaceAll(id, "/", "--"))
	commit := revision
	if !commitPattern.MatchString(revision) {
		ref := revision
		if ref == "" {
			ref = "main"
		}
		if strings.Contains(ref, "..") {
			return ""
		}
		b, err := os.ReadFile(filepath.Join(repo, "refs", filepath.FromSlash(ref)))
		if err != nil {
			return filepath.Join(repo, "refs", ref)
		}
		commit = strings.TrimSpace(string(b))
		if !commitPattern.MatchString(commit) {
			return ""
		}
	}
	return filepath.Join(repo, "snapshots", commit, "config.json")
}

var commitPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

// snapshotRevision is the commit of a cache snapshot's file path.
func snapshotRevision(path string) string {
	return filepath.Base(filepath.Dir(path))
}

// rangeOr is the range of attribute name, or def when the block does not
// set it.
func rangeOr(ranges map[string]hcl.Range, name string, def hcl.Range) hcl.Range {
	if r, ok := ranges[name]; ok {
		return r
	}
	return def
}
