#!/usr/bin/env bash
# One command for a machine with an OpenCL GPU (NVIDIA, AMD, Intel, Mali, Adreno, ...): checks
# the prerequisites (installs nothing), configures and builds cltrain in a fresh build directory,
# runs the op suite (op_tests, opencl_smoke_tests, opencl_gemm_tests) on the GPU and `cltrain bench` for
# mnist-kaggle (batch 32) and mobilenetv2 (batch 10, Adam) with --profile, and writes every log
# and report into one output directory. Meant to finish in under ten minutes on such a machine;
# it also runs where POCL's CPU device is the only one (slower there).
#
#   bash tests/bench/gpu_check.sh                    # output in gpu-check-DATE/
#   bash tests/bench/gpu_check.sh --out DIR --device 1
#   bash tests/bench/gpu_check.sh --prebuilt gpu-bundle   # binaries from tests/bench/gpu_bundle.sh
#
# Options:
#   --out DIR       output directory (default gpu-check-YYYYmmdd-HHMMSS in the repository root);
#                   the build goes to DIR/build, always configured afresh
#   --device N      OpenCL device index as `cltrain devices` lists it (default: CLTRAIN_OPENCL_DEVICE,
#                   else the first GPU, else the first device)
#   --jobs N        build jobs (default: nproc)
#   --steps N       timed steps of each bench (default 10; mobilenetv2 takes min(N, 5))
#   --skip-tests    build and bench only
#   --prebuilt DIR  no build: the binaries, libraries and Fashion-MNIST that tests/bench/gpu_bundle.sh
#                   packed from a Release build of this tree (for a machine without the build
#                   packages); an OpenCL ICD of the NVIDIA driver is found by itself where no
#                   /etc/OpenCL/vendors entry names one
#   CMAKE_ARGS="-DCMAKE_CXX_COMPILER=clang++" passes extra configure arguments.
# Each stage has its own time limit (build 420 s, op_tests 300 s, smoke tests 300 s, each bench
# 240 s). The exit status is 0 when every stage passed; DIR/summary.txt says what each did.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out="" device="${CLTRAIN_OPENCL_DEVICE:-}" jobs=$(nproc 2>/dev/null || echo 2) steps=10 skip_tests=0 prebuilt=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --skip-tests) skip_tests=1; shift ;;
    --prebuilt) prebuilt=$(cd "$2" && pwd); shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "gpu_check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || out="$root/gpu-check-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out" && out=$(cd "$out" && pwd)
build="$out/build"
summary="$out/summary.txt"
: > "$summary"
failed=0
start=$(date +%s)

say() { echo "$*" | tee -a "$summary"; }
elapsed() { echo "$(( $(date +%s) - start ))s"; }
# stage NAME LIMIT_S LOG COMMAND...: runs with a time limit, output to LOG; records pass/fail.
stage() {
  local name=$1 limit=$2 log=$3; shift 3
  local t0=$(date +%s) rc=0
  echo "== $name (limit ${limit}s, log $log)"
  timeout --signal=TERM --kill-after=10 "$limit" "$@" > "$log" 2>&1 || rc=$?
  local dt=$(( $(date +%s) - t0 ))
  if [ $rc -eq 0 ]; then
    say "PASS  $name (${dt}s)"
  else
    [ $rc -eq 124 ] && say "FAIL  $name: over its ${limit}s limit (log: $log)" || say "FAIL  $name: exit $rc (log: $log)"
    tail -n 15 "$log" | sed 's/^/      /'
    failed=1
  fi
  return $rc
}

