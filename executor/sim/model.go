package sim

import (
	"context"
	"errors"
	"time"
)

// modelTiming is the continuous-batching scheduler (model mode).
type modelTiming struct{}

func newModelTiming(o Options, m *metrics) (*modelTiming, error) {
	return nil, errors.New("model timing is not implemented yet; use constant timing")
}

func (m *modelTiming) admit(g *genState) error { return nil }
func (m *modelTiming) wait(ctx context.Context, stop <-chan struct{}, g *genState, k int, t *time.Timer) bool {
	return false
}
func (m *modelTiming) release(g *genState)         {}
func (m *modelTiming) gauges() (int, int, float64) { return 0, 0, 0 }
func (m *modelTiming) close()                      {}
