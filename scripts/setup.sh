#!/usr/bin/env bash
# Install what building mmafuzz needs beyond Rust: m4, without which GMP/MPFR (through rug)
# do not configure. Safe to run again.
set -euo pipefail
if ! command -v cargo >/dev/null; then
  echo "setup: cargo not found; install Rust (https://rustup.rs) first" >&2
  exit 1
fi
if ! command -v m4 >/dev/null; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "setup: installing m4 (needed to build GMP and MPFR)"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq m4 >/dev/null
fi
