package report

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infercrane/infercrane/executor/evidence"
)

// TestSignedEvidence signs the fixture's evidence, verifies the envelope,
// and checks that a one-byte change to any subject file, to the signed
// payload, or another key makes verification fail.
func TestSignedEvidence(t *testing.T) {
	privPEM, pubPEM, _ := evidence.GenerateKey()
	priv, _ := evidence.ParsePrivateKey(privPEM)
	pub, _ := evidence.ParsePublicKey(pubPEM)
	dir, oc := generateFixture(t, Options{SigningKey: priv})
	path := evidenceFile(t, oc)
	envPath := evidence.EnvelopeFile(path)
	if !strings.HasSuffix(envPath, "s.evidence.dsse.json") || oc.Files[len(oc.Files)-1] != envPath {
		t.Fatalf("envelope %s not among the files written %v", envPath, oc.Files)
	}
	res, err := evidence.VerifySignature(path, dir, pub)
	if err != nil || !res.OK() || res.Subjects != 8 || len(res.Unchecked) != 0 {
		t.Fatalf("untouched: %v %+v", err, res)
	}
	if res, _ := evidence.VerifySignature(path, "", pub); !res.OK() || res.Subjects != 2 || len(res.Unchecked) != 6 {
		t.Errorf("without the state: %+v", res)
	}
	_, other, _ := evidence.GenerateKey()
	otherPub, _ := evidence.ParsePublicKey(other)
	if res, _ := evidence.VerifySignature(path, dir, otherPub); res.OK() || !strings.Contains(res.Problems[0], "no valid signature") {
		t.Errorf("another key: %+v", res)
	}
	// every subject, one byte changed
	var env evidence.Envelope
	b, _ := os.ReadFile(envPath)
	json.Unmarshal(b, &env)
	payload, _ := base64.StdEncoding.DecodeString(env.Payload)
	var st evidence.Statement
	json.Unmarshal(payload, &st)
	for _, s := range st.Subject {
		p := filepath.Join(filepath.Dir(path), s.Name)
		if rel, ok := strings.CutPrefix(s.Name, evidence.StateSubjectPrefix); ok {
			p = filepath.Join(dir, rel)
		}
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		changed := append([]byte(nil), orig...)
		changed[len(changed)/2] ^= 0x01
		os.WriteFile(p, changed, 0o644)
		res, err := evidence.VerifySignature(path, dir, pub)
		if err != nil || res.OK() || !strings.Contains(strings.Join(res.Problems, "\n"), "subject "+s.Name+": the file hashes to") {
			t.Errorf("one byte of %s changed: %v %+v", s.Name, err, res)
		}
		os.WriteFile(p, orig, 0o644)
	}
	// the payload, one byte changed (re-encoded)
	payload[len(payload)/2] ^= 0x01
	env.Payload = base64.StdEncoding.EncodeToString(payload)
	b, _ = json.Marshal(env)
	os.WriteFile(envPath, b, 0o644)
	if res, _ := evidence.VerifySignature(path, dir, pub); res.OK() {
		t.Error("an edited payload verified")
	}
	os.Remove(envPath)
	if _, err := evidence.VerifySignature(path, dir, pub); !errors.Is(err, evidence.ErrNoEnvelope) {
		t.Errorf("missing envelope: %v", err)
	}
}
