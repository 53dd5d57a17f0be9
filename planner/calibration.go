package planner

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/perf"
)

// Calibrated says that a lane's assumptions come from a calibration fit,
// and how good that fit was.
type Calibrated struct {
	// File and Digest name the calibration file (as the spec gives it).
	File   string `json:"file"`
	Digest string `json:"digest"`
	// Block is the spec block that references it ("gpu.l40s").
	Block string `json:"block"`
	// GPUType, Engine and Version select the fit.
	GPUType string `json:"gpu_type"`
	Engine  string `json:"engine"`
	Version string `json:"version"`
	// Source, Lanes and Runs say what the fit used ("records" or
	// "aggregates"); MAPE is its mean absolute relative error.
	Source string  `json:"source"`
	Lanes  int     `json:"lanes"`
	Runs   int     `json:"runs"`
	MAPE   float64 `json:"mape"`
	// Params are the fitted parameters the lane uses (spec overrides of
	// prefill_mfu or decode_efficiency still win).
	Params perf.Params `json:"parameters"`
	// Unidentified names the parameters the fit's evidence could not pin
	// (they keep the catalog's values, and the figures they move the
	// catalog's ranges).
	Unidentified []string `json:"unidentified,omitempty"`
}

// calibrations loads every calibration file the spec references, checking
// its digest; problems are diagnostics on the referencing attribute.
func calibrations(cfg *lang.Config) (map[*lang.CalibrationRef]*perf.Calibration, hcl.Diagnostics) {
	out := map[*lang.CalibrationRef]*perf.Calibration{}
	var diags hcl.Diagnostics
	var refs []*lang.CalibrationRef
	for _, name := range sortedKeys(cfg.GPUs) {
		if g := cfg.GPUs[name]; g != nil && g.Calibration != nil {
			refs = append(refs, g.Calibration)
		}
	}
	for _, name := range sortedKeys(cfg.Runtimes) {
		if r := cfg.Runtimes[name]; r != nil && r.Calibration != nil {
			refs = append(refs, r.Calibration)
		}
	}
	for _, ref := range refs {
		path := ref.File
		if !filepath.IsAbs(path) {
			path = filepath.Join(cfg.Dir, path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read calibration file",
				Detail: fmt.Sprintf("%v. Write it with `infercrane calibrate -out %s EVIDENCE...`.", err, ref.File), Subject: ref.FileRange.Ptr()})
			continue
		}
		c, err := perf.ParseCalibration(data)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid calibration file",
				Detail: fmt.Sprintf("%s: %v.", ref.File, err), Subject: ref.FileRange.Ptr()})
			continue
		}
		if ref.Digest != "" && ref.Digest != c.Digest {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Calibration digest mismatch",
				Detail:  fmt.Sprintf("The spec pins %s but %s has digest %s. If the new calibration is intended, set calibration_digest = %q; otherwise restore the file.", ref.Digest, ref.File, c.Digest, c.Digest),
				Subject: ref.DigestRange.Ptr()})
			continue
		}
		out[ref] = c
	}
	return out, diags
}

