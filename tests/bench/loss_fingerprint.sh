#!/usr/bin/env bash
# The losses a refactoring must leave bitwise as they were: `cltrain bench` per-step losses of
# mnist-kaggle (batch 32) and mobilenetv2 (batch 10), mnist-kaggle again with float16 storage and
# under a memory budget (92% of its pool: recomputation), and the per-epoch losses of the mlp on
# Fashion-MNIST (2 epochs, batch 32, Adam), each on the opencl and the cpu backend. Prints one
# line per loss, exactly (Python's repr of the report's number), so that two builds compare with diff:
#
#   bash tests/bench/loss_fingerprint.sh build > after.txt
#   bash tests/bench/loss_fingerprint.sh /path/to/old/build > before.txt && diff before.txt after.txt
#
# BUILD is a directory holding cltrain and libcltrain_opencl.so. About 4 minutes on 2 cores.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
steps=${STEPS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cli="$build/cltrain"
"$cli" make-model mnist-kaggle -o "$work/mk.circle" > /dev/null
"$cli" make-model mobilenetv2 -o "$work/mb.circle" > /dev/null
"$cli" make-model mlp -o "$work/mlp.circle" > /dev/null

losses() {  # report file, label
  python3 - "$1" "$2" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
rows = j["steps"] if "steps" in j else j["epochs"]
for r in rows:
    key = "step" if "step" in r else "epoch"
    print("%s %s %d %r" % (sys.argv[2], key, r[key], r["loss"]))
EOF
}

for backend in opencl cpu; do
  "$cli" bench "$work/mk.circle" --batch_size 32 --steps "$steps" --warmup 0 --seed 1 --backends "$backend" \
    --no-cache --report "$work/mk.json" > /dev/null 2>&1
  losses "$work/mk.json" "mnist-kaggle/$backend"
  "$cli" bench "$work/mb.circle" --batch_size 10 --steps 3 --warmup 0 --seed 1 --backends "$backend" \
    --no-cache --report "$work/mb.json" > /dev/null 2>&1
  losses "$work/mb.json" "mobilenetv2/$backend"
  "$cli" bench "$work/mk.circle" --batch_size 32 --steps 3 --warmup 0 --seed 1 --backends "$backend" \
    --no-cache --storage fp16 --report "$work/mk16.json" > /dev/null 2>&1
  losses "$work/mk16.json" "mnist-kaggle-fp16/$backend"
  rm -f "$work/mkb.json"
  pool=$("$cli" plan "$work/mk.circle" --batch_size 32 --backends "$backend" --no-cache |
    awk '/^planned pool:/ {print $3; exit}')
  "$cli" bench "$work/mk.circle" --batch_size 32 --steps 3 --warmup 0 --seed 1 --backends "$backend" \
    --no-cache --memory_budget $((pool * 92 / 100)) --report "$work/mkb.json" > "$work/mkb.log" 2>&1 ||
    { echo "mnist-kaggle-budget/$backend: $(tail -n 1 "$work/mkb.log")"; }
  [ -s "$work/mkb.json" ] && losses "$work/mkb.json" "mnist-kaggle-budget/$backend"
  grep -o "recomputed [0-9]* forward step" "$work/mkb.log" | sed "s|^|mnist-kaggle-budget/$backend |" || true
  "$cli" "$work/mlp.circle" --data fashion-mnist --epoch 2 --batch_size 32 --optimizer 2 --learning_rate 0.001 \
    --loss 2 --backends "$backend" --no-cache --no-progress --report "$work/mlp.json" > /dev/null 2>&1
  losses "$work/mlp.json" "mlp-fashion-mnist/$backend"
done
