package evidence

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Signed evidence is a DSSE envelope (github.com/secure-systems-lab/dsse)
// holding an in-toto Statement v1 whose subjects are the evidence file and
// every file it vouches for, signed with a local ed25519 key. Tools that
// read DSSE and in-toto (securesystemslib, in-toto, cosign's verify-blob
// attestation mode) check it without InferCrane.
const (
	// PayloadType is the DSSE payload type of an in-toto statement.
	PayloadType = "application/vnd.in-toto+json"
	// StatementType is the in-toto Statement v1 type.
	StatementType = "https://in-toto.io/Statement/v1"
	// PredicateType names InferCrane's predicate.
	PredicateType = "https://infercrane.dev/attestation/screen-evidence/v1"
	// StateSubjectPrefix starts the subject names of files in the state
	// directory ("state/runs/LANE/1.jsonl"); other names are relative to
	// the evidence file's directory.
	StateSubjectPrefix = "state/"
)

// The errors of reading keys and envelopes, which a command extends with
// how to make what is missing.
var (
	// ErrNotPrivateKey: the bytes are not a PEM "PRIVATE KEY" block.
	ErrNotPrivateKey = errors.New(`not a PEM "PRIVATE KEY"`)
	// ErrNotPublicKey: the bytes are not a PEM "PUBLIC KEY" block.
	ErrNotPublicKey = errors.New(`not a PEM "PUBLIC KEY"`)
	// ErrNoEnvelope: the evidence's signed envelope cannot be read.
	ErrNoEnvelope = errors.New("read the signed envelope")
)

// Envelope is a DSSE envelope.
type Envelope struct {
	PayloadType string          `json:"payloadType"`
	Payload     string          `json:"payload"` // standard base64
	Signatures  []DSSESignature `json:"signatures"`
}

// DSSESignature is one signature of an envelope.
type DSSESignature struct {
	KeyID string `json:"keyid"`
	Sig   string `json:"sig"` // standard base64
}

// Statement is an in-toto Statement v1.
type Statement struct {
	Type          string    `json:"_type"`
	Subject       []Subject `json:"subject"`
	PredicateType string    `json:"predicateType"`
	Predicate     Predicate `json:"predicate"`
}

// Subject is one signed file.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Predicate says what the evidence is.
type Predicate struct {
	SchemaVersion  string `json:"schema_version"`
	Screen         string `json:"screen"`
	EvidenceClass  string `json:"evidence_class"`
	EvidenceDigest string `json:"evidence_digest"`
	SpecDigest     string `json:"spec_digest"`
	PlanDigest     string `json:"plan_digest"`
	Complete       bool   `json:"complete"`
	ExitCode       int    `json:"exit_code"`
}

// PAE is DSSE's pre-authentication encoding, what is actually signed.
func PAE(payloadType string, payload []byte) []byte {
	return []byte(fmt.Sprintf("DSSEv1 %d %s %d %s", len(payloadType), payloadType, len(payload), payload))
}

// GenerateKey makes an ed25519 key pair: the private key as PKCS #8 PEM
// ("PRIVATE KEY"), the public key as PKIX PEM ("PUBLIC KEY"), the forms
// openssl and pyca/cryptography (hence securesystemslib) read.
func GenerateKey() (privPEM, pubPEM []byte, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	p8, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, err
	}
	pk, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pk}), nil
}

// ParsePrivateKey reads a PKCS #8 PEM ed25519 private key (as GenerateKey
// or `openssl genpkey -algorithm ed25519` writes it).
func ParsePrivateKey(b []byte) (ed25519.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, ErrNotPrivateKey
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("read the private key: %w", err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("the private key is a %T, not ed25519", k)
	}
	return ek, nil
}

// ParsePublicKey reads a PKIX PEM ed25519 public key (as GenerateKey or
// `openssl pkey -pubout` writes it).
func ParsePublicKey(b []byte) (ed25519.PublicKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PUBLIC KEY" {
		return nil, ErrNotPublicKey
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("read the public key: %w", err)
	}
	ek, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("the public key is a %T, not ed25519", k)
	}
	return ek, nil
}

// KeyID is the key's id as securesystemslib computes it by default: the
// hex SHA-256 of the canonical JSON {"keytype":"ed25519","keyval":
// {"public":HEX},"scheme":"ed25519"}.
func KeyID(pub ed25519.PublicKey) string {
	s := `{"keytype":"ed25519","keyval":{"public":"` + hex.EncodeToString(pub) + `"},"scheme":"ed25519"}`
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// EnvelopeFile is where the signed envelope of an evidence file is kept:
// beside it, SCREEN.evidence.dsse.json.
func EnvelopeFile(evidencePath string) string {
	return strings.TrimSuffix(evidencePath, ".json") + ".dsse.json"
}

// statementFor builds the statement of the evidence at evidencePath: the
// evidence itself, then every file its files[] names.
func statementFor(evidencePath string, raw []byte) (*Statement, error) {
	var ev Evidence
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, fmt.Errorf("%s is not evidence: %w", evidencePath, err)
	}
	sum := sha256.Sum256(raw)
	st := &Statement{Type: StatementType, PredicateType: PredicateType,
		Subject: []Subject{{Name: filepath.Base(evidencePath), Digest: map[string]string{"sha256": hex.EncodeToString(sum[:])}}},
		Predicate: Predicate{SchemaVersion: ev.SchemaVersion, Screen: ev.Screen, EvidenceClass: ev.EvidenceClass,
			EvidenceDigest: ev.Digest, SpecDigest: ev.SpecDigest, PlanDigest: ev.PlanDigest,
			Complete: ev.Completeness.Complete, ExitCode: ev.GateSummary.ExitCode}}
	for _, f := range ev.Files {
		name := f.Path
		if f.Base == BaseState {
			name = StateSubjectPrefix + f.Path
		}
		st.Subject = append(st.Subject, Subject{Name: name, Digest: map[string]string{"sha256": f.SHA256}})
	}
	return st, nil
}