// calibrate applies the lane's calibration (the gpu block's, else the
// runtime block's) to its hardware assumptions and sets its uncertainty;
// kinds are what each executor type declares (executorKinds).
func calibrate(l *lanePlan, cals map[*lang.CalibrationRef]*perf.Calibration, kinds map[string]lang.Capabilities) {
	l.uncertainty = perf.CatalogUncertainty()
	if !l.hwOK {
		return
	}
	ref, block := l.blocks.gpu.Calibration, "gpu."+l.GPU
	if ref == nil && l.blocks.runtime != nil {
		ref, block = l.blocks.runtime.Calibration, "runtime."+l.Runtime
	}
	if ref == nil {
		return
	}
	c := cals[ref]
	if c == nil {
		return // a diagnostic says why
	}
	in := l.Inputs
	fit, ok := c.Find(l.hw.GPU.Name, in.RuntimeEngine, in.RuntimeVersion)
	if !ok {
		var have []string
		for _, f := range c.Fits {
			have = append(have, fmt.Sprintf("%s with %s %s", f.GPUType, f.Engine, f.Version))
		}
		sort.Strings(have)
		why := fmt.Sprintf("%s (from %s) has no fit for %s with %s %s (it has %s); catalog assumptions used",
			ref.File, block, l.hw.GPU.Name, orDefault(in.RuntimeEngine, "no engine"), orDefault(in.RuntimeVersion, "no version"), strings.Join(have, ", "))
		l.Notes = append(l.Notes, "not calibrated: "+why)
		l.calWarning, l.calWarningKey = "its calibration does not apply: "+why+". Calibrate from evidence of this GPU and engine version.", ref.File+"\x00"+l.hw.GPU.Name+"\x00"+in.RuntimeEngine+"\x00"+in.RuntimeVersion
		return
	}
	// A fit of the simulated engine's evidence knows only the catalog's
	// model back: it is no calibration of real GPUs.
	if !in.Capabilities.Simulated && simulatedEvidence(fit.Executor, kinds) {
		why := fmt.Sprintf("%s (from %s) was fitted to evidence of the simulated engine (executor %s), which only plays the catalog's model back; lanes on executor %q keep the catalog's assumptions and ranges",
			ref.File, block, fit.Executor, in.ExecutorType)
		l.Notes = append(l.Notes, "NOT CALIBRATED: "+why)
		l.calWarning, l.calWarningKey = "its calibration is refused: "+why+". Calibrate from evidence of real GPUs (a local, modal or endpoint executor, or another tool's results: infercrane calibrate -gpu ... -engine ... RESULT.json).", ref.File+"\x00sim\x00"+in.ExecutorType
		return
	}
	// A fit of another revision of the model holds what that model left
	// out beside its parameters, not what this one does.
	if old := fit.OutdatedModel(); old != "" {
		var files []string
		for _, e := range fit.Evidence {
			files = append(files, e.File)
		}
		why := fmt.Sprintf("%s (from %s) %s, whose parameters hold other things than this model's; lanes keep the catalog's assumptions and ranges", ref.File, block, old)
		l.Notes = append(l.Notes, "NOT CALIBRATED: "+why)
		l.calWarning, l.calWarningKey = fmt.Sprintf("its calibration is refused: %s. Refit it from the same evidence: infercrane calibrate -out %s %s", why, ref.File, strings.Join(files, " ")),
			ref.File+"\x00revision\x00"+fit.ModelRevision
		return
	}
	p := fit.Params
	a := p.Apply(l.hw.Assume)
	g := l.blocks.gpu
	if g.PrefillMFU != nil {
		a.PrefillMFU = *g.PrefillMFU
	}
	if g.DecodeEfficiency != nil {
		a.DecodeEfficiency = *g.DecodeEfficiency
	}
	l.hw.Assume = a
	l.Calibration = &Calibrated{File: filepath.ToSlash(ref.File), Digest: c.Digest, Block: block, GPUType: fit.GPUType, Engine: fit.Engine,
		Version: fit.Version, Source: fit.Source, Lanes: fit.Lanes, Runs: fit.Runs, MAPE: round(fit.Fit.MAPE, 4), Params: perf.ParamsOf(a),
		Unidentified: fit.Unidentified()}
	if fit.Executor != "" && !in.Capabilities.Simulated && !strings.Contains(fit.Executor, in.ExecutorType) && !strings.HasPrefix(fit.Executor, "external: ") {
		l.calWarning, l.calWarningKey = fmt.Sprintf("its calibration %s (from %s) was fitted to evidence of executor %s, not %q, the lane's: the two may measure differently (client placement, network); check it with infercrane calibrate -check %s on this executor's evidence",
			ref.File, block, fit.Executor, in.ExecutorType, ref.File), ref.File+"\x00"+fit.Executor+"\x00"+in.ExecutorType
	}
	u := fit.Uncertainty(filepath.ToSlash(ref.File))
	for _, f := range []*float64{&u.TTFT, &u.TPOT, &u.Latency, &u.Throughput} {
		*f = round(*f, 4)
	}
	l.uncertainty = u
}

// executorKinds is what each executor type declares, by type name: the
// built-in executors' declarations, and those of the spec's executor
// blocks (their registrations', external plugins' included). A
// calibration file names the executor kinds of its evidence, which need
// not be this spec's.
func executorKinds(cfg *lang.Config) map[string]lang.Capabilities {
	out := maps.Clone(lang.BuiltinExecutors)
	for _, e := range cfg.Executors {
		if e != nil {
			out[e.Type] = e.Capabilities
		}
	}
	return out
}

// simulatedEvidence reports whether one of a fit's executor kinds ("local,
// sim") declares it simulates.
func simulatedEvidence(fitKinds string, kinds map[string]lang.Capabilities) bool {
	for _, k := range strings.Split(fitKinds, ", ") {
		if kinds[k].Simulated {
			return true
		}
	}
	return false
}
