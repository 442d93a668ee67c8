#!/usr/bin/env bash
# The arrows the tree keeps (dependencies point down), checked on the sources:
#  - libnxsim (api/) takes nothing from cli/: no include, no compiled source;
#  - the run path (registry/run/) reaches sim/ only through its backends
#    (registry/run/backend.h): no other .c there includes a sim/ header;
#  - the integer helpers exist once (isa/intmath.h): no file defines its own
#    cdiv/min64/max64;
#  - leaves read attributes through isa/values.h: no file under kernels/
#    walks an attribute dictionary's names itself.
set -euo pipefail
root=${1:?usage: layering.sh SOURCE_ROOT}
cd "$root"
fail=0
bad() { echo "layering: $*" >&2; fail=1; }
if grep -nE '#include "(\.\./)?cli/' api/*.c api/*.h; then bad "api/ includes a cli/ header"; fi
if grep -n 'cli/' api/CMakeLists.txt; then bad "api/CMakeLists.txt compiles a cli/ source"; fi
for f in registry/run/*.c; do
  case "$f" in registry/run/backend_*.c) continue ;; esac
  if grep -n '#include "sim/' "$f"; then bad "$f includes sim/: go through registry/run/backend.h"; fi
done
if grep -rnE --include=*.c --include=*.h --include=*.cpp '^static (inline )?u?int(32|64)_t (cdiv|min64|max64)\(' isa kernels registry sim cli api bench tests; then
  bad "an own cdiv/min64/max64: use isa/intmath.h"
fi
if grep -rnE --include=*.c --include=*.h 'strcmp\([a-z_>-]*items\[[a-z]+\]\.name' kernels; then
  bad "a leaf looks an attribute up itself: use nx_attrs_get (isa/values.h)"
fi
[ "$fail" -eq 0 ] && echo "layering: api/ -> cli/ none, registry/run -> sim/ through the backends, helpers once"
exit "$fail"
