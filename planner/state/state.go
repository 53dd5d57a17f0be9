// Package state defines the state directory that apply writes and plan
// reads (".infercrane/" next to the spec by default):
//
//	lock            JSON {pid, host, started_at} of the apply holding the state
//	journal.jsonl   append-only, fsynced journal; one JSON entry a line, each
//	                with a CRC so a torn or corrupt tail is detected
//	runs/LANE/N.jsonl   per-request records of run N of lane LANE, written and
//	                fsynced before the journal entry that names them
//	logs/           server and executor logs
//	reports/        evidence and reports of the last apply
//
// A run counts as complete only when its journal entry is intact.
package state

// DefaultDir is the state directory's name next to the spec.
const DefaultDir = ".infercrane"

// Snapshot is what the planner needs to know of a state directory.
type Snapshot struct {
	// Lanes are keyed by lane ID.
	Lanes map[string]*LaneRecord
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
}
