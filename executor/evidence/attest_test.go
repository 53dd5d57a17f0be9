package evidence

import (
	"crypto/ed25519"
	"errors"
	"fmt"
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

// The package's errors are plain: what a command to run would make is the
// command's to say (cmd/infercrane's withSigningHint), so a library caller
// gets an error it can test with errors.Is and no CLI advice.
func TestKeyErrorsArePlain(t *testing.T) {
	privPEM, pubPEM, _ := GenerateKey()
	_, errPub := ParsePublicKey(privPEM)
	_, errPriv := ParsePrivateKey(pubPEM)
	_, errEnv := VerifySignature(filepath.Join(t.TempDir(), "none.evidence.json"), "", nil)
	for _, c := range []struct {
		err, is error
	}{{errPub, ErrNotPublicKey}, {errPriv, ErrNotPrivateKey}, {errEnv, ErrNoEnvelope}} {
		if !errors.Is(c.err, c.is) || strings.Contains(fmt.Sprint(c.err), "infercrane") {
			t.Errorf("%v: want an error that is %q and names no command", c.err, c.is)
		}
	}
}
