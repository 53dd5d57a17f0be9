// Package modal runs InferCrane lanes on Modal's serverless GPUs.
//
// Each deployment becomes one Modal Sandbox running `vllm serve` with the
// runtime's pinned flags in the vllm/vllm-openai image. The infercrane binary
// is copied into the sandbox and its load generator (`infercrane bench`) runs
// there against localhost, so client round trips never reach TTFT. Every
// sandbox carries a lifetime limit, an idle limit and tags; it is terminated
// on every path, and Cleanup finds tagged sandboxes a crashed apply left
// behind.
//
// All Modal calls go through the narrow Cloud interface: NewSDKCloud adapts
// Modal's Go SDK, and package localcloud implements it with local processes
// so that everything except the network calls is tested on any machine.
package modal

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/infercrane/infercrane/executor"
)

// Executor is the modal executor. It is safe for concurrent use: deployments
// run in parallel sandboxes.
type Executor struct {
	cfg       Config
	newCloud  func() (Cloud, error)
	capacity  Backoff
	terminate Backoff
	poll      time.Duration
	progress  func(deployment, line string)
	now       func() time.Time

	cloudOnce sync.Once
	cloud     Cloud
	cloudErr  error

	binMu  sync.Mutex
	binary string

	mu   sync.Mutex
	live map[string]*deployed // by sandbox id
	gone map[string]bool      // sandboxes this executor terminated
}

// Option adjusts an Executor made by NewExecutor.
type Option func(*Executor)

// WithCloud makes the executor use c instead of Modal's SDK.
func WithCloud(c Cloud) Option {
	return func(e *Executor) { e.newCloud = func() (Cloud, error) { return c, nil } }
}

// WithCloudFactory makes the executor connect with f (given the block's
// environment) instead of Modal's SDK; the composition root uses it to give
// tests a stand-in.
func WithCloudFactory(f func(environment string) (Cloud, error)) Option {
	return func(e *Executor) { e.newCloud = func() (Cloud, error) { return f(e.cfg.Environment) } }
}

// WithCapacityBackoff sets how rate limits and capacity errors are retried.
func WithCapacityBackoff(b Backoff) Option { return func(e *Executor) { e.capacity = b } }

// WithTerminateBackoff sets how a failed Terminate is retried.
func WithTerminateBackoff(b Backoff) Option { return func(e *Executor) { e.terminate = b } }

// WithPollInterval sets how often /health is probed while a server starts.
func WithPollInterval(d time.Duration) Option { return func(e *Executor) { e.poll = d } }

// WithProgress receives the executor's progress lines (retries, health
// waits, the load generator's progress) as they happen.
func WithProgress(f func(deployment, line string)) Option {
	return func(e *Executor) { e.progress = f }
}

// New makes a modal executor from an executor block's attributes. It does
// not contact Modal; credentials are read on the first Deploy.
func New(cfg map[string]any) (executor.Executor, error) { return NewExecutor(cfg) }

// NewExecutor is New with options, returning the concrete type.
func NewExecutor(cfg map[string]any, opts ...Option) (*Executor, error) {
	c, err := ParseConfig(cfg)
	if err != nil {
		return nil, err
	}
	e := &Executor{
		cfg:       c,
		capacity:  DefaultCapacityBackoff,
		terminate: DefaultTerminateBackoff,
		poll:      2 * time.Second,
		now:       time.Now,
		live:      map[string]*deployed{},
		gone:      map[string]bool{},
	}
	e.newCloud = func() (Cloud, error) { return NewSDKCloud(c.Environment) }
	for _, o := range opts {
		o(e)
	}
	return e, nil
}

// Schema describes the executor block's attributes.
func (e *Executor) Schema() executor.Schema { return Schema() }

// Config is the parsed executor block.
func (e *Executor) Config() Config { return e.cfg }

func (e *Executor) getCloud() (Cloud, error) {
	e.cloudOnce.Do(func() { e.cloud, e.cloudErr = e.newCloud() })
	return e.cloud, e.cloudErr
}

// binaryPath resolves the binary once per executor; a built one goes to the
// user's cache directory.
func (e *Executor) binaryPath() (string, error) {
	e.binMu.Lock()
	defer e.binMu.Unlock()
	if e.binary != "" {
		return e.binary, nil
	}
	b, err := ResolveLoadgen(e.cfg.Binary)
	if err != nil {
		return "", err
	}
	e.binary = b
	return b, nil
}

// CheckDeployment reports what Deploy would refuse of d that the plan
// alone decides, without contacting Modal: the settings, and the sandbox
// they make for the lane (a gpu attribute that does not name the lane's
// GPU type and count, no model id). validate and plan run it
// (plugins.Builtin.CheckDeployment), so apply never meets it.
func CheckDeployment(d executor.Deployment) error {
	c, err := ParseConfig(d.Config)
	if err != nil {
		return err
	}
	e := &Executor{cfg: c, now: time.Now}
	_, err = e.Spec(d)
	return err
}

