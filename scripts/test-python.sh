#!/usr/bin/env bash
# The Python package's tests: `pip install .[test,examples]` into a virtual environment
# (target/pyenv, made on first use; pip fetches maturin, NumPy, ml_dtypes, pytest, matplotlib),
# then pytest on python/tests. The extension is built in the `suite` profile (the test profile:
# optimised, with overflow checks), whose artifacts scripts/test.sh's `cargo test` has made.
# Needs Python >= 3.9 with venv, and what the Rust build needs.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/pyenv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
MATURIN_PEP517_ARGS="--profile suite" "$venv/bin/python" -m pip install -q --disable-pip-version-check ".[test,examples]"
"$venv/bin/python" -m pytest -q python/tests
