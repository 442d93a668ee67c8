#!/usr/bin/env bash
# Every authoring-layer function that emits (declared in kernels/author/author.h as
# `int nx_kctx_NAME(nx_kctx *k, ...)`) must have its source-location macro
# `#define nx_kctx_NAME(k, ...) NX_KCTX_AT_(nx_kctx_NAME, k, __VA_ARGS__)`,
# or the instructions it emits have no source location in profiles.
# Functions that emit nothing are listed in `quiet`.
set -euo pipefail
header=${1:?usage: author_src_macros.sh kernels/author/author.h}
quiet=" nx_kctx_alloc nx_kctx_release nx_kctx_scratch nx_kctx_src_end_ nx_kctx_set_lanes "
fail=0
n=0
while read -r name; do
  case "$quiet" in *" $name "*) continue ;; esac
  n=$((n + 1))
  if ! grep -q "^#define $name(k, \.\.\.) NX_KCTX_AT_($name, k, __VA_ARGS__)\$" "$header"; then
    echo "author_src_macros: $header declares $name but has no line" >&2
    echo "  #define $name(k, ...) NX_KCTX_AT_($name, k, __VA_ARGS__)" >&2
    echo "  (see 'Source locations' in $header)" >&2
    fail=1
  fi
done < <(grep -oE '^int (nx_kctx_[a-z0-9_]+)\(nx_kctx \*k' "$header" | sed -E 's/^int (nx_kctx_[a-z0-9_]+)\(.*/\1/')
if [ "$n" -lt 10 ]; then
  echo "author_src_macros: found only $n emit functions in $header: the pattern no longer matches" >&2
  exit 1
fi
[ "$fail" -eq 0 ] && echo "author_src_macros: $n emit helpers, each with its macro"
exit "$fail"
