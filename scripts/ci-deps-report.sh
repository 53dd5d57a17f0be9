#!/usr/bin/env bash
# Installs what the report package's tests need beyond Go: Debian's chromium
# for the headless HTML test (executor/report TestHTMLLayoutInHeadlessChromium).
# Without it that test skips with a loud message, or fails when
# INFERCRANE_REQUIRE_CHROMIUM (set by .ci/run) or CI is set; everything else runs.
# Called from .ci/run; safe to run again (it does nothing when chromium is there).
# The version is Debian's current one, not pinned: Debian's mirrors keep only the
# latest chromium security build, so a pinned version would stop installing within
# weeks. The version used is printed for the CI log.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  bin=$(command -v chromium || command -v chromium-browser)
  echo "ci-deps-report: chromium already installed: $bin ($("$bin" --version 2>/dev/null || echo "version unknown"))"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "ci-deps-report: not root and no sudo; install chromium yourself (apt-get install -y chromium)" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "ci-deps-report: installed $(chromium --version 2>/dev/null || echo chromium)"
