package perf

// Lane is everything the performance model needs about one lane, resolved
// once by the planner after every override (the model block's architecture
// attributes, the gpu block's efficiency factors and price, the runtime's
// dtype and memory utilisation). The plan carries it in each lane, so the
// estimator and the simulated engine compute from the same numbers and no
// later package re-derives them from the spec or the catalog.
type Lane struct {
	// Model is the architecture with the model block's overrides applied.
	Model ModelArch `json:"model"`
	// Hardware is the deployment's GPUs with the resolved assumptions.
	Hardware Hardware `json:"hardware"`
}
