#!/usr/bin/env bash
# The registry catalogue holds exactly the seed's 13 rows, checked when
# registry/catalog.c is compiled: a copy with a 14th row, or with a row
# removed, must fail to compile with the static assertion's message (never
# build a registry whose live table is silently empty or short). The
# unmodified file must compile, so the test can fail.
#
# Usage: catalogue_rows.sh CC SOURCE_DIR TMPDIR
set -u
if [ $# -ne 3 ]; then
    echo "usage: $0 CC SOURCE_DIR TMPDIR" >&2
    exit 2
fi
CC=$1 SRC=$2 T=$3
rm -rf "$T"
mkdir -p "$T/registry"
failed=0
compile() { # FILE: 0 if it compiles
    "$CC" -std=c11 -D_POSIX_C_SOURCE=200809L -fsyntax-only -I"$SRC" -I"$SRC/registry" "$1" 2>"$T/err"
}
cat_c="$SRC/registry/catalog.c"

cp "$cat_c" "$T/registry/catalog.c"
if compile "$T/registry/catalog.c"; then :; else
    echo "FAIL: the unmodified catalogue does not compile:"; cat "$T/err"; failed=1
fi

# A 14th row, after row 13.
awk '{print} /\.seed_index = 13,/ {row=1} row && /\},$/ {print "    {.seed_index = 14, .key = \"fourteenth\", .family = \"test\","; print "     .config = CONFIG(tiled_pf_transpose, ALL, &nx_args_attrs, false)},"; row=0}' \
    "$cat_c" >"$T/registry/catalog.c"
if ! grep -q fourteenth "$T/registry/catalog.c"; then
    echo "FAIL: could not insert a 14th row (has the row format changed?)"; failed=1
elif compile "$T/registry/catalog.c"; then
    echo "FAIL: a catalogue with a 14th row compiles"; failed=1
elif ! grep -q "never a 14th registry row" "$T/err"; then
    echo "FAIL: a 14th row fails without the static assertion's message:"; cat "$T/err"; failed=1
fi

# Row 13 removed.
awk '/\.seed_index = 13,/ {skip=1} !skip {print} skip && /\},$/ {skip=0}' "$cat_c" >"$T/registry/catalog.c"
if grep -q "seed_index = 13," "$T/registry/catalog.c"; then
    echo "FAIL: could not remove row 13"; failed=1
elif compile "$T/registry/catalog.c"; then
    echo "FAIL: a catalogue of 12 rows compiles"; failed=1
elif ! grep -q "exactly 13 entries" "$T/err"; then
    echo "FAIL: 12 rows fail without the static assertion's message:"; cat "$T/err"; failed=1
fi

[ "$failed" -eq 0 ] && echo "catalogue rows: ok"
exit "$failed"
