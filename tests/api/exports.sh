#!/usr/bin/env bash
# libcltrain.so's dynamic symbols are exactly the functions cltrain.h declares: no C++ symbol of
# the runtime (which would tie applications to its internals) and no function left out.
set -euo pipefail
lib=$1 header=$2
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | sort -u)
declared=$(grep -o 'CLTRAIN_API [^(]*\bcltrain_[a-z0-9_]*(' "$header" | grep -o 'cltrain_[a-z0-9_]*(' | tr -d '(' | sort -u)
others=$(nm -D --defined-only "$lib" | awk '$2 != "T" && $2 != "A" { print $3 }')
status=0
if [ "$exported" != "$declared" ]; then
  echo "exported but not declared:"; comm -23 <(echo "$exported") <(echo "$declared")
  echo "declared but not exported:"; comm -13 <(echo "$exported") <(echo "$declared")
  status=1
fi
if [ -n "$others" ]; then echo "other exported symbols: $others"; status=1; fi
[ "$status" -eq 0 ] && echo "libcltrain.so exports the $(echo "$exported" | wc -l) functions of cltrain.h"
exit "$status"
