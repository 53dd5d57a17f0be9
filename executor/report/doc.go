// Package report turns the runs of a screen into evidence a reviewer can
// trust: the evidence document (package evidence, digest-stamped over its
// RFC 8785 canonical form), acceptance gates, and the Markdown, HTML and
// Parquet reports, all computed from the per-request records.
package report
