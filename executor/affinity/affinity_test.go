package affinity

import (
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseCPUs(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
	}{
		{"2", []int{2}},
		{"0,2", []int{0, 2}},
		{"0-3", []int{0, 1, 2, 3}},
		{" 8-9 , 0-1,1 ", []int{0, 1, 8, 9}},
	} {
		got, err := ParseCPUs(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseCPUs(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
		if f := Format(got); !reflect.DeepEqual(mustParse(t, f), c.want) {
			t.Errorf("Format(%v) = %q does not parse back", got, f)
		}
	}
	for _, bad := range []string{"", "a", "3-1", "-1", "1-", "1,,2", "70000"} {
		if _, err := ParseCPUs(bad); err == nil {
			t.Errorf("ParseCPUs(%q) accepted", bad)
		}
	}
	if f := Format([]int{0, 1, 2, 5, 7, 8}); f != "0-2,5,7-8" {
		t.Errorf("Format = %q", f)
	}
}

func mustParse(t *testing.T, s string) []int {
	t.Helper()
	v, err := ParseCPUs(s)
	if err != nil {
		t.Fatalf("ParseCPUs(%q): %v", s, err)
	}
	return v
}

// TestPinAndSlice pins this test process to one of its CPUs, checks every
// thread (and one started afterwards) reports that CPU, and restores the
// mask; a CPU outside the allowed set is refused with the allowed list.
func TestPinAndSlice(t *testing.T) {
	if runtime.GOOS != "linux" {
		if err := Pin([]int{0}); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("Pin on %s: %v, want ErrUnsupported", runtime.GOOS, err)
		}
		return
	}
	allowed, err := Current()
	if err != nil || len(allowed) == 0 {
		t.Fatalf("Allowed: %v, %v", allowed, err)
	}
	defer func() {
		if err := Pin(allowed); err != nil {
			t.Errorf("restore the mask: %v", err)
		}
	}()
	one := allowed[len(allowed)-1]
	if err := Pin([]int{one}); err != nil {
		t.Fatal(err)
	}
	// A goroutine locked to a new OS thread runs on the pinned CPU too.
	done := make(chan []int)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		got, _ := Current()
		done <- got
	}()
	if got := <-done; !reflect.DeepEqual(got, []int{one}) {
		t.Errorf("a thread after Pin([%d]) may run on %v", one, got)
	}
	online, _ := Online()
	if err := Pin([]int{online[len(online)-1] + 1000}); err == nil || !strings.Contains(err.Error(), "online: "+Format(online)) {
		t.Errorf("pinning to a CPU that is not online: %v", err)
	}
	if err := Slice(100 * time.Microsecond); err != nil {
		t.Errorf("Slice(100us): %v", err)
	}
	if err := Slice(10 * time.Microsecond); err == nil {
		t.Error("Slice(10us) accepted; the kernel's range starts at 100us")
	}
}
