package modal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/infercrane/infercrane/executor"
)

// deployed is a sandbox this executor created and has not torn down.
type deployed struct {
	sb      Sandbox
	d       executor.Deployment
	spec    SandboxSpec
	gpus    int
	created time.Time
	healthy time.Time
	log     *runLog
	logs    sync.WaitGroup // copies of the sandbox's output

	mu         sync.Mutex
	runSeconds float64
	tornDown   bool
	tearErr    error
}

// copyLogs streams the server's output into the deployment's log.
func (dep *deployed) copyLogs() {
	stdout, stderr := dep.sb.Logs()
	for _, r := range []struct {
		name string
		src  io.Reader
	}{{"server", stdout}, {"server:stderr", stderr}} {
		if r.src == nil {
			continue
		}
		dep.logs.Add(1)
		go func() {
			defer dep.logs.Done()
			dep.log.copyLines(r.name, r.src, nil)
		}()
	}
}

func (dep *deployed) addRunSeconds(s float64) {
	dep.mu.Lock()
	defer dep.mu.Unlock()
	dep.runSeconds += s
}

// TeardownRecord is written to LOGDIR/modal-DEPLOYMENT.json when a sandbox
// is torn down: what ran, for how long, and whether it was terminated.
type TeardownRecord struct {
	SandboxID      string    `json:"sandbox_id"`
	Deployment     string    `json:"deployment"`
	GPU            string    `json:"gpu"`
	CreatedAt      time.Time `json:"created_at"`
	HealthyAt      time.Time `json:"healthy_at,omitzero"`
	TerminatedAt   time.Time `json:"terminated_at"`
	Terminated     bool      `json:"terminated"`
	Attempts       int       `json:"terminate_attempts"`
	Error          string    `json:"error,omitempty"`
	LifetimeSecs   float64   `json:"lifetime_seconds"`
	GPUSeconds     float64   `json:"gpu_seconds"`
	RunGPUSeconds  float64   `json:"run_gpu_seconds"`
	StartupSeconds float64   `json:"startup_seconds,omitempty"`
}

// teardown terminates dep's sandbox (retrying), even when ctx is already
// cancelled, and records the outcome. Later calls return the first result.
func (e *Executor) teardown(ctx context.Context, dep *deployed) error {
	dep.mu.Lock()
	if dep.tornDown {
		err := dep.tearErr
		dep.mu.Unlock()
		return err
	}
	dep.mu.Unlock()

	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	attempts, err := e.terminateSandbox(tctx, dep.sb)
	end := e.now()
	if err != nil {
		dep.log.note("%v", err)
	} else {
		dep.log.note("sandbox %s terminated", dep.sb.ID())
	}
	// The output streams end with the sandbox; do not hang on a stuck one.
	if err == nil {
		done := make(chan struct{})
		go func() { dep.logs.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
	}

	dep.mu.Lock()
	rec := TeardownRecord{
		SandboxID: dep.sb.ID(), Deployment: dep.d.ID, GPU: dep.spec.GPU,
		CreatedAt: dep.created.UTC(), TerminatedAt: end.UTC(), Terminated: err == nil, Attempts: attempts,
		LifetimeSecs: end.Sub(dep.created).Seconds(), RunGPUSeconds: dep.runSeconds * float64(dep.gpus),
	}
	rec.GPUSeconds = rec.LifetimeSecs * float64(dep.gpus)
	if !dep.healthy.IsZero() {
		rec.HealthyAt = dep.healthy.UTC()
		rec.StartupSeconds = dep.healthy.Sub(dep.created).Seconds()
	}
	if err != nil {
		rec.Error = err.Error()
	}
	dep.tornDown, dep.tearErr = true, err
	dep.mu.Unlock()

	werr := writeRecord(dep.d.LogDir, dep.d.ID, rec)
	dep.log.close()
	if err == nil {
		e.untrack(dep.sb.ID())
	}
	return errors.Join(err, werr)
}

// terminateSandbox terminates sb, retrying failures; a sandbox that no
// longer exists counts as terminated.
func (e *Executor) terminateSandbox(ctx context.Context, sb Sandbox) (int, error) {
	attempts := 0
	err := retry(ctx, e.terminate, func(err error) bool { return !errors.Is(err, ErrNotFound) }, nil, func() error {
		attempts++
		return sb.Terminate(ctx)
	})
	if err == nil || errors.Is(err, ErrNotFound) {
		return attempts, nil
	}
	return attempts, fmt.Errorf("modal executor: could not terminate sandbox %s (%d attempts): %w; %w until its timeout (%s) ends", sb.ID(), attempts, err, executor.ErrLeftRunning, e.cfg.Timeout)
}

func writeRecord(logDir, deployment string, rec TeardownRecord) error {
	if logDir == "" {
		return nil
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	p := filepath.Join(logDir, "modal-"+safeName(deployment)+".json")
	if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("modal executor: writing the teardown record: %w", err)
	}
	return nil
}
