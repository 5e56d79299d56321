#!/usr/bin/env bash
# Installs the system packages TraceLoom builds and tests with, when they are missing.
# Used by `make demo`, `make test` and `.ci/run`, so both work on a fresh Debian machine.
# `ensure-deps.sh fuzz` (make fuzz) also needs clang with libFuzzer and its sanitizer runtimes.
set -euo pipefail
need=()
have_header() { [ -f "/usr/include/$1" ]; }
have_header sqlite3ext.h || need+=(libsqlite3-dev)
have_header yaml.h       || need+=(libyaml-dev)
have_header zlib.h       || need+=(zlib1g-dev)
have_header check.h      || need+=(check)
command -v sqlite3 >/dev/null    || need+=(sqlite3)
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v cc >/dev/null         || need+=(gcc)
if [ "${1:-}" = fuzz ]; then
  command -v clang >/dev/null || need+=(clang)
  # Debian ships libFuzzer and the ASan runtime in libclang-rt-dev, not in clang itself.
  probe="$(mktemp -d)"
  printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$probe/p.c"
  command -v clang >/dev/null && clang -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>/dev/null ||
    need+=(libclang-rt-dev)
  rm -rf "$probe"
fi
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
echo "installing missing packages: ${need[*]}" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y --no-install-recommends "${need[@]}" >/dev/null 2>&1 || {
  $SUDO apt-get update >/dev/null
  $SUDO apt-get install -y --no-install-recommends "${need[@]}"
}
