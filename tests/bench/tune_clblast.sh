#!/usr/bin/env bash
# Finds CLBlast Xgemm parameters for an OpenCL device that CLBlast's database does not know (or
# knows badly), for the GEMMs cltrain actually runs, and prints them as the line to put into
# backend/opencl/gemm_tuning.cc (kTunings) or to export as CLTRAIN_CLBLAST_XGEMM.
#
#   bash tests/bench/tune_clblast.sh                           # tuner + re-ranking, device 0
#   bash tests/bench/tune_clblast.sh --skip-tuner --candidates my_sets.txt
#
# Two stages:
#   1. CLBlast's own tuner, clblast_tuner_xgemm (Debian: clblast-utils), on a square product
#      (--size, default 256) in DIR/tuner: its 4 searches (GEMMK 0 and 1, a fixed set and a random
#      --fraction of the large space) each write clblast_xgemm_*_32.json. On POCL every candidate
#      is a kernel compile (0.5-6 s), so the whole tuner takes tens of minutes; --tuner-timeout
#      cuts it (the stages finished by then count).
#   2. The --top fastest distinct parameter sets of those files, plus the lines of --candidates
#      FILE, plus the set gemm_tuning.cc applies now, are each timed by gemm_bench (--no-blas,
#      every GEMM group of each --model, the calls exactly as the backend makes them) with
#      CLTRAIN_CLBLAST_XGEMM set; ranked by the total GEMM time over the models. The tuner's square
#      product is not what a training step runs (tall-skinny im2col products, dW chains over all
#      positions), which is why stage 2 decides.
#
# Options:
#   --build DIR          build directory with gemm_bench (default build/; cmake --build DIR --target gemm_bench)
#   --out DIR            working directory (default: a new temporary one; kept)
#   --platform P --device D   the tuner's OpenCL platform and device (default 0 0)
#   --cltrain-device N   the same device as cltrain counts it (`cltrain devices`; default: CLTRAIN_OPENCL_DEVICE
#                        or cltrain's default)
#   --size S             the tuner's m = n = k (default 256)
#   --fraction F         the tuner's random fraction of the large spaces (default 0.002: about 2400 sets
#                        in stage 2 of 4, some 40 minutes of POCL compiles)
#   --tuner-timeout S    stop the tuner after S seconds (default 3600)
#   --skip-tuner         stage 2 only (with --candidates, or JSON files already in DIR/tuner)
#   --candidates FILE    more parameter sets, one "GEMMK=0 KREG=1 KWG=16 ..." line each (all 16 parameters)
#   --top N              how many of the tuner's best sets to re-rank (default 12)
#   --model NAME:BATCH   a model whose GEMMs decide (repeatable; default mnist-kaggle:32 mobilenetv2:10)
#   --repeat R           gemm_bench's runs per group (default 3)
#   --cpu-time           rank by the process's CPU time instead of wall time: on POCL (a CPU device) steadier
#                        when other programs share the cores (how gemm_tuning.cc's POCL set was chosen)
#   --min-indirect N     CLTRAIN_CLBLAST_MIN_INDIRECT for every run (products below N^3 use CLBlast's direct
#                        kernel; gemm_tuning.cc's entries use 64, CLBlast's default is several hundred)
#
# The result does not change what cltrain computes: CLBlast never splits k, so every output is the
# same fma chain whatever the parameters (backend/opencl/README.md), only the speed changes.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build="$root/build" out="" platform=0 tdevice=0 size=256 fraction=0.002 tuner_timeout=3600 skip_tuner=0
candidates="" top=12 repeat=3 models=() metric=ms
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --platform) platform=$2; shift 2 ;;
    --device) tdevice=$2; shift 2 ;;
    --cltrain-device) export CLTRAIN_OPENCL_DEVICE=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --fraction) fraction=$2; shift 2 ;;
    --tuner-timeout) tuner_timeout=$2; shift 2 ;;
    --skip-tuner) skip_tuner=1; shift ;;
    --candidates) candidates=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
    --top) top=$2; shift 2 ;;
    --model) models+=(--model "$2"); shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --cpu-time) metric=cpu-ms; shift ;;
    --min-indirect) export CLTRAIN_CLBLAST_MIN_INDIRECT=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "tune_clblast: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#models[@]} -gt 0 ] || models=(--model mnist-kaggle:32 --model mobilenetv2:10)
bench="$build/gemm_bench"
# CPU devices run their GEMMs through kernels/gemm.cl; the candidates are CLBlast's.
export CLTRAIN_OPENCL_GEMM=clblast
[ -x "$bench" ] || { echo "tune_clblast: no $bench (needs OpenBLAS: libopenblas-dev; cmake --build $build --target gemm_bench)" >&2; exit 1; }
command -v python3 > /dev/null || { echo "tune_clblast: needs python3" >&2; exit 1; }
[ -n "$out" ] || out=$(mktemp -d /tmp/tune_clblast.XXXXXX)
mkdir -p "$out/tuner"
echo "tune_clblast: working in $out"

