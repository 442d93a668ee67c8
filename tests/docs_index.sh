#!/usr/bin/env bash
# The documentation stays findable and self-contained:
# - every page of docs/parts/ is linked from the index docs/README.md, every
#   link of the index resolves, and the README links the index;
# - nothing in the tree cites an issue or a document outside it (code and docs
#   cite docs/ pages; public sources by name): "issue 8", "the issue's",
#   KERNELS.md, HARDWARE.md, ROSTER.md, the seeds or the shared specs folder.
set -euo pipefail
root=${1:?usage: docs_index.sh REPO_ROOT}
cd "$root"
fail=0
for page in docs/parts/*.md; do
  rel=${page#docs/}
  grep -qF "]($rel)" docs/README.md || { echo "docs_index: $page is not linked from docs/README.md" >&2; fail=1; }
done
while read -r target; do
  [ -f "docs/$target" ] || { echo "docs_index: docs/README.md links $target, which does not exist" >&2; fail=1; }
done < <(grep -oE '\]\([^)#]+\.md\)' docs/README.md | sed -E 's/^\]\(//; s/\)$//' | grep -v '^\.\./')
grep -qF '](docs/README.md)' README.md || { echo "docs_index: README.md does not link docs/README.md" >&2; fail=1; }
# Citations of issues or of documents outside the tree.
# ("issue" alone is also what an engine does with an instruction: "issue 189 ns
# apart", "the transfer's issue"; those are not citations.)
pattern='\b[Ii]ssue[ -]#?[0-9]+(?![0-9]|\s*(ns|us|cycles))|the issue(\x27s)? (asks|names|defines|shapes|cases|example|four)|\b(KERNELS|HARDWARE|ROSTER|DESIGN|STYLE|TOOLCHAIN|NKI)\.md|shared/(specs|seeds)'
if hits=$(git ls-files -- ':!tests/docs_index.sh' 2>/dev/null | grep -E '\.(c|h|cpp|hpp|py|sh|md|txt|cmake|json|nxs|def|sv)$|CMakeLists\.txt$' |
          xargs grep -nP "$pattern" 2>/dev/null); then
  echo "docs_index: citations of issues or outside documents (cite docs/ pages instead):" >&2
  echo "$hits" | head -20 >&2
  fail=1
fi
[ "$fail" -eq 0 ] && echo "docs_index: $(ls docs/parts/*.md | wc -l) pages indexed, no outside citations"
exit "$fail"
