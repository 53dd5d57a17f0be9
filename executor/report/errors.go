package report

import "errors"

// The kinds of error a document is refused with; the CLI follows each
// with what to run about it (errors.Is).
var (
	// ErrNotEvidence: the file is not an evidence document this
	// infercrane reads.
	ErrNotEvidence = errors.New("is not an evidence document")
	// ErrEvidenceChanged: the evidence's content does not give the digest
	// it states: it was changed after it was written.
	ErrEvidenceChanged = errors.New("the evidence was changed after it was written")
)
