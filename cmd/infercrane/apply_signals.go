package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	plugin "github.com/hashicorp/go-plugin"

	"github.com/infercrane/infercrane/plugins/local"
)

// handleInterrupts makes SIGINT and SIGTERM stop an apply in three steps:
// the first cancels it (completed runs stay journaled, the run in flight is
// discarded, everything deployed is torn down), the second says what is
// still being cleaned up, the third force-quits after killing the server
// processes and plugins this process started. stop undoes the handler.
func handleInterrupts(env *cliEnv, cancel func(), busy func() []string) (stop func()) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-done:
				return
			case sig := <-ch:
				n++
				switch n {
				case 1:
					fmt.Fprintf(env.Stderr, "\nReceived %v: stopping. Completed runs are kept; the run in flight is discarded and redone next time; tearing down what was deployed. Interrupt again to see what is left, a third time to force quit.\n", sig)
					cancel()
				case 2:
					left := busy()
					if len(left) == 0 {
						left = []string{"finishing up"}
					}
					fmt.Fprintf(env.Stderr, "\nStill cleaning up: %s. Interrupt once more to force quit (servers this apply started are then killed; the state stays consistent).\n", strings.Join(left, "; "))
				default:
					fmt.Fprintln(env.Stderr, "\nForce quitting: killing the server processes and plugins this apply started. Re-run apply to resume.")
					local.KillAll()
					plugin.CleanupClients()
					os.Exit(130)
				}
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}
