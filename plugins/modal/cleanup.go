package modal

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

// CleanupOptions select the sandboxes Cleanup terminates.
type CleanupOptions struct {
	App string // Modal App to look in (default DefaultApp)
	// OlderThan keeps sandboxes younger than this (0: every tagged sandbox).
	OlderThan time.Duration
	// DryRun lists without terminating.
	DryRun bool
	// Now is the reference time (default time.Now).
	Now time.Time
	// Terminate sets how failed terminates are retried (zero: DefaultTerminateBackoff).
	Terminate Backoff
}

// CleanupItem is one tagged sandbox and what Cleanup did with it.
type CleanupItem struct {
	ID         string `json:"id"`
	Screen     string `json:"screen,omitempty"`
	Deployment string `json:"deployment,omitempty"`
	Apply      string `json:"apply,omitempty"`
	CreatedAt  string `json:"created_at,omitempty"`
	// AgeSeconds is -1 when the sandbox has no readable created_at tag.
	AgeSeconds float64 `json:"age_seconds"`
	// Action is "terminated", "would terminate", "kept (younger)" or "failed".
	Action string `json:"action"`
	Error  string `json:"error,omitempty"`
}

// Cleanup actions.
const (
	ActionTerminated = "terminated"
	ActionWould      = "would terminate"
	ActionKept       = "kept (younger)"
	ActionFailed     = "failed"
)

// CleanupReport is the outcome of Cleanup.
type CleanupReport struct {
	App        string        `json:"app"`
	DryRun     bool          `json:"dry_run"`
	OlderThan  string        `json:"older_than,omitempty"`
	Sandboxes  []CleanupItem `json:"sandboxes"`
	Terminated int           `json:"terminated"`
	Failed     int           `json:"failed"`
	// Listed is true once Modal answered the listing; when false the report
	// says nothing about what is running and must not be shown as a result.
	Listed bool `json:"-"`
}

// Cleanup finds running sandboxes tagged infercrane=1 in the app (left by a
// crashed or killed apply) and terminates those older than opts.OlderThan.
// A sandbox without a readable created_at tag counts as old. The error is
// non-nil when listing failed or any terminate failed after retries.
func Cleanup(ctx context.Context, cloud Cloud, opts CleanupOptions) (CleanupReport, error) {
	if opts.App == "" {
		opts.App = DefaultApp
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	if opts.Terminate.Attempts == 0 {
		opts.Terminate = DefaultTerminateBackoff
	}
	rep := CleanupReport{App: opts.App, DryRun: opts.DryRun, Sandboxes: []CleanupItem{}}
	if opts.OlderThan > 0 {
		rep.OlderThan = opts.OlderThan.String()
	}
	infos, err := cloud.List(ctx, opts.App, map[string]string{TagInfercrane: "1"})
	if err != nil {
		return rep, fmt.Errorf("modal cleanup: listing the sandboxes of app %s failed: %w", opts.App, err)
	}
	rep.Listed = true
	sort.Slice(infos, func(i, j int) bool { return infos[i].ID < infos[j].ID })
	e := &Executor{terminate: opts.Terminate}
	var errs []error
	for _, in := range infos {
		it := CleanupItem{ID: in.ID, Screen: in.Tags[TagScreen], Deployment: in.Tags[TagDeployment], Apply: in.Tags[TagApply], CreatedAt: in.Tags[TagCreatedAt], AgeSeconds: -1}
		if t, err := time.Parse(time.RFC3339, it.CreatedAt); err == nil {
			it.AgeSeconds = max(0, opts.Now.Sub(t).Seconds()) // a clock ahead of ours means new
		}
		switch {
		case it.AgeSeconds >= 0 && it.AgeSeconds < opts.OlderThan.Seconds():
			it.Action = ActionKept
		case opts.DryRun:
			it.Action = ActionWould
		default:
			sb, err := cloud.Attach(ctx, in.ID)
			if err == nil {
				_, err = e.terminateSandbox(ctx, sb)
			}
			switch {
			case err == nil, errors.Is(err, ErrNotFound):
				it.Action = ActionTerminated
				rep.Terminated++
			default:
				it.Action, it.Error = ActionFailed, err.Error()
				rep.Failed++
				errs = append(errs, err)
			}
		}
		rep.Sandboxes = append(rep.Sandboxes, it)
	}
	if len(errs) > 0 {
		return rep, fmt.Errorf("modal cleanup: %d of %d sandboxes could not be terminated: %w", rep.Failed, len(infos), errors.Join(errs...))
	}
	return rep, nil
}
