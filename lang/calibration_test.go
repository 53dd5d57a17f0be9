package lang

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCalibrationAttributes(t *testing.T) {
	for src, want := range map[string]string{
		`gpu "g" {
  type               = "L40S"
  calibration        = "c.json"
  calibration_digest = "sha256:` + strings.Repeat("a", 64) + `"
}`: "",
		`gpu "g" {
  type               = "L40S"
  calibration_digest = "sha256:` + strings.Repeat("a", 64) + `"
}`: "calibration_digest without calibration",
		`gpu "g" {
  type               = "L40S"
  calibration        = "c.json"
  calibration_digest = "md5:1"
}`: "Invalid value for calibration_digest",
		`runtime "r" {
  engine      = "vllm"
  calibration = "c.json"
}`: "Calibration is not pinned",
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, diags := Load(dir, Options{})
		switch {
		case want == "":
			if cfg.GPUs["g"].Calibration == nil || cfg.GPUs["g"].Calibration.File != "c.json" || cfg.GPUs["g"].Calibration.FileRange.Start.Line != 3 {
				t.Errorf("valid calibration: %v %+v", diags, cfg.GPUs["g"])
			}
		default:
			found := false
			for _, d := range diags {
				found = found || (d.Summary == want && d.Subject != nil)
			}
			if !found {
				t.Errorf("%s: got %v, want %q with a source range", src, diags, want)
			}
		}
	}
}

// TestModelConfigAttributes: a model block's config and config_digest pin
// a config.json the way calibration pins a fit, with the same diagnostics.
func TestModelConfigAttributes(t *testing.T) {
	digest := "sha256:" + strings.Repeat("b", 64)
	for src, want := range map[string]string{
		`model "m" {
  id            = "org/x"
  config        = "models/x/config.json"
  config_digest = "` + digest + `"
}`: "",
		`model "m" {
  id            = "org/x"
  config_digest = "` + digest + `"
}`: "config_digest without config",
		`model "m" {
  id            = "org/x"
  config        = "models/x/config.json"
  config_digest = "sha1:1"
}`: "Invalid value for config_digest",
		`model "m" {
  id     = "org/x"
  config = "models/x/config.json"
}`: "Config is not pinned",
		`model "m" {
  id     = "org/x"
  config = " "
}`: "Invalid value for config",
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, diags := Load(dir, Options{})
		if want == "" {
			c := cfg.Models["m"].Config
			if diags.HasErrors() || c == nil || c.File != "models/x/config.json" || c.Digest != digest || c.FileRange.Start.Line != 3 || c.DigestRange.Start.Line != 4 {
				t.Errorf("valid config: %v %+v", diags, c)
			}
			continue
		}
		found := false
		for _, d := range diags {
			found = found || (d.Summary == want && d.Subject != nil)
		}
		if !found {
			t.Errorf("%s: got %v, want %q with a source range", src, diags, want)
		}
	}
}
