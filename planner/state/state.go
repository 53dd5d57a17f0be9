// Package state defines the state directory that apply writes and plan
// reads (".infercrane/" next to the spec by default):
//
//	lock            JSON {pid, host, started_at} of the apply holding the state;
//	                the lock itself is an flock(2) on the state directory's
//	                descriptor (a killed holder releases it, and deleting
//	                this file frees nothing)
//	journal.jsonl   append-only, fsynced journal; one JSON entry a line, each
//	                with a CRC so a torn or corrupt tail is detected
//	plan.json       the plan (with its spec snapshot) the last apply ran
//	runs/LANE/N.jsonl   per-request records of run N of lane LANE, written and
//	                fsynced before the journal entry that names them
//	logs/           server and executor logs
//	reports/        evidence and reports of the last apply
//
// A run counts as complete only when its journal entry is intact and its
// records file has the size the entry names. Readers use Load; the apply
// that holds the lock writes through a Store.
package state

import (
	"encoding/json"
	"sort"
)

// DefaultDir is the state directory's name next to the spec.
const DefaultDir = ".infercrane"

// File and directory names inside a state directory.
const (
	LockFile    = "lock"
	JournalFile = "journal.jsonl"
	PlanFile    = "plan.json"
	RunsDir     = "runs"
	LogsDir     = "logs"
	ReportsDir  = "reports"
)

// Snapshot is what the planner needs to know of a state directory.
type Snapshot struct {
	// Dir is the state directory the snapshot was read from.
	Dir string
	// Lanes are keyed by lane ID.
	Lanes map[string]*LaneRecord
	// Warnings name problems found while reading (a torn journal tail, a
	// missing records file); the affected runs are not counted as complete.
	Warnings []string
	// Applied is the plan the reports were last made from (plan.json, as
	// the last apply saved it, unchecked); nil when no apply has saved one. The
	// planner compares it with a new plan to see whether the reports need
	// re-evaluating although no lane runs (a gate edited, say).
	Applied json.RawMessage
}

// LaneRecord is the state of one lane.
type LaneRecord struct {
	ID  string
	Key string
	// Inputs are the lane's inputs as recorded when its runs were made, as a
	// flat JSON object (planner.LaneInputs), so the planner can name changes.
	Inputs map[string]any
	// Runs is the number of runs the lane was planned with.
	Runs int
	// Completed lists the run indices (1-based) whose journal entries are intact.
	Completed []int
	// Results holds the completed runs in run order, one per Completed index.
	Results []*RunRecord
	// Failed holds the runs whose last attempt failed and that have not
	// completed since, by run index.
	Failed map[int]*RunFailure
}

// RunRecord is one completed run as the journal recorded it.
type RunRecord struct {
	Lane       string `json:"lane"`
	Run        int    `json:"run"`
	Deployment string `json:"deployment,omitempty"`
	// Summary is the run's loadgen.Summary as JSON.
	Summary json.RawMessage `json:"summary"`
	// RecordsPath is the absolute path of the run's per-request records
	// (one loadgen.Record JSON object a line).
	RecordsPath string `json:"records_path"`
	// RecordsSHA256 is the hex SHA-256 of the records file.
	RecordsSHA256 string `json:"records_sha256"`
	// Server is what the executor reported of the server (runtime version,
	// GPU seen, ...).
	Server map[string]string `json:"server,omitempty"`
	// ServerMetrics are Prometheus samples scraped during the run.
	ServerMetrics map[string]float64 `json:"server_metrics,omitempty"`
	// ServerView is the run's loadgen.ServerView as JSON: the server's
	// latency histograms over the measured requests, when it has them.
	ServerView json.RawMessage `json:"server_view,omitempty"`
	// ServerSeries is the run's []loadgen.MetricSample as JSON: the
	// server's gauges (KV-cache usage, running and waiting requests)
	// scraped over the run, oldest first.
	ServerSeries json.RawMessage `json:"server_series,omitempty"`
	// GPUSeconds is the measured GPU time of the run, when known.
	GPUSeconds float64 `json:"gpu_seconds,omitempty"`
	// SearchLoad is the load of a capacity search's point (request rate
	// or concurrency); 0 for a run with the lane's fixed load.
	SearchLoad float64 `json:"search_load,omitempty"`
	StartedAt  string  `json:"started_at"`
	FinishedAt string  `json:"finished_at"`
}

// Complete reports whether run n (1-based) of the lane is complete.
func (l *LaneRecord) Complete(n int) bool {
	i := sort.SearchInts(l.Completed, n)
	return i < len(l.Completed) && l.Completed[i] == n
}

// LaneIDs returns the snapshot's lane IDs in sorted order.
func (s *Snapshot) LaneIDs() []string {
	ids := make([]string, 0, len(s.Lanes))
	for id := range s.Lanes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
