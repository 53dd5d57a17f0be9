package report

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyIDMatchesSecuresystemslib pins the key id of the ed25519 key with
// seed 0x00..0x1f to the one securesystemslib 1.6.0 computes for it
// (SSlibKey.from_crypto(...).keyid), so envelopes name keys the way its
// Envelope.verify looks them up, without Python in the loop here.
func TestKeyIDMatchesSecuresystemslib(t *testing.T) {
	seed := make([]byte, 32)
	for i := range seed {
		seed[i] = byte(i)
	}
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	if got, want := KeyID(pub), "63d00ee3cf4f5c61ad94efa696c68f13b608fe56ecea13fb144a6fd18e9235b9"; got != want {
		t.Errorf("key id %s, securesystemslib gives %s", got, want)
	}
}

func TestKeysRoundTrip(t *testing.T) {
	privPEM, pubPEM, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	priv, err := ParsePrivateKey(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ParsePublicKey(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !pub.Equal(priv.Public()) {
		t.Error("the public key does not belong to the private key")
	}
	if _, err := ParsePublicKey(privPEM); err == nil {
		t.Error("a private key read as a public one")
	}
}

// TestSignedEvidence signs the fixture's evidence, verifies the envelope,
// and checks that a one-byte change to any subject file, to the signed
// payload, or another key makes verification fail.
func TestSignedEvidence(t *testing.T) {
	privPEM, pubPEM, _ := GenerateKey()
	priv, _ := ParsePrivateKey(privPEM)
	pub, _ := ParsePublicKey(pubPEM)
	dir, oc := generateFixture(t, Options{SigningKey: priv})
	path := evidenceFile(t, oc)
	envPath := EnvelopeFile(path)
	if !strings.HasSuffix(envPath, "s.evidence.dsse.json") || oc.Files[len(oc.Files)-1] != envPath {
		t.Fatalf("envelope %s not among the files written %v", envPath, oc.Files)
	}
	res, err := VerifySignature(path, dir, pub)
	if err != nil || !res.OK() || res.Subjects != 8 || len(res.Unchecked) != 0 {
		t.Fatalf("untouched: %v %+v", err, res)
	}
	if res, _ := VerifySignature(path, "", pub); !res.OK() || res.Subjects != 2 || len(res.Unchecked) != 6 {
		t.Errorf("without the state: %+v", res)
	}
	_, other, _ := GenerateKey()
	otherPub, _ := ParsePublicKey(other)
	if res, _ := VerifySignature(path, dir, otherPub); res.OK() || !strings.Contains(res.Problems[0], "no valid signature") {
		t.Errorf("another key: %+v", res)
	}
	// every subject, one byte changed
	var env Envelope
	b, _ := os.ReadFile(envPath)
	json.Unmarshal(b, &env)
	payload, _ := base64.StdEncoding.DecodeString(env.Payload)
	var st Statement
	json.Unmarshal(payload, &st)
	for _, s := range st.Subject {
		p := filepath.Join(filepath.Dir(path), s.Name)
		if rel, ok := strings.CutPrefix(s.Name, StateSubjectPrefix); ok {
			p = filepath.Join(dir, rel)
		}
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		changed := append([]byte(nil), orig...)
		changed[len(changed)/2] ^= 0x01
		os.WriteFile(p, changed, 0o644)
		res, err := VerifySignature(path, dir, pub)
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
	if res, _ := VerifySignature(path, dir, pub); res.OK() {
		t.Error("an edited payload verified")
	}
	os.Remove(envPath)
	if _, err := VerifySignature(path, dir, pub); err == nil || !strings.Contains(err.Error(), "report -sign") {
		t.Errorf("missing envelope: %v", err)
	}
}
