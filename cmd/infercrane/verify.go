package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/infercrane/infercrane/executor/evidence"
	"github.com/infercrane/infercrane/executor/report"
)

// addVerifyCommands registers the commands of this file (called by setupCommands).
func addVerifyCommands() {
	register(&command{
		Name:     "verify",
		Synopsis: "Check an evidence file's digest and files and, with -state, rebuild it field by field from the state",
		Run:      runVerify,
	})
	register(&command{
		Name:     "keygen",
		Synopsis: "Make an ed25519 key pair for signing evidence (report -sign, verify -key)",
		Run:      runKeygen,
	})
}

func runKeygen(env *cliEnv, args []string) int {
	fs := newFlags(env, "keygen", usageDoc{
		Usage: "infercrane keygen [flags]",
		About: "Writes an ed25519 key pair: PREFIX.key (PKCS #8 PEM, mode 0600; keep it private) and\n" +
			"PREFIX.pub (PKIX PEM; hand it to whoever verifies). openssl makes the same forms:\n" +
			"  openssl genpkey -algorithm ed25519 -out PREFIX.key && openssl pkey -in PREFIX.key -pubout -out PREFIX.pub",
		Examples: []string{"infercrane keygen -out signing", "infercrane keygen -out ci/signing -force"},
	})
	prefix := fs.String("out", "infercrane", "path prefix of the key files")
	force := fs.Bool("force", false, "overwrite existing key files")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return fs.usageError("keygen takes no arguments; name the files with -out PREFIX")
	}
	keyPath, pubPath := *prefix+".key", *prefix+".pub"
	if err := prepareOut(keyPath, false); err != nil {
		return fs.usageError("-out %s: %v", *prefix, err)
	}
	if !*force {
		for _, p := range []string{keyPath, pubPath} {
			if _, err := os.Stat(p); err == nil {
				fmt.Fprintf(env.Stderr, "infercrane keygen: %s exists; choose another -out or pass -force\n", p)
				return 1
			}
		}
	}
	priv, pub, err := evidence.GenerateKey()
	if err == nil {
		err = os.WriteFile(keyPath, priv, 0o600)
	}
	if err == nil {
		err = os.WriteFile(pubPath, pub, 0o644)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane keygen: %v\n", hinted(err))
		return 1
	}
	pk, _ := evidence.ParsePublicKey(pub)
	fmt.Fprintf(env.Stdout, "Wrote %s (private) and %s (public), key id %s.\n", keyPath, pubPath, evidence.KeyID(pk))
	return 0
}

// readKeyFile reads a PEM key file with parse.
func readKeyFile[K any](path string, parse func([]byte) (K, error)) (K, error) {
	var zero K
	b, err := os.ReadFile(path)
	if err != nil {
		return zero, err
	}
	k, err := parse(b)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", path, hinted(err))
	}
	return k, nil
}

