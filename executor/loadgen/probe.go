package loadgen

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Probe GETs url once and succeeds on a 2xx answer. The modal executor runs
// it inside sandboxes as `infercrane-loadgen probe URL` (or `infercrane
// probe URL`) to wait for vLLM's /health. Its errors name the URL once
// (the transport's own errors already do); the caller names the probe.
func Probe(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}
