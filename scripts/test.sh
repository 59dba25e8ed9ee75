#!/usr/bin/env bash
# Install everything the test suite needs, then run all of it: lint, the fp64 verification, every test
# (unit, AppTest, and end-to-end in a real headless Chromium). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/chromium ]; then  # Debian's Chromium drives the browser tests; they fail without it
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
python -m pip install -q --disable-pip-version-check -r requirements-dev.txt

ruff check .
ruff format --check .
python -m lineage verify > /dev/null || { python -m lineage verify; exit 1; }
python -m pytest "$@"
