package planner

import "errors"

// The kinds of error a plan file can be refused with. The messages say
// what is wrong; the CLI adds what to run about it (errors.Is).
var (
	// ErrNotPlan: the file is no plan infercrane wrote, or holds none.
	ErrNotPlan = errors.New("is not an infercrane plan")
	// ErrPlanFormat: the plan is of a format this infercrane does not
	// read, or reads but does not apply.
	ErrPlanFormat = errors.New("a plan format this infercrane does not take")
	// ErrPlanEdited: the plan's digests do not match its content.
	ErrPlanEdited = errors.New("was edited after it was made")
)
