#!/usr/bin/env bash
# The project's C, C++ and OpenCL C sources follow .clang-format (clang-format 14, Debian 12's):
# lists every file it would change, and fails if there is one. Fix with
#   clang-format -i $(git ls-files '*.cc' '*.h' '*.c' '*.cl' | grep -v '^host/model/schema/')
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v clang-format > /dev/null || { echo "check_format: clang-format is not installed (bash .ci/setup installs it)"; exit 1; }
if git rev-parse --git-dir > /dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h' '*.c' '*.cl' | grep -v '^host/model/schema/')
else
  mapfile -t files < <(find include common host backend kernels tests -name '*.cc' -o -name '*.h' -o -name '*.c' -o -name '*.cl' | grep -v 'host/model/schema/')
fi
bad=0
for f in "${files[@]}"; do
  if ! clang-format --dry-run -Werror "$f" > /dev/null 2>&1; then
    echo "not formatted: $f"
    bad=$((bad + 1))
  fi
done
echo "check_format: ${#files[@]} files, $bad not formatted"
[ "$bad" -eq 0 ]
