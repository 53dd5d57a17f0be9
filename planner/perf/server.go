package perf

import (
	"github.com/infercrane/infercrane/lang/engine"
	"github.com/infercrane/infercrane/planner/arch"
)

// CatalogServer is one server of model id on count GPUs of type g under
// runtime rt, serving api, as the catalog plans it cold: the engine
// version's settings for a max model len of maxLen (ResolveRuntime), its
// front end for the API the model's chat goes through (FrontEnd,
// FrontEndAPI), and the precision of the model's checkpoint and the
// runtime's args (ResolvePrecision; a model the catalog has no config
// for keeps the runtime dtype's). It returns the server's hardware (its
// GPUs and assumptions) and settings; NewLane(model, hw, rs.Engine(),
// maxLen) is the lane. The planner takes the same steps with a spec's
// overrides and calibrations between them (planner/perfmodel.go);
// calibrate and the published measurements' harness take these.
func CatalogServer(id string, g GPU, count int, rt engine.Runtime, api string, maxLen int) (Hardware, RuntimeSettings, error) {
	rs, err := ResolveRuntime(rt, g, count, maxLen)
	if err != nil {
		return Hardware{}, RuntimeSettings{}, err
	}
	a := DefaultAssumptions(g)
	rs.Assume(&a, g)
	p, known := arch.Lookup(id)
	if o, ok := FrontEnd(rt.RuntimeEngine, rt.RuntimeVersion, FrontEndAPI(p.Config.HarmonyChat, api)); ok {
		o.Apply(&a, g)
	}
	hw := Hardware{GPU: g, Count: rs.TensorParallel, Stages: rs.PipelineParallel, BytesPerElem: BytesPerElem(rt.RuntimeDtype), Assume: a}
	if known {
		prec, err := ResolvePrecision(p.Config, rt.RuntimeDtype, rs, g)
		if err != nil {
			return Hardware{}, RuntimeSettings{}, err
		}
		hw = hw.WithPrecision(prec)
	}
	return hw, rs, nil
}
