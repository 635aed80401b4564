#!/usr/bin/env bash
# The per-step losses of every Keras-converted model in tests/keras/data (the files converters
# wrote, so every load-time pass runs on them), 3 SGD steps of `cltrain bench` on the cpu and the
# opencl backend, one line per loss exactly (Python's repr), so that two builds compare with diff:
#
#   bash tests/bench/keras_fingerprint.sh build > after.txt
#   bash tests/bench/keras_fingerprint.sh /path/to/old/build > before.txt && diff before.txt after.txt
#
# BUILD is a directory holding cltrain and libcltrain_opencl.so. About 3 minutes on 2 cores.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")/../keras/data" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cli="$build/cltrain"
for f in "$here"/*.tflite "$here"/*.tflite.gz; do
  name=$(basename "$f")
  model="$f"
  if [[ "$f" == *.gz ]]; then model="$work/${name%.gz}"; gunzip -c "$f" > "$model"; fi
  batch=4
  case "$name" in *net*) batch=2 ;; esac
  for backend in opencl cpu; do
    if "$cli" bench "$model" --batch_size "$batch" --steps 3 --warmup 0 --seed 1 --backends "$backend" \
         --report "$work/r.json" > "$work/log" 2>&1; then
      python3 - "$work/r.json" "${name%%.*}/$backend" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["steps"]:
    print("%s step %d %r" % (sys.argv[2], r["step"], r["loss"]))
PY
    else
      echo "${name%%.*}/$backend: $(tail -n 1 "$work/log")"
    fi
  done
done
