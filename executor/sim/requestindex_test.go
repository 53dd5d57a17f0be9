package sim

import (
	"net/http/httptest"
	"testing"
)

// The engine numbers a request as the load generator did (its
// X-Request-Id), so its delay draw is the planner's; a request from
// another client, or with a header of another form, takes the engine's
// own count.
func TestRequestIndexFollowsTheLoadGenerator(t *testing.T) {
	for _, c := range []struct {
		header string
		id     uint64
		want   int
	}{
		{"infercrane-0", 9, 0},
		{"infercrane-17", 3, 17},
		{"", 5, 4},
		{"infercrane--2", 5, 4},
		{"infercrane-x", 5, 4},
		{"client-17", 1, 0},
	} {
		r := httptest.NewRequest("POST", "/v1/completions", nil)
		if c.header != "" {
			r.Header.Set("X-Request-Id", c.header)
		}
		if got := requestIndex(r, c.id); got != c.want {
			t.Errorf("X-Request-Id %q, request %d: index %d, want %d", c.header, c.id, got, c.want)
		}
	}
}
