package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// ReadConfig decodes a Config sent as JSON: the typed message by which the
// load to generate travels from the plan to a load generator in another
// process (the modal executor's sandbox, `infercrane bench --config`,
// infercrane-loadgen). Unknown fields and trailing data are errors, so a
// setting a newer sender added is never dropped silently.
func ReadConfig(r io.Reader) (Config, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("the load generator config is not valid JSON of loadgen.Config: %w", err)
	}
	if dec.More() {
		return Config{}, fmt.Errorf("the load generator config has data after its JSON object")
	}
	return c, nil
}

// ReadConfigFile is ReadConfig of a file ("-" reads stdin).
func ReadConfigFile(path string, stdin io.Reader) (Config, error) {
	if path == "-" {
		return ReadConfig(stdin)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read the load generator config: %w", err)
	}
	return ReadConfig(bytes.NewReader(b))
}

// MarshalConfig encodes c for ReadConfig (the API key is never included).
func MarshalConfig(c Config) ([]byte, error) { return json.Marshal(c) }

// WriteRecordsFile writes per-request records as JSONL to path.
func WriteRecordsFile(path string, recs []Record) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write records: %w", err)
	}
	if err := WriteRecords(f, recs); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// String is the one-line progress report the command-line load generators
// print: "bench: 12/32 done, 0 errors, 4 in flight, 310 tok/s, 2.0s".
func (p Progress) String() string {
	phase := "bench"
	if p.Warmup {
		phase = "warmup"
	}
	total := "?"
	if p.Total > 0 {
		total = fmt.Sprint(p.Total)
	}
	return fmt.Sprintf("%s: %d/%s done, %d errors, %d in flight, %.0f tok/s, %.1fs",
		phase, p.Done, total, p.Errors, p.InFlight, p.TokensPerSecond, p.Elapsed.Seconds())
}
