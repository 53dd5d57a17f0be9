package localcloud

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestFreePortIsBelowTheEphemeralRange: a sandbox's port comes from below
// the kernel's ephemeral range, where no bind to port 0 and no outgoing
// connection of another process can take it before the sandbox's server
// binds it. It failed before: the kernel's own pick (port 0) is always in
// that range.
func TestFreePortIsBelowTheEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skip("no ip_local_port_range here:", err)
	}
	start, _ := strconv.Atoi(strings.Fields(string(b))[0])
	if start < 11000 {
		t.Skipf("the ephemeral range starts at %d, leaving no room below it", start)
	}
	for range 20 {
		p, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if p < 10000 || p >= start {
			t.Fatalf("port %d, want one in [10000, %d)", p, start)
		}
	}
}