// Sign returns the DSSE envelope, as indented JSON, that signs raw, the
// evidence file at path (named in its statement), with key. The caller
// writes it to EnvelopeFile(path).
func Sign(path string, raw []byte, key ed25519.PrivateKey) ([]byte, error) {
	st, err := statementFor(path, raw)
	if err != nil {
		return nil, err
	}
	payload, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	sig := ed25519.Sign(key, PAE(PayloadType, payload))
	env := Envelope{PayloadType: PayloadType, Payload: base64.StdEncoding.EncodeToString(payload),
		Signatures: []DSSESignature{{KeyID: KeyID(key.Public().(ed25519.PublicKey)), Sig: base64.StdEncoding.EncodeToString(sig)}}}
	b, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// FileSHA256 is the hex SHA-256 of the file at path.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// SignatureResult is what VerifySignature found.
type SignatureResult struct {
	// KeyID is the id of the key whose signature verified.
	KeyID string
	// Subjects counts the subjects whose files were hashed and agree;
	// Unchecked names those in the state directory when none was given.
	Subjects  int
	Unchecked []string
	// Problems name every failed check; empty means the signature holds.
	Problems []string
}

// OK reports whether the signature and every checked subject hold.
func (r *SignatureResult) OK() bool { return len(r.Problems) == 0 }

// VerifySignature checks the envelope of the evidence at path: a valid
// ed25519 signature by pub over the statement, the statement naming the
// evidence as its first subject, and every subject file (those under
// "state/" only with stateDir) hashing to its recorded SHA-256. With a nil
// pub the signature is not checked, only the envelope's structure: at
// least one signature of ed25519's size, a key id, and the rest as above
// (verify without -key).
func VerifySignature(path, stateDir string, pub ed25519.PublicKey) (*SignatureResult, error) {
	envPath := EnvelopeFile(path)
	b, err := os.ReadFile(envPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoEnvelope, err)
	}
	var env Envelope
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return nil, fmt.Errorf("%s is not a DSSE envelope: %w", envPath, err)
	}
	res := &SignatureResult{}
	if pub != nil {
		res.KeyID = KeyID(pub)
	}
	if env.PayloadType != PayloadType {
		res.Problems = append(res.Problems, fmt.Sprintf("payloadType is %q, not %q", env.PayloadType, PayloadType))
		return res, nil
	}
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		res.Problems = append(res.Problems, "the payload is not base64: "+err.Error())
		return res, nil
	}
	signed := false
	for _, s := range env.Signatures {
		sig, err := base64.StdEncoding.DecodeString(s.Sig)
		if pub == nil && err == nil && len(sig) == ed25519.SignatureSize && s.KeyID != "" {
			signed, res.KeyID = true, s.KeyID // well-formed; not checked
			break
		}
		if pub != nil && err == nil && ed25519.Verify(pub, PAE(env.PayloadType, payload), sig) {
			signed = true
			break
		}
	}
	if !signed && pub == nil {
		res.Problems = append(res.Problems, fmt.Sprintf("none of its %d signature(s) is a well-formed ed25519 signature with a key id", len(env.Signatures)))
		return res, nil
	}
	if !signed {
		res.Problems = append(res.Problems, fmt.Sprintf("no valid signature by key %s (of %d signature(s)): the envelope was changed or signed with another key", res.KeyID, len(env.Signatures)))
		return res, nil
	}
	var st Statement
	if err := json.Unmarshal(payload, &st); err != nil {
		res.Problems = append(res.Problems, "the signed payload is not an in-toto statement: "+err.Error())
		return res, nil
	}
	if st.Type != StatementType || st.PredicateType != PredicateType {
		res.Problems = append(res.Problems, fmt.Sprintf("the statement has _type %q and predicateType %q, want %q and %q", st.Type, st.PredicateType, StatementType, PredicateType))
	}
	if len(st.Subject) == 0 || st.Subject[0].Name != filepath.Base(path) {
		res.Problems = append(res.Problems, fmt.Sprintf("the statement's first subject is not %s", filepath.Base(path)))
	}
	for _, s := range st.Subject {
		p := filepath.Join(filepath.Dir(path), filepath.FromSlash(s.Name))
		if rel, ok := strings.CutPrefix(s.Name, StateSubjectPrefix); ok {
			if stateDir == "" {
				res.Unchecked = append(res.Unchecked, s.Name)
				continue
			}
			p = filepath.Join(stateDir, filepath.FromSlash(rel))
		}
		if strings.Contains(s.Name, "..") || filepath.IsAbs(s.Name) {
			res.Problems = append(res.Problems, fmt.Sprintf("subject %q is not a relative path", s.Name))
			continue
		}
		sum, err := FileSHA256(p)
		switch {
		case err != nil:
			res.Problems = append(res.Problems, fmt.Sprintf("subject %s: %v", s.Name, err))
		case sum != s.Digest["sha256"]:
			res.Problems = append(res.Problems, fmt.Sprintf("subject %s: the file hashes to %s, the signed statement says %s", s.Name, sum, s.Digest["sha256"]))
		default:
			res.Subjects++
		}
	}
	return res, nil
}
