package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/infercrane/infercrane/planner/state"
)

// Reaped is one journaled deployment that a reap found not torn down.
type Reaped struct {
	Deployment string `json:"deployment"`
	Executor   string `json:"executor"`
	Apply      string `json:"apply"`
	// Handle is what the executor had reported it started ("" when the
	// apply died before it reported anything).
	Handle string `json:"handle,omitempty"`
	// Err is why the teardown failed (nil: it is gone now).
	Err error `json:"-"`
}

// Message says what the reap did, in words.
func (r Reaped) Message() string {
	what := fmt.Sprintf("deployment %s (executor %s) left by apply %s", r.Deployment, r.Executor, r.Apply)
	if r.Handle != "" {
		what += ", " + r.Handle
	}
	if r.Err != nil {
		return fmt.Sprintf("could not tear down %s: %v; it may still be running", what, r.Err)
	}
	return "tore down " + what
}

// ReapDeployments tears down every deployment the state's deployments
// journal records as started by another apply than self and never
// stopped: the apply that started it died (the caller holds the state's
// lock, so no other apply runs). Each is torn down through a fresh instance
// of its executor, opened with the journaled executor type and attributes,
// from the server the executor reported (its Handle); success is
// journaled, so it is reaped once. timeout bounds each teardown.
func ReapDeployments(ctx context.Context, st *state.Store, open Opener, self string, timeout time.Duration) ([]Reaped, error) {
	live, err := st.LiveDeployments()
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	var out []Reaped
	for _, l := range live {
		if l.Apply == self {
			continue
		}
		srv := &Server{DeploymentID: l.Deployment}
		if len(l.Server) > 0 {
			if err := json.Unmarshal(l.Server, srv); err != nil {
				srv = &Server{DeploymentID: l.Deployment}
			}
		}
		rp := Reaped{Deployment: l.Deployment, Executor: l.Executor, Apply: l.Apply, Handle: srv.Handle}
		rp.Err = reapOne(ctx, open, l.Executor, l.Config, srv, timeout)
		if rp.Err == nil {
			rp.Err = st.RecordDeployment(state.DeploymentEntry{Type: state.DeployStopped, Apply: l.Apply, Deployment: l.Deployment, How: "reaped by apply " + self})
		}
		out = append(out, rp)
	}
	return out, nil
}

func reapOne(ctx context.Context, open Opener, typ string, cfg map[string]any, srv *Server, timeout time.Duration) (err error) {
	if typ == "" {
		return errors.New("the journal does not name its executor")
	}
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	x, err := safeOpen(tctx, open, typ, cfg)
	if err != nil {
		return fmt.Errorf("open executor %s: %w", typ, err)
	}
	err = safeTeardown(tctx, x, srv)
	if c, ok := x.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	return err
}
