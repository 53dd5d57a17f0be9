package perf

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// CalibrationSchema is the schema of calibration files.
const CalibrationSchema = "infercrane.calibration/v1"

// ModelRevision names the revision of the performance model whose
// parameters a calibration fits (CalibrationFit.ModelRevision). A fitted
// parameter holds what the model leaves out beside it, so a change that
// moves what it holds makes earlier fits wrong for this model: bump the
// revision with such a change, and the planner refuses fits of another
// one. 2026-12-04: the step overhead no longer holds the matrix
// multiplies' fixed time, which the model charges a layer apart
// (layerMultiplyUs). 2026-12-04.2: a step vLLM runs without a CUDA graph
// (V0's prefills and decodes of more than 256 sequences, every step under
// --enforce-eager) lasts at least its kernel launches (EagerSteps), which
// a fit's step overhead held before. 2026-12-04.3: a mixture of experts'
// routed multiplies take Hardware.ServedExpertFactor times the kernel law
// in a served step, which a fit's MFU held before. 2026-12-04.4: a model
// with attention sinks (gpt-oss) on a GPU of capability 8.x takes
// ModelArch.AttentionKernelFactor times the FlashAttention rate for its
// attention, which a fit's MFU held before.
const ModelRevision = "2026-12-04.4"

// Calibration is a calibration file: fitted parameters per GPU type and
// runtime version, with the evidence they came from and how well they fit.
// It is checked in next to the spec and pinned by its digest from a gpu or
// runtime block.
type Calibration struct {
	SchemaVersion     string           `json:"schema_version"`
	GeneratedAt       string           `json:"generated_at"`
	InfercraneVersion string           `json:"infercrane_version"`
	Fits              []CalibrationFit `json:"fits"`
	// Digest is "sha256:" + hex SHA-256 of the compact JSON of the document
	// (Go field order) with the digest left empty.
	Digest string `json:"digest"`
}

// CalibrationFit is one fit: the parameters for one GPU type and runtime.
type CalibrationFit struct {
	GPUType string `json:"gpu_type"`
	Engine  string `json:"engine"`
	Version string `json:"version"`
	// Source is "records" (per-run figures recomputed from the state's
	// per-request records) or "aggregates" (the evidence's aggregates),
	// with " and results" when other tools' results are among them.
	Source string `json:"source"`
	// Executor is the executor kind that produced the evidence ("sim",
	// "local", "modal", "endpoint", or "external: TOOL" for another
	// tool's results; several joined by ", "); empty in files written
	// before it was recorded. A plan refuses a fit whose evidence came
	// from the simulated engine for a lane on real GPUs.
	Executor string `json:"executor,omitempty"`
	// ModelRevision is the ModelRevision of the model the parameters were
	// fitted to; empty in files written before revisions were recorded.
	ModelRevision string        `json:"model_revision,omitempty"`
	Evidence      []EvidenceRef `json:"evidence"`
	// Lanes and Runs count what the fit used.
	Lanes int `json:"lanes"`
	Runs  int `json:"runs"`
	// Start is where the fit began (the catalog's defaults).
	Start  Params    `json:"start"`
	Params Params    `json:"parameters"`
	Fit    FitResult `json:"fit"`
}

// EvidenceRef names an evidence document a fit used: InferCrane evidence
// (its screen and stated digest) or another tool's result (its label, the
// SHA-256 of its bytes, the tool and the tool's version).
type EvidenceRef struct {
	File        string `json:"file"`
	Screen      string `json:"screen"`
	Digest      string `json:"digest"`
	Tool        string `json:"tool,omitempty"`
	ToolVersion string `json:"tool_version,omitempty"`
}

