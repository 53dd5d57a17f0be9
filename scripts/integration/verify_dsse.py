"""Verify an InferCrane signed evidence envelope with securesystemslib,
independently of InferCrane's own code: the DSSE signature by the given
ed25519 public key (PEM), the in-toto Statement v1 it carries, and the
SHA-256 of every subject file.

usage: verify_dsse.py ENVELOPE PUBKEY REPORT_DIR STATE_DIR [--list]
Subject names are relative to REPORT_DIR, or under "state/" to STATE_DIR.
--list prints the subject files' paths (one a line) and exits.
Exit 0 when everything holds, 1 otherwise (with the reason on stderr).
"""
import hashlib
import json
import os
import sys

from cryptography.hazmat.primitives.serialization import load_pem_public_key
from securesystemslib.dsse import Envelope
from securesystemslib.signer import SSlibKey

STATEMENT = "https://in-toto.io/Statement/v1"
PAYLOAD = "application/vnd.in-toto+json"


def fail(msg):
    print("verify_dsse: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    args = [a for a in sys.argv[1:] if a != "--list"]
    if len(args) != 4:
        fail(__doc__)
    env_path, key_path, report_dir, state_dir = args
    with open(key_path, "rb") as f:
        key = SSlibKey.from_crypto(load_pem_public_key(f.read()))
    with open(env_path) as f:
        env = Envelope.from_dict(json.load(f))
    if "--list" not in sys.argv:
        try:
            env.verify([key], 1)
        except Exception as e:  # VerificationError and friends
            fail("signature: %s" % e)
    if env.payload_type != PAYLOAD:
        fail("payloadType %r" % env.payload_type)
    st = json.loads(env.payload)
    if st.get("_type") != STATEMENT:
        fail("_type %r" % st.get("_type"))
    subjects = st.get("subject") or []
    if not subjects:
        fail("the statement has no subjects")
    for s in subjects:
        name = s["name"]
        if name.startswith("state/"):
            path = os.path.join(state_dir, name[len("state/"):])
        else:
            path = os.path.join(report_dir, name)
        if "--list" in sys.argv:
            print(path)
            continue
        with open(path, "rb") as f:
            got = hashlib.sha256(f.read()).hexdigest()
        if got != s["digest"]["sha256"]:
            fail("subject %s: sha256 %s, signed %s" % (name, got, s["digest"]["sha256"]))
    if "--list" not in sys.argv:
        print("verify_dsse: OK: key %s, %d subject(s), predicate %s" % (key.keyid, len(subjects), st.get("predicateType")))


if __name__ == "__main__":
    main()