if [ -n "$prebuilt" ]; then
  # --- 1-2. The bundle in place of a build --------------------------------------------------------
  # The test programs name the plugin, their data and their caches by the absolute paths of the
  # tree they were built in: that tree is this one, where the path is not there.
  build=$(cat "$prebuilt/build_path")
  src_root=$(dirname "$build")
  if [ ! -e "$src_root" ]; then mkdir -p "$(dirname "$src_root")" && ln -s "$root" "$src_root"; fi
  mkdir -p "$build" && cp -a "$prebuilt/bin/." "$build/"
  export LD_LIBRARY_PATH="$prebuilt/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # An NVIDIA driver mounted into a container often brings libnvidia-opencl.so.1 without an ICD
  # entry (the H200 machine lent here: only POCL's pocl.icd in /etc/OpenCL/vendors): the loader
  # then gets the system's entries plus one for that library.
  nv=$( (ldconfig -p 2>/dev/null | awk '/libnvidia-opencl\.so\.1 /{ print $NF }'; \
         find /usr/local/nvidia /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/cuda -name 'libnvidia-opencl.so.1' \
           2>/dev/null) | head -n1)
  if [ -n "$nv" ] && [ -z "${OCL_ICD_VENDORS:-}" ] && ! grep -qs nvidia /etc/OpenCL/vendors/*.icd; then
    mkdir -p "$out/vendors" && echo "$nv" > "$out/vendors/nvidia.icd"
    cp /etc/OpenCL/vendors/*.icd "$out/vendors/" 2> /dev/null || true
    export OCL_ICD_VENDORS="$out/vendors"
    say "NOTE  no ICD entry names the NVIDIA driver: the loader also takes $nv"
  fi
  {
    echo "gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm), $(nproc 2>/dev/null) CPUs, prebuilt"
    echo "commit: $(cat "$prebuilt/commit" 2>/dev/null || echo '?') (bundle)"
    echo "OpenCL ICDs: $(ls /etc/OpenCL/vendors 2>/dev/null | tr '\n' ' ') ${OCL_ICD_VENDORS:-}"
    command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  } > "$out/environment.txt" 2>&1
  say "PASS  prebuilt binaries from $prebuilt (built in $build)"
else
  # --- 1. Prerequisites (nothing is installed) ---------------------------------------------------
  missing=()
  need_cmd() { command -v "$1" > /dev/null 2>&1 || missing+=("$1 (Debian: $2)"); }
  need_cmd cmake cmake
  need_cmd flatc flatbuffers-compiler
  need_cmd timeout coreutils
  cxx=${CXX:-c++}
  need_cmd "$cxx" build-essential
  if command -v "$cxx" > /dev/null 2>&1; then
    need_header() {
      echo "#include <$1>" | "$cxx" -std=c++17 -E -x c++ - > /dev/null 2>&1 || missing+=("<$1> (Debian: $2)")
    }
    need_header CL/cl.h "opencl-headers"
    need_header clblast.h "libclblast-dev"
    need_header flatbuffers/flatbuffers.h "libflatbuffers-dev"
    need_header nlohmann/json.hpp "nlohmann-json3-dev"
    need_header CLI/CLI.hpp "libcli11-dev"
    need_header zlib.h "zlib1g-dev"
    [ $skip_tests -eq 1 ] || need_header gtest/gtest.h "libgtest-dev"
  fi
  if command -v ldconfig > /dev/null 2>&1 && ! ldconfig -p 2>/dev/null | grep -q 'libOpenCL\.so'; then
    missing+=("libOpenCL.so, the ICD loader (Debian: ocl-icd-opencl-dev)")
  fi
  {
    echo "gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm), $(nproc 2>/dev/null) CPUs"
    echo "commit: $(git -C "$root" rev-parse HEAD 2>/dev/null || echo '?')$(git -C "$root" diff --quiet 2>/dev/null || echo ' (with local changes)')"
    echo "cmake: $(cmake --version 2>/dev/null | head -n1)"
    echo "c++: $("$cxx" --version 2>/dev/null | head -n1)"
    echo "OpenCL ICDs: $(ls /etc/OpenCL/vendors 2>/dev/null | tr '\n' ' ')"
    command -v clinfo > /dev/null 2>&1 && clinfo -l 2>/dev/null
  } > "$out/environment.txt"
  if [ ${#missing[@]} -gt 0 ]; then
    say "FAIL  prerequisites: missing ${missing[*]}"
    say "      (install them, e.g. bash .ci/setup on Debian, and run again)"
    exit 1
  fi
  say "PASS  prerequisites"
  command -v python3 > /dev/null 2>&1 || echo "   (no python3: the summary shows less)"

  # --- 2. Configure and build afresh --------------------------------------------------------------
  rm -rf "$build"
  targets=(cltrain cltrain_opencl)
  [ $skip_tests -eq 1 ] || targets+=(op_tests opencl_smoke_tests opencl_gemm_tests keras_tests)
  testing=ON; [ $skip_tests -eq 1 ] && testing=OFF
  # shellcheck disable=SC2086
  stage configure 120 "$out/configure.log" cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_TESTING=$testing ${CMAKE_ARGS:-} || exit 1
  stage build 420 "$out/build.log" cmake --build "$build" -j "$jobs" --target "${targets[@]}" || exit 1
fi

# --- 3. The device -------------------------------------------------------------------------------
"$build/cltrain" devices > "$out/devices.txt" 2>&1 || true
sed 's/^/   /' "$out/devices.txt"
if [ -z "$device" ]; then
  device=$(sed -n 's/^\[\([0-9]\+\)\] GPU .*/\1/p' "$out/devices.txt" | head -n1)
  if [ -z "$device" ]; then
    device=$(sed -n 's/^\[\([0-9]\+\)\] .*/\1/p' "$out/devices.txt" | head -n1)
    [ -n "$device" ] || { say "FAIL  no OpenCL device (see devices.txt)"; exit 1; }
    say "NOTE  no OpenCL GPU: using device [$device], $(sed -n "s/^\[$device\] \([^|]*\).*/\1/p" "$out/devices.txt")"
  fi
