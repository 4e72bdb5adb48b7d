#!/usr/bin/env bash
# The UI tests drive a real headless Chromium: Debian's `chromium` package (never a download at test time).
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || [ -n "${VECTORSTEP_TEST_CHROMIUM:-}" ]; then
  exit 0
fi
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "installing Debian's chromium for the UI tests"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
  exit 0
fi
echo "the UI tests need Chromium: install your distribution's chromium, or set VECTORSTEP_TEST_CHROMIUM to its path" >&2
exit 1
