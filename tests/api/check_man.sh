#!/usr/bin/env bash
# The man page holds the command's help verbatim: the DESCRIPTION block is
# `nxsim --help` and one block per command is `nxsim help COMMAND`, after
# undoing the roff escapes cmake/manpage.cmake applies (\e for a backslash,
# \& before a leading '.' or "'").
set -euo pipefail
nxsim=$1 page=$2
[ -s "$page" ] || { echo "check_man: $page is missing or empty" >&2; exit 1; }
unroff() { sed -e 's/^\\&//' -e 's/\\e/\\/g'; }
# block N of the page (the text between the N-th .nf and its .fi)
block() { awk -v n="$1" '/^\.nf$/ {k++; next} /^\.fi$/ {if (k == n) exit} k == n {print}' "$page" | unroff; }
fail=0
diff <("$nxsim" --help) <(block 1) >/dev/null || { echo "check_man: DESCRIPTION differs from nxsim --help" >&2; fail=1; }
n=1
for cmd in $(grep -oE '^\.SS nxsim [a-z]+' "$page" | awk '{print $3}'); do
  n=$((n + 1))
  diff <("$nxsim" help "$cmd") <(block "$n") >/dev/null || { echo "check_man: section '$cmd' differs from nxsim help $cmd" >&2; fail=1; }
done
# every command of the global help has its section
for cmd in $("$nxsim" --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && !/^  / {on = 0}'); do
  [ "$cmd" = help ] && continue
  grep -qx ".SS nxsim $cmd" "$page" || { echo "check_man: no section for '$cmd'" >&2; fail=1; }
done
[ "$fail" -eq 0 ] && echo "check_man: the man page matches the help of nxsim and its $((n - 1)) commands"
exit "$fail"
