package executor

// Whether a run measured the server or only found it gone. The rule is the
// same for every executor (sim, endpoint, local, modal, plugins) and lives
// here, applied by the runner to every run's result:
//
//   - A request that got no HTTP answer at all because no connection could
//     be made or kept (failure class "connection": refused, reset before any
//     answer, unreachable) says the server was not there: the run is an
//     infrastructure failure.
//   - A run with failed requests whose server no longer answers right after
//     it (the executor's probe, RunResult.ServerLost) is one too: its broken
//     streams were the server going away.
//   - Requests the server answered with errors (429, 5xx, a stream broken
//     off while the server stayed up, a timeout under load, a context
//     overflow) measure the server: the run counts and the gates judge it.
//
// An infrastructure failure is journaled as a failed run, never as a
// measurement, and the next apply redoes it.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/infercrane/infercrane/executor/loadgen"
)

// UnreachableError is the infrastructure failure of a run during which the
// server could not be reached (see InfrastructureFailure).
type UnreachableError struct {
	// Why says what showed the server was gone.
	Why string
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("the server was unreachable during the run (%s); that is a failure of the infrastructure, not a measurement of the server: the run is journaled as failed and the next apply redoes it once the server answers again", e.Why)
}

// InfrastructureFailure returns an *UnreachableError when a run's result
// shows that the server was unreachable during it: some request failed
// with class connection, or the executor found the server not answering
// after a run with failed requests (res.ServerLost). It returns nil for a
// run that measured the server, failed requests included.
func InfrastructureFailure(res *RunResult) error {
	s := res.Summary
	if n := s.Failures[loadgen.FailConnection]; n > 0 {
		return &UnreachableError{Why: fmt.Sprintf("%d of %d requests got no answer: the connection was refused, reset or could not be made; failures: %s", n, s.Requests, FailureText(s.Failures))}
	}
	if res.ServerLost != "" {
		return &UnreachableError{Why: fmt.Sprintf("%d of %d requests failed (%s) and then the server did not answer %s", s.Failed, s.Requests, FailureText(s.Failures), res.ServerLost)}
	}
	return nil
}

// probeTimeout bounds ProbeServer.
const probeTimeout = 5 * time.Second

// ProbeServer asks the server GET /v1/models once (with apiKey as a bearer
// token when set) and returns an error when no HTTP answer comes within 5
// seconds. Any answer, an error status included, means the server is
// there. Executors whose server is reachable from their process call it
// after a run with failed requests (RunLoad does) and set
// RunResult.ServerLost from its error.
func ProbeServer(ctx context.Context, s *Server, apiKey string) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.BaseURL+"/v1/models", nil)
	if err != nil {
		return err
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.Body.Close()
}
