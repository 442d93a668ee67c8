#!/usr/bin/env bash
# libnxsim.so exports exactly the functions include/nxsim/nxsim.h declares
# NXSIM_API (all prefixed nx_), plus sc_main (libsystemc.so's main() needs
# it to resolve), and nothing of the project's internals.
set -euo pipefail
lib=$1 header=$2
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDRBWVui]$/ {print $3}' | sed 's/@.*//' | grep -v -E '^(_init|_fini|_edata|_end|__bss_start)$' | sort -u)
declared=$(grep -oE '^NXSIM_API [^(]*[ *](nx_[a-z0-9_]+)\(' "$header" | sed -E 's/.*[ *](nx_[a-z0-9_]+)\($/\1/' | sort -u)
want=$(printf '%s\nsc_main\n' "$declared" | sort -u)
if [ "$exported" != "$want" ]; then
  echo "check_symbols: $lib exports differ from $header (+ sc_main):" >&2
  diff <(echo "$want") <(echo "$exported") | sed 's/^</  declared, not exported:/; s/^>/  exported, not declared:/' >&2
  exit 1
fi
echo "check_symbols: $(echo "$declared" | wc -l) API functions exported, nothing else but sc_main"
