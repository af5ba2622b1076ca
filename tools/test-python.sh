#!/usr/bin/env bash
# Build the Python package (crates/python) from this checkout into a fresh
# virtual environment and run its pytest suite.
#
# The package is built as users build it (`pip install ./crates/python`:
# maturin, Cargo's release profile, in this checkout's target/), so a
# second run only rebuilds what changed. FOLIOSIM_PY_PROFILE=dev builds it
# with another Cargo profile (not `test`: `cargo rustc --profile test`
# makes a test harness, not a library). FOLIOSIM_VENV sets where the
# environment goes (default target/python-venv, emptied first). Extra
# arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
venv=${FOLIOSIM_VENV:-target/python-venv}
profile=${FOLIOSIM_PY_PROFILE:-release}

# Debian splits venv and ensurepip into python3-venv.
if ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq
        apt-get install -y -q python3-venv >/dev/null
    else
        echo "test-python: $python cannot make virtual environments: install python3-venv" >&2
        exit 1
    fi
fi

start=$SECONDS
"$python" -m venv --clear "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
# pyarrow: the tests read Parquet tables with pandas.
"${pip[@]}" install maturin pytest pandas pyarrow 'dask[distributed]'
# The README's install command.
MATURIN_PEP517_ARGS="--profile $profile" "${pip[@]}" install ./crates/python
echo "test-python: environment and package ready in $((SECONDS - start)) s"
# From outside the source tree, so `import foliosim` is the installed one.
cd crates/python/tests
"../../../$venv/bin/python" -m pytest -q -p no:cacheprovider "$@" .