// Spec is the sandbox a deployment is created with.
func (e *Executor) Spec(d executor.Deployment) (SandboxSpec, error) {
	gpu, err := e.cfg.GPURequest(d.GPUType, d.GPUCount)
	if err != nil {
		return SandboxSpec{}, err
	}
	if d.ModelID == "" {
		return SandboxSpec{}, fmt.Errorf("modal executor: deployment %s has no model id", d.ID)
	}
	return SandboxSpec{
		App:         e.cfg.App,
		Environment: e.cfg.Environment,
		Image:       e.cfg.ImageFor(d.RuntimeVersion),
		GPU:         gpu,
		Command:     ServeCommand(d),
		Secrets:     append([]string(nil), e.cfg.Secrets...),
		Volume:      e.cfg.Volume,
		VolumeMount: e.cfg.VolumeMount,
		Timeout:     e.cfg.Timeout,
		IdleTimeout: e.cfg.IdleTimeout,
		Region:      e.cfg.Region,
		Cloud:       e.cfg.Cloud,
		Tags: map[string]string{
			TagInfercrane: "1",
			TagScreen:     d.Screen,
			TagDeployment: d.ID,
			TagApply:      d.ApplyID,
			TagCreatedAt:  e.now().UTC().Format(time.RFC3339),
		},
	}, nil
}

// errUnscheduled marks a create that waited health_timeout for a GPU; it is
// not retried.
var errUnscheduled = errors.New("sandbox never scheduled")

// Deploy creates the deployment's sandbox and waits until vLLM is healthy.
// When anything fails after the sandbox exists, it is terminated before
// Deploy returns.
func (e *Executor) Deploy(ctx context.Context, d executor.Deployment) (*executor.Server, error) {
	spec, err := e.Spec(d)
	if err != nil {
		return nil, err
	}
	bin, err := e.binaryPath()
	if err != nil {
		return nil, err
	}
	cloud, err := e.getCloud()
	if err != nil {
		return nil, err
	}
	log, err := openLog(d.LogDir, d.ID, e.progress)
	if err != nil {
		return nil, err
	}
	log.note("creating sandbox: app %s, image %s, gpu %s", spec.App, spec.Image, spec.GPU)
	var sb Sandbox
	retryable := func(err error) bool { return isCapacity(err) && !errors.Is(err, errUnscheduled) }
	err = retry(ctx, e.capacity, retryable, func(n int, wait time.Duration, err error) {
		log.note("Modal has no capacity or rate-limited us (attempt %d): %v; retrying in %s", n, err, wait)
	}, func() error {
		// Modal queues a sandbox until a GPU is free; wait no longer than
		// the server itself may take to start.
		actx, cancel := context.WithTimeout(ctx, e.cfg.HealthTimeout)
		defer cancel()
		var cerr error
		sb, cerr = cloud.Create(actx, spec)
		if cerr != nil && ctx.Err() == nil && actx.Err() != nil {
			cerr = fmt.Errorf("%w: %w: no %s was scheduled within health_timeout (%s)", ErrCapacity, errUnscheduled, spec.GPU, e.cfg.HealthTimeout)
		}
		return cerr
	})
	if err != nil {
		err = explainCreate(err, spec)
		log.note("%v", err)
		err = errors.Join(err, e.sweep(ctx, cloud, spec.Tags, log))
		log.close()
		return nil, err
	}
	dep := &deployed{sb: sb, d: d, spec: spec, gpus: max(d.GPUCount, 1), created: e.now(), log: log}
	e.track(dep)
	log.note("sandbox %s created", sb.ID())
	// Journaled by the runner before the long wait for health, so a later
	// apply (or `infercrane cleanup -state`) terminates it if this one dies.
	executor.ReportStarted(ctx, &executor.Server{DeploymentID: d.ID, BaseURL: localURL, Model: d.ModelID, Handle: sb.ID(),
		Info: map[string]string{"sandbox_id": sb.ID(), "app": spec.App}})
	dep.copyLogs()
	srv, err := e.startup(ctx, dep, bin)
	if err != nil {
		log.note("deploy failed: %v", err)
		return nil, errors.Join(err, e.teardown(ctx, dep))
	}
	return srv, nil
}

// startup copies the binary in, waits for /health and records the environment.
func (e *Executor) startup(ctx context.Context, dep *deployed, bin string) (*executor.Server, error) {
	if err := dep.sb.CopyIn(ctx, bin, RemoteBinary); err != nil {
		return nil, e.startupFailure(ctx, dep, fmt.Errorf("copying the infercrane binary in: %w", err))
	}
	for _, argv := range [][]string{{"chmod", "755", RemoteBinary}, {"mkdir", "-p", WorkDir + "/runs", WorkDir + "/traces"}} {
		if _, errOut, code, err := execOutput(ctx, dep.sb, argv, time.Minute); err != nil || code != 0 {
			return nil, e.startupFailure(ctx, dep, fmt.Errorf("preparing %s failed (%s: code %d, %v): %s", WorkDir, argv[0], code, err, clip(errOut, 200)))
		}
	}
	if err := e.waitHealthy(ctx, dep); err != nil {
		return nil, err
	}
	dep.healthy = e.now()
	info := e.environment(ctx, dep)
	return &executor.Server{
		DeploymentID: dep.d.ID,
		BaseURL:      localURL,
		Model:        dep.d.ModelID,
		Handle:       dep.sb.ID(),
		Info:         info,
	}, nil
}