func runVerify(env *cliEnv, args []string) int {
	fs := newFlags(env, "verify", usageDoc{
		Usage: "infercrane verify [flags] FILE",
		About: "Recomputes the digest of an evidence file and the SHA-256 of the files it names; with -state\n" +
			"also rebuilds the whole document from the state (plan, journal, records, cleanup) and names\n" +
			"every field that differs. Exit status 0 when all agree, 1 otherwise.",
		Examples: []string{
			"infercrane verify .infercrane/reports/quickstart.evidence.json",
			"infercrane verify -state .infercrane .infercrane/reports/quickstart.evidence.json",
			"infercrane verify -key signing.pub -state .infercrane .infercrane/reports/quickstart.evidence.json",
		},
	})
	stateDir := fs.String("state", "", "state directory the whole evidence document is rebuilt from and compared with")
	keyFile := fs.String("key", "", "public key (PEM) whose valid signature the evidence must carry (its DSSE envelope, FILE with .dsse.json)")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return fs.usageError("give exactly one evidence FILE, got %d", len(pos))
	}
	if err := dirGivenForFiles(pos[0], "evidence file", evidenceFiles...); err != nil {
		return fs.usageError("%v", err)
	}
	if *stateDir != "" {
		if err := refreshState(env, nil, *stateDir); err != nil {
			fmt.Fprintf(env.Stderr, "infercrane verify: %v\n", hinted(err))
			return 1
		}
	}
	res, err := report.Verify(pos[0], *stateDir)
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane verify: %v\n", hinted(specDirGivenForState(*stateDir, err)))
		return 1
	}
	if res.DigestOK {
		fmt.Fprintf(env.Stdout, "Digest OK: %s\n", res.Computed)
	} else {
		fmt.Fprintf(env.Stdout, "Digest MISMATCH: the file states %s but its content hashes to %s; the evidence was changed after it was written.\n", res.Recorded, res.Computed)
	}
	switch {
	case res.Recomputed && len(res.Differences) == 0:
		fmt.Fprintf(env.Stdout, "Fields OK: %d fields rebuilt from the state agree; %d file(s) match their SHA-256.\n", res.Checked, res.FilesChecked)
	case res.Recomputed:
		fmt.Fprintf(env.Stdout, "Fields DIFFER: %d difference(s) from the document the state gives (%d fields, %d files checked):\n", len(res.Differences), res.Checked, res.FilesChecked)
	case len(res.Differences) == 0:
		fmt.Fprintf(env.Stdout, "Files OK: %d file(s) beside the evidence match their SHA-256; pass -state to rebuild the whole document.\n", res.FilesChecked)
	default:
		fmt.Fprintf(env.Stdout, "Files DIFFER: %d difference(s):\n", len(res.Differences))
	}
	for _, d := range res.Differences {
		fmt.Fprintf(env.Stdout, "  %s\n", d)
	}
	if len(res.Predates) > 0 {
		fmt.Fprintf(env.Stdout, "Written before %s were added to the evidence: %d field(s) the state gives are absent, which is no difference:\n", strings.Join(report.AddedLater, ", "), len(res.Predates))
		for _, p := range res.Predates {
			fmt.Fprintf(env.Stdout, "  %s\n", p)
		}
	}
	ok = res.OK()
	if _, err := os.Stat(evidence.EnvelopeFile(pos[0])); err == nil && *keyFile == "" {
		// A signature beside the evidence is checked for its structure and
		// its subjects; only -key checks who signed it.
		sr, err := evidence.VerifySignature(pos[0], *stateDir, nil)
		switch {
		case err != nil:
			fmt.Fprintf(env.Stdout, "Signature envelope BROKEN (%s):\n  %v\n", filepath.Base(evidence.EnvelopeFile(pos[0])), hinted(err))
			ok = false
		case !sr.OK():
			fmt.Fprintf(env.Stdout, "Signature envelope BROKEN (%s):\n", filepath.Base(evidence.EnvelopeFile(pos[0])))
			for _, p := range sr.Problems {
				fmt.Fprintf(env.Stdout, "  %s\n", p)
			}
			ok = false
		default:
			fmt.Fprintf(env.Stdout, "Signature present, NOT CHECKED (pass -key to check it): the envelope is well-formed, names key %s, and %d subject(s) match their files.\n", sr.KeyID, sr.Subjects)
		}
	}
	if *keyFile != "" {
		pub, err := readKeyFile(*keyFile, evidence.ParsePublicKey)
		if err != nil {
			fmt.Fprintf(env.Stderr, "infercrane verify: %v\n", hinted(err))
			return 1
		}
		sr, err := evidence.VerifySignature(pos[0], *stateDir, pub)
		if err != nil {
			fmt.Fprintf(env.Stderr, "infercrane verify: %v\n", hinted(err))
			return 1
		}
		if sr.OK() {
			fmt.Fprintf(env.Stdout, "Signature OK: key %s signed %d subject(s) that match their files", sr.KeyID, sr.Subjects)
			if len(sr.Unchecked) > 0 {
				fmt.Fprintf(env.Stdout, "; %d in the state not checked (pass -state)", len(sr.Unchecked))
			}
			fmt.Fprintln(env.Stdout, ".")
		} else {
			fmt.Fprintln(env.Stdout, "Signature INVALID:")
			for _, p := range sr.Problems {
				fmt.Fprintf(env.Stdout, "  %s\n", p)
			}
			ok = false
		}
	}
	if !ok {
		return 1
	}
	return 0
}
