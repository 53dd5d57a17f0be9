package affinity

import (
	"errors"
	"os"
	"os/exec"
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

// TestNice raises the nice value in a child process (a raise cannot be
// undone without privilege, so not in this one) and checks that every
// thread has it, including one the runtime starts afterwards.
func TestNice(t *testing.T) {
	if runtime.GOOS != "linux" {
		if err := Nice(1); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("Nice on %s: %v, want ErrUnsupported", runtime.GOOS, err)
		}
		return
	}
	if os.Getenv("AFFINITY_NICE_CHILD") == "1" {
		before, err := ThreadNice()
		if err != nil {
			t.Fatal(err)
		}
		want := 3
		for _, n := range before {
			want = max(want, n+3)
		}
		want = min(want, 19)
		if err := Nice(want); err != nil {
			t.Fatal(err)
		}
		// A thread started after the call inherits the value.
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			<-done
		}()
		for i := 0; i < 4; i++ {
			go func() { runtime.LockOSThread(); <-done }()
		}
		time.Sleep(20 * time.Millisecond)
		after, err := ThreadNice()
		close(done)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) < len(before) {
			t.Fatalf("%d threads after, %d before", len(after), len(before))
		}
		for tid, n := range after {
			if n != want {
				t.Errorf("thread %d has nice %d, want %d", tid, n, want)
			}
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNice$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "AFFINITY_NICE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestNice") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, n := range []int{-21, 20} {
		if err := Nice(n); err == nil || !strings.Contains(err.Error(), "out of the kernel's range") {
			t.Errorf("Nice(%d): %v, want a range error", n, err)
		}
	}
}
