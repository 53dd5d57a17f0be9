#!/usr/bin/env bash
# The state backend against an independent S3 implementation: installs
# moto's server (pinned in requirements-s3.lock) into a cached virtual
# environment, starts it on 127.0.0.1, and runs the backend's end-to-end
# tests against it (two clones, a SIGKILLed holder and a resume from the
# other clone, init's migration both ways, the kill matrix's backend kind).
# make test runs the same tests against gofakes3 in-process; this checks
# that what they rely on (conditional PUTs with If-None-Match and If-Match,
# ETags, metadata, paging) holds on another server too.
#
# MinIO is not used: no registry this project reaches ships a MinIO server
# (Debian has only its Go client libraries, PyPI only its Python client),
# and building it from the Go module proxy means compiling its whole
# module graph on every fresh CI machine.
# Cache: ${INFERCRANE_CACHE:-$HOME/.cache/infercrane}/s3-HASH.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=scripts/integration
cache=${INFERCRANE_CACHE:-$HOME/.cache/infercrane}
hash=$(sha256sum < "$here/requirements-s3.lock" | cut -c1-16)
venv=$cache/s3-$hash
log() { echo "s3: $*" >&2; }

# A venv's scripts name their interpreter by path, so it is built in place;
# .complete marks an install that finished.
if [ ! -f "$venv/.complete" ]; then
  log "installing moto's server into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --no-deps -r "$here/requirements-s3.lock"
  touch "$venv/.complete"
fi

work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$work/moto.log" 2>&1 &
moto=$!
trap 'kill $moto 2>/dev/null; wait $moto 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do
  if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/moto-api/')" 2>/dev/null; then break; fi
  sleep 0.2
done
log "moto $("$venv/bin/python" -c 'import moto; print(moto.__version__)') on 127.0.0.1:$port"
INFERCRANE_TEST_S3_ENDPOINT=http://127.0.0.1:$port \
  go test -count=1 -v -timeout 20m \
  -run '^(TestTeamWorkflowOnTheS3Backend|TestBackendNeedsInit|TestKillAnywhereMatrix)$/^sim-s3-backend$' ./cmd/infercrane/ 2>&1 \
  | tee "$work/test.log" | grep -E '^(=== RUN|--- |PASS|FAIL|ok|\s+matrix_test|\s+backend_test)' || { log "FAIL:"; grep -v "^127.0.0.1" "$work/test.log" | grep -A30 -- "--- FAIL" >&2; exit 1; }
log "OK: the backend's end-to-end tests pass against moto's S3 server"