# --- 1. CLBlast's tuner -------------------------------------------------------------------------
if [ $skip_tuner -eq 0 ]; then
  command -v clblast_tuner_xgemm > /dev/null ||
    { echo "tune_clblast: no clblast_tuner_xgemm (Debian: apt-get install clblast-utils), or use --skip-tuner" >&2; exit 1; }
  echo "== clblast_tuner_xgemm -platform $platform -device $tdevice -precision 32 -m $size -n $size -k $size -fraction $fraction (at most ${tuner_timeout}s; log $out/tuner/tuner.log)"
  (cd "$out/tuner" && timeout "$tuner_timeout" clblast_tuner_xgemm -platform "$platform" -device "$tdevice" -precision 32 \
     -m "$size" -n "$size" -k "$size" -fraction "$fraction" -runs 2 > tuner.log 2>&1) || echo "   (tuner stopped: exit $?)"
  grep -E '^\* (Found best|Best parameters|Writing)' "$out/tuner/tuner.log" | sed 's/^/   /' || true
fi

# --- 2. Candidates, re-ranked at cltrain's own GEMMs ---------------------------------------------
python3 - "$out/tuner" "$top" "${candidates:-}" > "$out/candidates.txt" <<'PY'
import glob, json, sys
tuner_dir, top, extra = sys.argv[1], int(sys.argv[2]), sys.argv[3]
names = ["GEMMK", "KREG", "KWG", "KWI", "MDIMA", "MDIMC", "MWG", "NDIMB", "NDIMC", "NWG", "SA", "SB", "STRM", "STRN", "VWM", "VWN"]
results = []
for path in glob.glob(tuner_dir + "/clblast_xgemm_*_32.json"):
    try:
        data = json.load(open(path))
    except ValueError:
        continue
    for r in data.get("results", []):
        p = r.get("parameters", {})
        if all(n in p for n in names) and r.get("time", 0) > 0:
            results.append((r["time"], " ".join("%s=%d" % (n, p[n]) for n in names)))
seen, out = set(), []
for t, line in sorted(results):
    if line not in seen and len(out) < top:
        seen.add(line)
        out.append(line)
if extra:
    for line in open(extra):
        line = line.split("#")[0].strip()
        if line and line not in seen:
            seen.add(line)
            out.append(line)
print("\n".join(out))
PY
count=$(grep -c . "$out/candidates.txt" || true)
echo "== $count candidate sets (and the current one) through gemm_bench --no-blas --top 0 ${models[*]}"
results="$out/ranking.txt"
: > "$results"
run_one() {  # label, parameters ("" = what gemm_tuning.cc applies)
  local label=$1 params=$2 log total
  log="$out/bench-$label.txt"
  if ! CLTRAIN_CLBLAST_XGEMM="$params" "$bench" --no-blas --top 0 --repeat "$repeat" "${models[@]}" > "$log" 2>&1; then
    echo "   $label: FAILED ($(tail -n1 "$log"))"
    return
  fi
  total=$(awk -v m="$metric" '$1 == "total" && $4 == m {s += $NF} END {printf "%.2f", s}' "$log")
  # What was applied ("CLBlast parameters: Xgemm GEMMK=0 ..., XGEMM_MIN_INDIRECT_SIZE=64").
  [ -n "$params" ] || params=$(sed -n 's/^CLBlast parameters: Xgemm \([^,]*\).*/\1/p' "$log")
  echo "$total $label ${params:-CLBlast-defaults}" >> "$results"
  echo "   $label: $total ms  ${params:-the CLBlast defaults}"
}
run_one current ""   # what gemm_tuning.cc applies to this device (CLBlast's own parameters if nothing)
i=0
while IFS= read -r params; do
  [ -n "$params" ] || continue
  i=$((i + 1))
  run_one "candidate$i" "$params"
done < "$out/candidates.txt"
echo "== ranking (total GEMM $metric over the models' training-step GEMMs; lower is better), $results"
sort -n "$results" | head -n 5 | sed 's/^/   /'
best=$(sort -n "$results" | head -n1)
echo
echo "best: $best"
echo "as backend/opencl/gemm_tuning.cc kTunings row (platform and device type of this device):"
echo "    {\"<platform_short>\", CL_DEVICE_TYPE_<GPU|CPU>, \"$(echo "$best" | cut -d' ' -f3-)\", 64},"
echo "or for one run: CLTRAIN_CLBLAST_XGEMM=\"$(echo "$best" | cut -d' ' -f3-)\" build/cltrain ..."
