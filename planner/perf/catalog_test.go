package perf

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLookupGPUReadsVendorSpellings: the names nvidia-smi, torch and
// cloud consoles print for a catalog part find it; a spelling of another
// part (a PCIe or NVL H100, an A100 without its memory size among the
// vendor forms, a memory size the part does not come in) finds nothing,
// so the catalog's figures are never taken for a part they do not
// describe.
func TestLookupGPUReadsVendorSpellings(t *testing.T) {
	for name, want := range map[string]string{
		"NVIDIA H100 80GB HBM3":   "H100",
		"H100-SXM5-80GB":          "H100",
		"h100_sxm":                "H100",
		"NVIDIA A100-SXM4-80GB":   "A100-80GB",
		"NVIDIA A100-SXM4-40GB":   "A100-40GB",
		"A100 80GB":               "A100-80GB",
		"A100-80G":                "A100-80GB",
		"A100":                    "A100-40GB", // Modal's name for the 40 GB part
		"NVIDIA H200":             "H200",
		"NVIDIA H200 141GB HBM3e": "H200",
		"NVIDIA B200":             "B200",
		"Tesla T4":                "T4",
		"NVIDIA A10G":             "A10",
		"NVIDIA L40S":             "L40S",
		"NVIDIA L4":               "L4",
		"l40s":                    "L40S",
	} {
		g, ok := LookupGPU(name)
		if !ok || g.Name != want {
			t.Errorf("LookupGPU(%q) = %q, %v; want %q", name, g.Name, ok, want)
		}
	}
	for _, name := range []string{"H100 PCIe", "NVIDIA H100 NVL", "H100-PCIE-80GB", "A100-SXM4", "NVIDIA A100 PCIe 80GB",
		"H100 94GB", "NVIDIA H200 NVL", "NVIDIA", "Tesla", "RTX 4090", "A100-80GB-SXM4-extra", ""} {
		if g, ok := LookupGPU(name); ok {
			t.Errorf("LookupGPU(%q) = %q; want no part", name, g.Name)
		}
	}
}

// FuzzLookupGPU: any name either finds nothing or finds a catalog part
// that its own catalog name finds again.
func FuzzLookupGPU(f *testing.F) {
	for _, s := range []string{"NVIDIA H100 80GB HBM3", "A100-SXM4-40GB", "Tesla T4", "H100 PCIe", "l40s", "NVIDIA NVIDIA", "-", "B200_192G"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		g, ok := LookupGPU(name)
		if !ok {
			return
		}
		again, ok := LookupGPU(g.Name)
		if !ok || again.Name != g.Name {
			t.Fatalf("LookupGPU(%q) = %q, which finds %q, %v", name, g.Name, again.Name, ok)
		}
	})
}

// TestCatalogAsDocumented: docs/performance-model.md's table of the GPU
// catalog gives each part's peak, bandwidth and efficiencies as the
// catalog has them, so a change of a figure fails until the page says so.
func TestCatalogAsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "performance-model.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, g := range gpus {
		elementwise := "in the MFU"
		if g.ElementwiseEfficiency > 0 {
			elementwise = fmt.Sprintf("%.2f", g.ElementwiseEfficiency)
		}
		row := fmt.Sprintf("| %s | %s | %s | %.2f | %.2f | %s |", g.Name, num(g.BF16TFLOPS), num(g.BandwidthGBs), g.PrefillMFU, g.DecodeEfficiency, elementwise)
		if !strings.Contains(doc, row) {
			t.Errorf("docs/performance-model.md's GPU table lacks the row beginning %q", row)
		}
	}
}
