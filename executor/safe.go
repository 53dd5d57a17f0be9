package executor

import (
	"context"
	"fmt"
	"runtime/debug"
)

// PanicError is an executor panic turned into an error so the runner can
// still tear down.
type PanicError struct {
	Op    string
	Value any
	Stack string
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("executor panicked in %s: %v", e.Op, e.Value)
}

func protect(op string, err *error) {
	if v := recover(); v != nil {
		*err = &PanicError{Op: op, Value: v, Stack: string(debug.Stack())}
	}
}

func safeOpen(ctx context.Context, open Opener, typ string, cfg map[string]any) (x Executor, err error) {
	defer protect("Open", &err)
	return open(ctx, typ, cfg)
}

func safeDeploy(ctx context.Context, x Executor, d Deployment) (s *Server, err error) {
	defer protect("Deploy", &err)
	s, err = x.Deploy(ctx, d)
	if err == nil && s == nil {
		err = fmt.Errorf("executor returned no server and no error from Deploy")
	}
	return s, err
}

func safeRun(ctx context.Context, x Executor, s *Server, r RunSpec) (res *RunResult, err error) {
	defer protect("Run", &err)
	res, err = x.Run(ctx, s, r)
	if err == nil && res == nil {
		err = fmt.Errorf("executor returned no result and no error from Run")
	}
	return res, err
}

func safeTeardown(ctx context.Context, x Executor, s *Server) (err error) {
	defer protect("Teardown", &err)
	return x.Teardown(ctx, s)
}
