#!/usr/bin/env bash
# Everything the project checks: ruff, the fp64 verification, every test (unit, AppTest, and end-to-end in a real
# headless Chromium). About 45 minutes on a shared 2-core machine, most of it the browser tests.
#
#   ./scripts/test.sh                      everything
#   ./scripts/test.sh -k kda -x            extra arguments go to pytest
#   LINEAGE_SKIP_BROWSER=1 ./scripts/test.sh   without the browser tests (said at the end; never under CI=true)
#   LINEAGE_CHROMIUM=/path/to/chrome ./scripts/test.sh   the browser to drive
#
# Python: the active virtual environment, else .venv/ (created here if missing). The browser: $LINEAGE_CHROMIUM,
# Debian's /usr/bin/chromium, or Playwright's own Chromium if `playwright install chromium` has put it in place.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\n== %s\n' "$*"; }

# ---- Python: a virtual environment, never the system's ----------------------------------------------------------
if [ -n "${VIRTUAL_ENV:-}" ]; then
  PY="$VIRTUAL_ENV/bin/python"
else
  if [ ! -x .venv/bin/python ]; then
    BASE=$(command -v python3 || command -v python || true)
    if [ -z "$BASE" ]; then
      echo "No python3 found: install Python >= 3.10 (Debian/Ubuntu: apt-get install python3 python3-venv)." >&2
      exit 1
    fi
    say "creating .venv/ with $($BASE --version 2>&1) (packages already installed for it are reused)"
    "$BASE" -m venv --system-site-packages .venv || {
      echo "Could not create .venv/: on Debian/Ubuntu, apt-get install python3-venv" >&2
      exit 1
    }
  fi
  PY="$PWD/.venv/bin/python"
fi
"$PY" -m pip install -q --disable-pip-version-check -r requirements-dev.txt
# The project itself, editable: scripts/ import lineage and ui as installed packages. Skipped when this checkout's
# packages are already the installed ones (asked from /, so that the working directory does not answer for them).
here=$(pwd -P)
where='import importlib.util as u; print(*(getattr(u.find_spec(n), "origin", "") for n in ("lineage", "ui")))'
installed=$(cd / && "$PY" -c "$where" 2>/dev/null || true)
if [ "$installed" != "$here/lineage/__init__.py $here/ui/__init__.py" ]; then
  "$PY" -m pip install -q --disable-pip-version-check --no-deps -e .
fi

# ---- the browser for the end-to-end tests --------------------------------------------------------------------------
PYTEST_ARGS=()
if [ -n "${LINEAGE_SKIP_BROWSER:-}" ] && [ "${CI:-}" != "true" ]; then
  SKIPPING_BROWSER=1
  PYTEST_ARGS+=(-m "not browser")
else
  SKIPPING_BROWSER=""
  if [ -n "${LINEAGE_CHROMIUM:-}" ] && [ ! -x "$LINEAGE_CHROMIUM" ]; then
    echo "LINEAGE_CHROMIUM=$LINEAGE_CHROMIUM is not an executable: point it at a Chromium or Chrome binary." >&2
    exit 1
  fi
  CHROMIUM=$("$PY" -c "from ui.browser import find_chromium; print(find_chromium() or '')")
  if [ -z "$CHROMIUM" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null \
      && grep -qi '^ID=debian' /etc/os-release 2>/dev/null; then
    say "installing Debian's chromium for the browser tests"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    CHROMIUM=$("$PY" -c "from ui.browser import find_chromium; print(find_chromium() or '')")
  fi
  if [ -z "$CHROMIUM" ]; then
    cat >&2 <<'EOF'
No Chromium found for the browser tests. Any one of these will do:
  - Debian:            apt-get install chromium
  - macOS, most Linux: .venv/bin/playwright install chromium     (Playwright's own build)
  - any Chrome/Chromium you have:  LINEAGE_CHROMIUM=/path/to/chrome ./scripts/test.sh
  - or run without them, deliberately:  LINEAGE_SKIP_BROWSER=1 ./scripts/test.sh
(Ubuntu's chromium package is a snap stub that cannot be driven headless from here: use Playwright's.)
EOF
    exit 1
  fi
  export LINEAGE_CHROMIUM="$CHROMIUM"
  say "browser tests use $CHROMIUM"
fi

# ---- a C++ compiler: the chunked form's compiled steps (lineage/ops/native.py) are tested, never skipped ---------
if [ -z "$("$PY" -c "from lineage.ops.native import find_compiler; print(find_compiler() or '')")" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && grep -qi '^ID=debian' /etc/os-release 2>/dev/null; then
    say "installing Debian's g++ for the compiled steps"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ >/dev/null
  else
    echo "No C++ compiler found (c++, g++, clang++, or \$CXX): install one (Debian: apt-get install g++;" \
      "macOS: xcode-select --install). tests/test_native.py needs it." >&2
    exit 1
  fi
fi

# ---- the checks ---------------------------------------------------------------------------------------------------
say "ruff"
"$PY" -m ruff check .
"$PY" -m ruff format --check .
say "python -m lineage verify"
"$PY" -m lineage verify > /dev/null || { "$PY" -m lineage verify; exit 1; }
say "python -m lineage site --out artifacts/site (the static site builds)"
rm -rf artifacts/site
"$PY" -m lineage site --out artifacts/site > /dev/null || exit 1
say "pytest ${PYTEST_ARGS[*]:-} $*"
status=0
"$PY" -m pytest ${PYTEST_ARGS[@]+"${PYTEST_ARGS[@]}"} "$@" || status=$?  # (bash 3.2, macOS: no empty "${a[@]}")
if [ -n "$SKIPPING_BROWSER" ]; then
  echo "NOTE: the browser tests were skipped (LINEAGE_SKIP_BROWSER is set): the end-to-end checks did not run." >&2
fi
exit $status