// ComputeDigest returns the document's digest.
func (c *Calibration) ComputeDigest() string {
	cp := *c
	cp.Digest = ""
	b, _ := json.Marshal(&cp)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ParseCalibration reads a calibration file strictly (unknown fields and
// trailing data are errors) and checks its own digest.
func ParseCalibration(data []byte) (*Calibration, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Calibration
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("not a calibration file: %v", err)
	}
	if dec.More() {
		return nil, errors.New("trailing data after the calibration document")
	}
	if c.SchemaVersion != CalibrationSchema {
		return nil, fmt.Errorf("schema_version %q; want %q, as infercrane calibrate writes", c.SchemaVersion, CalibrationSchema)
	}
	if d := c.ComputeDigest(); c.Digest != d {
		return nil, fmt.Errorf("the file states digest %s but its content hashes to %s: it was edited after infercrane calibrate wrote it", c.Digest, d)
	}
	for i, f := range c.Fits {
		p := f.Params
		if !(p.PrefillMFU > 0 && p.PrefillMFU <= 1 && p.DecodeEfficiency > 0 && p.DecodeEfficiency <= 1 && p.StepOverheadMs >= 0 && p.RequestOverheadMs >= 0 && p.RequestJitterMs >= 0 &&
			p.InterconnectEfficiency >= 0 && p.InterconnectEfficiency <= 1 && p.MoERoutingSpread >= 0 && p.MoERoutingSpread <= 1) {
			return nil, fmt.Errorf("fits[%d] (%s, %s %s): parameters %+v out of range", i, f.GPUType, f.Engine, f.Version, p)
		}
	}
	return &c, nil
}

// OutdatedModel says which revision of the performance model f was
// fitted to when it is not this one (ModelRevision): "" when it is.
func (f *CalibrationFit) OutdatedModel() string {
	switch f.ModelRevision {
	case ModelRevision:
		return ""
	case "":
		return "was fitted before the performance model's revisions were recorded (this model is revision " + ModelRevision + ")"
	default:
		return fmt.Sprintf("was fitted to the performance model's revision %s (this model is revision %s)", f.ModelRevision, ModelRevision)
	}
}

// Find returns the fit for a GPU type and runtime (engine and version,
// compared without case).
func (c *Calibration) Find(gpuType, engine, version string) (*CalibrationFit, bool) {
	for i := range c.Fits {
		f := &c.Fits[i]
		if strings.EqualFold(f.GPUType, gpuType) && strings.EqualFold(f.Engine, engine) && f.Version == version {
			return f, true
		}
	}
	return nil, false
}

// Uncertainty is the relative half-width of an estimate's range per
// family of metrics: a prediction v is expected within v x (1 - u) and
// v x (1 + u).
type Uncertainty struct {
	// Source says where the widths come from: "catalog" or the
	// calibration file.
	Source     string  `json:"source"`
	TTFT       float64 `json:"ttft"`
	TPOT       float64 `json:"tpot"`
	Latency    float64 `json:"latency"`
	Throughput float64 `json:"throughput"`
}

// CatalogUncertainty is the stated uncertainty of uncalibrated estimates:
// the catalog's efficiency factors are literature values, not
// measurements of this GPU and runtime, so TTFT (dominated by prefill MFU
// and fixed overheads) is given ±50% and decode-bound figures ±25%.
func CatalogUncertainty() Uncertainty {
	return Uncertainty{Source: "catalog", TTFT: 0.5, TPOT: 0.25, Latency: 0.25, Throughput: 0.25}
}

// Uncertainty is the range a fit's residuals justify: per family the
// larger of twice the RMS and the largest relative residual, at least 3%.
// Where the evidence did not identify a parameter (it kept the catalog's
// value), the families that parameter moves keep at least the catalog's
// width: the residuals of the lanes fitted say nothing about it.
func (f *CalibrationFit) Uncertainty(source string) Uncertainty {
	width := func(prefix string) float64 {
		w := 0.03
		for m, r := range f.Fit.Residuals {
			if strings.HasPrefix(m, prefix) {
				w = math.Max(w, math.Max(2*r.RMSRel, r.MaxRel))
			}
		}
		return w
	}
	u := Uncertainty{Source: source, TTFT: width("ttft"), TPOT: math.Max(width("tpot"), width("itl")), Latency: width("latency"), Throughput: width("output_token")}
	cat := CatalogUncertainty()
	for name, id := range f.Fit.Identification {
		if id.Identified {
			continue
		}
		u.TTFT, u.Latency, u.Throughput = math.Max(u.TTFT, cat.TTFT), math.Max(u.Latency, cat.Latency), math.Max(u.Throughput, cat.Throughput)
		if name == "decode_efficiency" || name == "step_overhead_ms" || name == "interconnect_efficiency" || name == "moe_routing_spread" {
			u.TPOT = math.Max(u.TPOT, cat.TPOT)
		}
	}
	return u
}

// Unidentified lists the parameters (JSON names, in Params' order) the
// fit's evidence did not identify.
func (f *CalibrationFit) Unidentified() []string {
	var out []string
	for _, name := range ParamNames {
		if id, ok := f.Fit.Identification[name]; ok && !id.Identified {
			out = append(out, name)
		}
	}
	return out
}

// Of returns the half-width for a metric named as the evidence names it.
func (u Uncertainty) Of(metric string) float64 {
	switch {
	case strings.HasPrefix(metric, "ttft"), IsTTFTPart(metric):
		return u.TTFT
	case strings.HasPrefix(metric, "tpot"), strings.HasPrefix(metric, "itl"):
		return u.TPOT
	case strings.HasPrefix(metric, "latency"):
		return u.Latency
	default:
		return u.Throughput
	}
}
