package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// comparisonFields are a Comparison's fixed members.
type comparisonFields struct {
	Profile        string `json:"profile"`
	GPU            string `json:"gpu"`
	Runtime        string `json:"runtime,omitempty"`
	Candidate      string `json:"candidate"`
	CandidateModel string `json:"candidate_model"`
	Baseline       string `json:"baseline"`
	BaselineModel  string `json:"baseline_model"`
}

// MarshalJSON writes the fixed members, then one member per ratio in name
// order, "<candidate>_over_<baseline>_<metric>": {metric, value, ci95, ...}.
func (c Comparison) MarshalJSON() ([]byte, error) {
	fixed, err := json.Marshal(comparisonFields{c.Profile, c.GPU, c.Runtime, c.Candidate, c.CandidateModel, c.Baseline, c.BaselineModel})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Write(fixed[:len(fixed)-1]) // without the closing brace
	for _, k := range slices.Sorted(maps.Keys(c.Ratios)) {
		if _, clash := fieldNames[k]; clash || !strings.Contains(k, "_over_") {
			return nil, fmt.Errorf("comparison ratio %q must be named <candidate>_over_<baseline>_<metric>", k)
		}
		name, _ := json.Marshal(k)
		val, err := json.Marshal(c.Ratios[k])
		if err != nil {
			return nil, err
		}
		buf.WriteByte(',')
		buf.Write(name)
		buf.WriteByte(':')
		buf.Write(val)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// fieldNames are the JSON names of comparisonFields.
var fieldNames = map[string]bool{"profile": true, "gpu": true, "runtime": true, "candidate": true, "candidate_model": true, "baseline": true, "baseline_model": true}

// UnmarshalJSON reads what MarshalJSON writes: members with "_over_" in
// their names are ratios.
func (c *Comparison) UnmarshalJSON(b []byte) error {
	var f comparisonFields
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	*c = Comparison{Profile: f.Profile, GPU: f.GPU, Runtime: f.Runtime, Candidate: f.Candidate, CandidateModel: f.CandidateModel,
		Baseline: f.Baseline, BaselineModel: f.BaselineModel, Ratios: map[string]Ratio{}}
	for k, v := range all {
		if !strings.Contains(k, "_over_") {
			continue
		}
		var r Ratio
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("comparison member %s: %w", k, err)
		}
		c.Ratios[k] = r
	}
	return nil
}
