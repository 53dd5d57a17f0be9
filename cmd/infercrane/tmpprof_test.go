package main

import (
	"os"
	"runtime/pprof"
	"testing"
)

func TestTmpProfilePlan(t *testing.T) {
	dir := os.Getenv("TMPSPEC")
	if dir == "" {
		t.Skip()
	}
	f, _ := os.Create(os.Getenv("TMPPROF"))
	env := osEnv(productionWiring())
	null, _ := os.Create(os.DevNull)
	env.Stdout = null
	pprof.StartCPUProfile(f)
	for range 5 {
		if code := run(env, []string{"plan", dir}); code != 0 {
			t.Fatal(code)
		}
	}
	pprof.StopCPUProfile()
}