fi
export CLTRAIN_OPENCL_DEVICE=$device
say "      device [$device]: $(sed -n "s/^\[$device\] \([^|]*\)|.*/\1/p" "$out/devices.txt")"

# --- 4. The op suite on that device -------------------------------------------------------------
if [ $skip_tests -eq 0 ]; then
  stage op_tests 300 "$out/op_tests.log" "$build/op_tests" --gtest_brief=1 --gtest_output="xml:$out/op_tests.xml"
  stage opencl_smoke_tests 300 "$out/opencl_smoke_tests.log" "$build/opencl_smoke_tests" --gtest_brief=1 \
    --gtest_output="xml:$out/opencl_smoke_tests.xml"
  # kernels/gemm.cl (the GEMM of CPU devices; GPUs use CLBlast) on this device, bit for bit or not.
  stage opencl_gemm_tests 300 "$out/opencl_gemm_tests.log" "$build/opencl_gemm_tests" --gtest_brief=1 \
    --gtest_output="xml:$out/opencl_gemm_tests.xml"
  # The op suite again with the pool starting as NaNs: a GPU's fresh memory holds anything, and a
  # kernel that reads bytes nobody wrote shows here.
  CLTRAIN_OPENCL_POISON=1 stage op_tests_poisoned 300 "$out/op_tests_poisoned.log" "$build/op_tests" \
    --gtest_brief=1 --gtest_filter='*opencl*' --gtest_output="xml:$out/op_tests_poisoned.xml"
  # The converted Keras models (tests/keras/data) against Keras's own steps, every op on this device.
  # (Not brief: a crash shows which model it was in.)
  stage keras_tests 300 "$out/keras_tests.log" "$build/keras_tests" --gtest_filter='*opencl*' \
    --gtest_output="xml:$out/keras_tests.xml"
  # A crash (the H200's first run ended in SIGSEGV): that test again under a debugger, for its stack.
  if ! grep -q '^\[  PASSED  \]' "$out/keras_tests.log"; then
    crashed=$(grep '^\[ RUN' "$out/keras_tests.log" | tail -n1 | awk '{ print $4 }')
    dbg=$(command -v gdb || command -v cuda-gdb || true)
    if [ -n "$crashed" ] && [ -n "$dbg" ]; then
      timeout 120 "$dbg" -batch -ex run -ex bt -ex 'info sharedlibrary' --args "$build/keras_tests" \
        --gtest_filter="$crashed" > "$out/keras_tests_backtrace.log" 2>&1 || true
      say "NOTE  $crashed again under $(basename "$dbg"): keras_tests_backtrace.log"
    fi
  fi
  for t in op_tests op_tests_poisoned opencl_smoke_tests opencl_gemm_tests keras_tests; do
    grep -E '^\[  (PASSED|SKIPPED|FAILED) ' "$out/$t.log" | sed "s/^/      $t: /" | tee -a "$summary"
  done
