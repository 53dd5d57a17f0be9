package loadgen

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzReadRecords: any input either fails with an error naming a line or
// gives records that survive a write/read round trip with an identical
// summary.
func FuzzReadRecords(f *testing.F) {
	var buf bytes.Buffer
	_ = WriteRecords(&buf, []Record{rec(0, 0, 50, 10, 5), {Index: 1, Status: 429, ErrorClass: FailRateLimited, Error: "x"}})
	f.Add(buf.Bytes())
	f.Add([]byte("{\"index\":1}\n\n{\"index\":2,\"open_loop\":true,\"scheduled_ns\":-5}\n"))
	f.Add([]byte("{\"index\":1,\"chunk_ns\":[1,2,3]} trailing"))
	f.Fuzz(func(t *testing.T, in []byte) {
		rs, err := ReadRecords(bytes.NewReader(in))
		if err != nil {
			if !strings.Contains(err.Error(), "records line") && !strings.Contains(err.Error(), "read records") {
				t.Fatalf("error does not name the line: %v", err)
			}
			return
		}
		var out bytes.Buffer
		if err := WriteRecords(&out, rs); err != nil {
			t.Fatal(err)
		}
		back, err := ReadRecords(&out)
		if err != nil {
			t.Fatalf("round trip: %v", err)
		}
		a, _ := json.Marshal(Compute(rs, SLO{TTFTMs: 1}))
		b, _ := json.Marshal(Compute(back, SLO{TTFTMs: 1}))
		if !bytes.Equal(a, b) {
			t.Fatalf("summary changed over a round trip:\n%s\n%s", a, b)
		}
	})
}

// FuzzParseTrace: a trace either fails with an error naming the trace or
// gives entries that are sorted, positive and finite.
func FuzzParseTrace(f *testing.F) {
	f.Add([]byte("{\"timestamp_ms\":0,\"input_tokens\":10,\"output_tokens\":5}\n{\"timestamp_ms\":12.5,\"input_tokens\":1,\"output_tokens\":1}\n"))
	f.Add([]byte("{\"timestamp_ms\":5,\"input_tokens\":1,\"output_tokens\":1}\n{\"timestamp_ms\":4,\"input_tokens\":1,\"output_tokens\":1}"))
	f.Add([]byte("{\"timestamp_ms\":-1,\"input_tokens\":0}"))
	f.Fuzz(func(t *testing.T, in []byte) {
		es, err := ParseTrace(bytes.NewReader(in), "fuzz")
		if err != nil {
			if !strings.Contains(err.Error(), "trace fuzz") {
				t.Fatalf("error does not name the trace: %v", err)
			}
			return
		}
		for i, e := range es {
			if e.InputTokens < 1 || e.OutputTokens < 1 || e.TimestampMs < 0 || (i > 0 && e.TimestampMs < es[i-1].TimestampMs) {
				t.Fatalf("entry %d accepted: %+v", i, e)
			}
		}
	})
}
