package executor

import "time"

// Event types of an apply, in the order they can happen.
const (
	EventApplyStarted = "apply_started"
	// EventDeploymentReaped and EventReapFailed report deployments an
	// earlier apply left running (it died) that this apply tore down, or
	// failed to.
	EventDeploymentReaped = "deployment_reaped"
	EventReapFailed       = "reap_failed"
	EventLaneDropped      = "lane_dropped"
	EventDeployStarted    = "deploy_started"
	EventDeployFinished   = "deploy_finished"
	EventDeployFailed     = "deploy_failed"
	EventLaneStarted      = "lane_started"
	EventRunStarted       = "run_started"
	EventRunProgress      = "run_progress"
	EventRunFinished      = "run_finished"
	EventRunFailed        = "run_failed"
	EventLaneFinished     = "lane_finished"
	EventTeardownStarted  = "teardown_started"
	EventTeardownFinished = "teardown_finished"
	EventTeardownFailed   = "teardown_failed"
	EventNodeSkipped      = "node_skipped"
	EventNote             = "note"
	// EventSearchFinished says a capacity search's points decide it (its
	// Message has the verdict); the lane's remaining points are not run.
	EventSearchFinished = "search_finished"
	EventApplyFinished  = "apply_finished"
	// EventPlan and EventReportWritten are emitted by the CLI around the
	// runner's events: the plan about to be applied and the reports written.
	EventPlan          = "plan"
	EventReportWritten = "report_written"
)

// Event is one thing that happened during an apply. The -json stream is
// these, one a line; fields that do not apply are omitted.
type Event struct {
	Type       string    `json:"type"`
	Time       time.Time `json:"time"`
	Lane       string    `json:"lane,omitempty"`
	Key        string    `json:"key,omitempty"`
	Deployment string    `json:"deployment,omitempty"`
	Executor   string    `json:"executor,omitempty"`
	Node       string    `json:"node,omitempty"`
	Run        int       `json:"run,omitempty"`
	Runs       int       `json:"runs,omitempty"`
	// Progress of a run (run_progress, run_finished).
	Done   int `json:"done,omitempty"`
	Failed int `json:"failed,omitempty"`
	Total  int `json:"total,omitempty"`
	// RequestThroughput and OutputTokenThroughput of a finished run.
	RequestThroughput     float64 `json:"request_throughput,omitempty"`
	OutputTokenThroughput float64 `json:"output_token_throughput,omitempty"`
	// Live figures of a run (run_progress) or its final ones (run_finished):
	// output tokens so far, the recent output token rate and the median
	// TTFT of its succeeded requests so far.
	OutputTokens    int64   `json:"output_tokens,omitempty"`
	TokensPerSecond float64 `json:"tokens_per_second,omitempty"`
	TTFTP50Ms       float64 `json:"ttft_p50_ms,omitempty"`
	// ETASeconds is the apply's estimated time left, from the plan's
	// per-run estimates scaled by the run times measured so far; the CLI
	// sets it on run events (nil: not known yet).
	ETASeconds *float64 `json:"eta_s,omitempty"`
	// RunsDone counts the apply's runs completed so far (set with ETASeconds).
	RunsDone int `json:"runs_done,omitempty"`
	// Server is the base URL of a deployed server.
	Server string `json:"server,omitempty"`
	// Totals of the apply (apply_started, apply_finished).
	LanesToRun    int `json:"lanes_to_run,omitempty"`
	RunsToDo      int `json:"runs_to_do,omitempty"`
	RunsCompleted int `json:"runs_completed,omitempty"`
	RunsFailed    int `json:"runs_failed,omitempty"`
	// Elapsed is the seconds since the node (or the apply) started.
	Elapsed float64 `json:"elapsed_s,omitempty"`
	// WindowSeconds is a finished run's measurement window (run_finished):
	// from its first measured send to its last answer, warmup excluded,
	// what its throughputs are per.
	WindowSeconds float64 `json:"window_s,omitempty"`
	Error         string  `json:"error,omitempty"`
	// Interrupted marks a run_failed or deploy_failed event whose cause is
	// the apply's interruption (Ctrl-C, a signal), not the run or the
	// deployment: a re-run redoes it.
	Interrupted bool   `json:"interrupted,omitempty"`
	Message     string `json:"message,omitempty"`
	// Files are the reports written (report_written).
	Files []string `json:"files,omitempty"`
	// ExitCode is the gates' exit code (report_written) or the apply's
	// (apply_finished from the CLI).
	ExitCode *int `json:"exit_code,omitempty"`
}