fi

# --- 5. Benchmarks -------------------------------------------------------------------------------
profile=()
if "$build/cltrain" --help 2>&1 | grep -- '--profile' > /dev/null; then
  profile=(--profile)
else
  # This cltrain has no --profile: the plugin's per-step trace instead (stderr, mean ms per step).
  export CLTRAIN_OPENCL_TRACE=1
  say "NOTE  cltrain has no --profile option: per-step times come from CLTRAIN_OPENCL_TRACE in bench-*.log"
fi
bench() {
  local name=$1 batch=$2 n=$3
  "$build/cltrain" make-model "$name" -o "$out/$name.circle" --batch_size "$batch" > /dev/null 2>&1 || true
  stage "bench $name batch $batch" 240 "$out/bench-$name.log" "$build/cltrain" bench "$out/$name.circle" \
    --batch_size "$batch" --optimizer 2 --learning_rate 0.001 --loss 2 --warmup 1 --steps "$n" --backends opencl \
    --report "$out/bench-$name.json" "${profile[@]}"
}
bench mnist-kaggle 32 "$steps"
bench mobilenetv2 10 $(( steps < 5 ? steps : 5 ))
# Fashion-MNIST on this device: mnist-kaggle, 2 epochs at batch 32 with Adam (POCL here: test
# accuracy 0.9000, docs/benchmarks.md).
fmnist=""
for d in ${prebuilt:+"$prebuilt/fashion-mnist"} /usr/share/datasets/fashion-mnist; do
  [ -f "$d/t10k-labels-idx1-ubyte.gz" ] && { fmnist=$d; break; }
done
if [ -n "$fmnist" ]; then
  stage "fashion-mnist mnist-kaggle 2 epochs" 300 "$out/fashion-mnist.log" "$build/cltrain" "$out/mnist-kaggle.circle" \
    --data "fashion-mnist:$fmnist" --epoch 2 --batch_size 32 --optimizer 2 --learning_rate 0.001 --loss 2 --metric 0 \
    --backends opencl --no-progress --report "$out/fashion-mnist.json"
  grep -iE '^(Epoch|Test accuracy)' "$out/fashion-mnist.log" | sed 's/^/      /' | tee -a "$summary"
else
  say "NOTE  no Fashion-MNIST here: no training run"
fi
if command -v python3 > /dev/null 2>&1; then
  python3 - "$out" <<'PY' | tee -a "$summary"
import json, os, sys
out = sys.argv[1]
for name in ("mnist-kaggle", "mobilenetv2"):
    p = os.path.join(out, "bench-%s.json" % name)
    if not os.path.exists(p):
        continue
    r = json.load(open(p))
    losses = [s["loss"] for s in r["steps"]]
    off = sorted({b for b in r.get("placement", {}).values() if b != "opencl"})
    print("      %-13s batch %-3d %8.1f ms/step  loss %.4f -> %.4f  %s  on %s" % (
        name, r["batch_size"], r["ms_per_step"], losses[0], losses[-1],
        "every op on opencl" if not off else "SOME OPS ON " + ",".join(off), r["device"]))
PY
fi
say "gpu_check: $( [ $failed -eq 0 ] && echo 'all stages passed' || echo 'SOME STAGES FAILED') in $(elapsed); output in $out"
exit $failed
