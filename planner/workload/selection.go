package workload

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// SelectRowGroups applies the sampling rule of the public prior: row group
// i of k (k >= 2) is round((0.1 + 0.8*i/(k-1)) * (total-1)) with
// round-half-to-even, clamped to the file; k = 1 takes total/2. Duplicates
// (k close to total) are dropped, so the result is strictly increasing.
func SelectRowGroups(total, k int) ([]int, error) {
	if total < 1 {
		return nil, fmt.Errorf("the trace has no row groups")
	}
	if k < 1 {
		return nil, fmt.Errorf("row_groups must be at least 1 (got %d)", k)
	}
	k = min(k, total)
	if k == 1 {
		return []int{total / 2}, nil
	}
	seen := map[int]bool{}
	var out []int
	for i := range k {
		x := (0.1 + 0.8*float64(i)/float64(k-1)) * float64(total-1)
		g := min(total-1, max(0, int(math.RoundToEven(x))))
		if !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	sort.Ints(out)
	return out, nil
}

// ParseIndices parses "i,j,k" into strictly increasing row-group indices
// below total.
func ParseIndices(s string, total int) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, fmt.Errorf("row-group index %q is not an integer; write indices like 0,17,42", part)
		}
		out = append(out, n)
	}
	return CheckIndices(out, total)
}

// CheckIndices sorts and de-duplicates explicit row-group indices and checks
// they exist in a file of total row groups.
func CheckIndices(idx []int, total int) ([]int, error) {
	if len(idx) == 0 {
		return nil, fmt.Errorf("no row-group indices given")
	}
	out := append([]int(nil), idx...)
	sort.Ints(out)
	j := 0
	for i, n := range out {
		if n < 0 || n >= total {
			return nil, fmt.Errorf("row group %d does not exist: the trace has %d row groups (0..%d)", n, total, total-1)
		}
		if i == 0 || n != out[j-1] {
			out[j] = n
			j++
		}
	}
	return out[:j], nil
}

// AllRowGroups returns 0..total-1.
func AllRowGroups(total int) []int {
	out := make([]int, total)
	for i := range out {
		out[i] = i
	}
	return out
}