// startupFailure explains a failed startup step, naming the server's exit
// when the sandbox has already stopped (a crashing vllm serve).
func (e *Executor) startupFailure(ctx context.Context, dep *deployed, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("modal executor: cancelled while starting the server in sandbox %s: %w", dep.sb.ID(), ctx.Err())
	}
	if exitErr := serverExited(ctx, dep); exitErr != nil {
		return exitErr
	}
	return fmt.Errorf("modal executor: sandbox %s: %w", dep.sb.ID(), err)
}

// serverExited returns an error when the sandbox's command has exited.
func serverExited(ctx context.Context, dep *deployed) error {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if code, exited, err := dep.sb.Poll(pctx); err == nil && exited {
		return fmt.Errorf("modal executor: vllm serve in sandbox %s exited with code %d before /health answered; the server's output is in %s", dep.sb.ID(), code, dep.log.where())
	}
	return nil
}

// explainCreate turns a failed Create into an error that says what to do.
func explainCreate(err error, spec SandboxSpec) error {
	switch {
	case errors.Is(err, ErrImage):
		return fmt.Errorf("modal executor: image %s could not be pulled: %w; check the runtime version or the executor's image attribute (the tag must exist on the registry)", spec.Image, err)
	case errors.Is(err, ErrCapacity):
		return fmt.Errorf("modal executor: no %s capacity on Modal, or rate limited, even after retries: %w; try again later, lower -parallelism, or choose another gpu, region or cloud", spec.GPU, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("modal executor: creating the sandbox was cancelled: %w", err)
	}
	return fmt.Errorf("modal executor: creating a %s sandbox failed: %w", spec.GPU, err)
}

// sweep terminates sandboxes of this deployment and apply that a failed
// Create may have left running (created, then failed to schedule or report).
func (e *Executor) sweep(ctx context.Context, cloud Cloud, tags map[string]string, log *runLog) error {
	if tags[TagApply] == "" || tags[TagDeployment] == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	infos, err := cloud.List(ctx, e.cfg.App, map[string]string{
		TagInfercrane: "1", TagApply: tags[TagApply], TagDeployment: tags[TagDeployment],
	})
	if err != nil {
		return fmt.Errorf("modal executor: could not check for sandboxes left by the failed create (%v); if one was left, %w", err, executor.ErrLeftRunning)
	}
	var errs []error
	for _, in := range infos {
		if e.tracked(in.ID) {
			continue
		}
		log.note("terminating sandbox %s left behind by the failed create", in.ID)
		sb, err := cloud.Attach(ctx, in.ID)
		if err == nil {
			_, err = e.terminateSandbox(ctx, sb)
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Teardown terminates the server's sandbox. It is idempotent, works after a
// failed Deploy and on a sandbox this process did not create.
func (e *Executor) Teardown(ctx context.Context, s *executor.Server) error {
	if s == nil || s.Handle == "" {
		return nil
	}
	if dep := e.lookup(s.Handle); dep != nil {
		return e.teardown(ctx, dep)
	}
	e.mu.Lock()
	gone := e.gone[s.Handle]
	e.mu.Unlock()
	if gone {
		return nil
	}
	cloud, err := e.getCloud()
	if err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	sb, err := cloud.Attach(tctx, s.Handle)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("modal executor: looking up sandbox %s to terminate it: %w; %w", s.Handle, err, executor.ErrLeftRunning)
	}
	_, err = e.terminateSandbox(tctx, sb)
	return err
}

// Close terminates every sandbox this executor still has running (io.Closer:
// the runner calls it after teardown, as a last resort; Teardown of each
// server is the normal path).
func (e *Executor) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e.mu.Lock()
	deps := make([]*deployed, 0, len(e.live))
	for _, d := range e.live {
		deps = append(deps, d)
	}
	e.mu.Unlock()
	var errs []error
	for _, d := range deps {
		errs = append(errs, e.teardown(ctx, d))
	}
	return errors.Join(errs...)
}

// Leftovers lists the running sandboxes tagged with applyID; after a clean
// apply it is empty. It feeds the evidence's cleanup section.
func (e *Executor) Leftovers(ctx context.Context, applyID string) ([]string, error) {
	cloud, err := e.getCloud()
	if err != nil {
		return nil, err
	}
	infos, err := cloud.List(ctx, e.cfg.App, map[string]string{TagInfercrane: "1", TagApply: applyID})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(infos))
	for i, in := range infos {
		ids[i] = in.ID
	}
	return ids, nil
}

func (e *Executor) track(d *deployed) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.live[d.sb.ID()] = d
}

func (e *Executor) lookup(id string) *deployed {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.live[id]
}

func (e *Executor) tracked(id string) bool { return e.lookup(id) != nil }

func (e *Executor) untrack(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.live, id)
	e.gone[id] = true
}
