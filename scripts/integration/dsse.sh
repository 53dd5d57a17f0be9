#!/usr/bin/env bash
# Signed evidence checked by an independent implementation: installs
# securesystemslib (pinned in requirements-dsse.lock) into a cached virtual
# environment, runs a simulated screen signed with a fresh key, verifies the
# DSSE envelope and its in-toto statement with securesystemslib, then
# changes one byte of each subject file in turn and requires the verifier
# to fail. Cache: ${INFERCRANE_CACHE:-$HOME/.cache/infercrane}/dsse-HASH.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=scripts/integration
cache=${INFERCRANE_CACHE:-$HOME/.cache/infercrane}
hash=$(cat "$here/requirements-dsse.lock" | sha256sum | cut -c1-16)
venv=$cache/dsse-$hash
log() { echo "dsse: $*" >&2; }

if [ ! -x "$venv/bin/python" ]; then
  log "installing securesystemslib into $venv"
  rm -rf "$venv.tmp"
  python3 -m venv "$venv.tmp"
  "$venv.tmp/bin/pip" install -q --no-deps -r "$here/requirements-dsse.lock"
  mv "$venv.tmp" "$venv"
fi
py=$venv/bin/python

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/infercrane" ./cmd/infercrane
mkdir -p "$work/spec"
cat > "$work/spec/main.hcl" <<'HCL'
model "tiny" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "c1899de289a04d12100db370d81485cdf75e47ca"
  max_context = 4096
}
gpu "l40s" {
  type = "L40S"
}
shape "chat" {
  input_tokens      = 64
  output_tokens     = 8
  template_headroom = 64
  concurrency       = 2
  requests          = 4
}
screen "q" {
  models = [model.tiny]
  shapes = [shape.chat]
  gpus   = [gpu.l40s]
  runs   = 2
  seed   = 3
}
HCL
cd "$work"
./infercrane keygen -out k >/dev/null
INFERCRANE_SIGNING_KEY=k.key ./infercrane apply -auto-approve spec >apply.log
reports=spec/.infercrane/reports
state=spec/.infercrane
envelope=$reports/q.evidence.dsse.json
"$py" "$OLDPWD/$here/verify_dsse.py" "$envelope" k.pub "$reports" "$state"
./infercrane keygen -out other >/dev/null
if "$py" "$OLDPWD/$here/verify_dsse.py" "$envelope" other.pub "$reports" "$state" 2>/dev/null; then
  log "FAIL: another key verified"; exit 1
fi
n=0
for f in $("$py" "$OLDPWD/$here/verify_dsse.py" "$envelope" k.pub "$reports" "$state" --list); do
  cp "$f" "$f.orig"
  # one byte changed in the middle of the file
  size=$(stat -c %s "$f")
  "$py" -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[len(b)//2]^=1; open(p,"wb").write(b)' "$f"
  if "$py" "$OLDPWD/$here/verify_dsse.py" "$envelope" k.pub "$reports" "$state" 2>/dev/null; then
    log "FAIL: one byte changed in $f ($size bytes) still verified"; exit 1
  fi
  mv "$f.orig" "$f"
  n=$((n+1))
done
"$py" "$OLDPWD/$here/verify_dsse.py" "$envelope" k.pub "$reports" "$state" >/dev/null
log "OK: securesystemslib verified the envelope, rejected another key, and rejected a one-byte change to each of $n subject files"
