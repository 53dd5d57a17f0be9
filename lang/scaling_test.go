package lang

import "testing"

// Loading a screen that lists twice the models allocates about twice as
// much: finding which block a listed reference names does not unmark and
// compare every declared block (it did: quadratic in the list, 3.8x the
// time for 2x the models at 10,000 lanes). Allocation counts, unlike
// times, do not depend on the machine's load.
func TestScreenListsLoadInLinearAllocations(t *testing.T) {
	allocs := func(models int) float64 {
		src := bigSpec(2, models)
		return testing.AllocsPerRun(1, func() {
			if _, d := LoadSource(".", "main.hcl", src, testOptions()); d.HasErrors() {
				t.Fatal(d)
			}
		})
	}
	small, large := allocs(300), allocs(600)
	if r := large / small; r > 2.2 {
		t.Fatalf("a screen of 600 models allocates %.0f times, %.2fx the %.0f of 300 (want at most 2.2x: linear)", large, r, small)
	}
}
