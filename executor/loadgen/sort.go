package loadgen

import "sort"

func sortRecords(rs []Record) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Index < rs[j].Index })
}

func sortCalibrations(cs []Calibration) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].TargetTokens < cs[j].TargetTokens })
}
