package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseFailAt parses a failure schedule such as "3=429,7=500": request
// number 3 is answered 429 and request number 7 is answered 500. Request
// numbers start at 1; statuses are 429, 500 or 503. The empty string is an
// empty schedule.
func ParseFailAt(s string) (map[int]int, error) {
	out := map[int]int{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, item := range strings.Split(s, ",") {
		num, st, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, fmt.Errorf("fail-at item %q is not REQUEST=STATUS; write e.g. 3=429,7=500", item)
		}
		n, err := strconv.Atoi(strings.TrimSpace(num))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("fail-at request number %q must be a whole number of at least 1", num)
		}
		code, err := strconv.Atoi(strings.TrimSpace(st))
		if err != nil {
			return nil, fmt.Errorf("fail-at status %q must be 429, 500 or 503", st)
		}
		if err := checkFailStatus(code); err != nil {
			return nil, err
		}
		if _, dup := out[n]; dup {
			return nil, fmt.Errorf("fail-at names request %d twice; give each request one status", n)
		}
		out[n] = code
	}
	return out, nil
}

// ParseStall parses a stall such as "10:500ms": every stream pauses for
// 500ms after its 10th token. The empty string is no stall.
func ParseStall(s string) (after int, d time.Duration, err error) {
	if strings.TrimSpace(s) == "" {
		return 0, 0, nil
	}
	a, ds, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return 0, 0, fmt.Errorf("stall %q is not TOKENS:DURATION; write e.g. 10:500ms", s)
	}
	after, err = strconv.Atoi(a)
	if err != nil || after < 0 {
		return 0, 0, fmt.Errorf("stall token count %q must be a whole number of at least 0", a)
	}
	d, err = time.ParseDuration(ds)
	if err != nil || d <= 0 {
		return 0, 0, fmt.Errorf("stall duration %q must be a positive Go duration such as 500ms", ds)
	}
	return after, d, nil
}
