#!/usr/bin/env bash
# Packs what tests/bench/gpu_check.sh --prebuilt needs to run on a machine that has an OpenCL GPU
# but cannot build cltrain (no compiler packages, no network): the CLI, libcltrain, the OpenCL
# plugin and the test programs of a Release build of this tree, the libraries they take from
# Debian (the ICD loader, CLBlast), and Fashion-MNIST. The test programs name their data and
# plugin by the build tree's absolute path; the bundle records it and gpu_check.sh recreates it.
#
#   bash tests/bench/gpu_bundle.sh [BUILD_DIR [OUT_DIR]]    # defaults: build, gpu-bundle
#
# The bundle is about 50 MB; gpu-bundle/ is ignored by git (.git/info/exclude), so it travels
# only where it is named.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out="${2:-$root/gpu-bundle}"
rm -rf "$out" && mkdir -p "$out/bin" "$out/lib" "$out/fashion-mnist"
programs=(cltrain libcltrain_opencl.so op_tests opencl_smoke_tests opencl_gemm_tests keras_tests)
for p in "${programs[@]}"; do
  [ -e "$build/$p" ] || { echo "gpu_bundle: $build/$p is missing (build the tests first)"; exit 1; }
  cp -L "$build/$p" "$out/bin/"
done
cp -a "$build"/libcltrain.so* "$out/bin/"
for lib in libOpenCL.so.1 libclblast.so.1; do
  path=$(ldd "$build/libcltrain_opencl.so" | awk -v l="$lib" '$1 == l { print $3 }')
  [ -n "$path" ] || { echo "gpu_bundle: the plugin does not link $lib"; exit 1; }
  cp -L "$path" "$out/lib/"
done
cp /usr/share/datasets/fashion-mnist/*.gz "$out/fashion-mnist/" 2> /dev/null ||
  echo "gpu_bundle: no Fashion-MNIST here (dataset-fashion-mnist): the GPU run will skip its training"
echo "$build" > "$out/build_path"
git -C "$root" rev-parse HEAD > "$out/commit" 2> /dev/null || true
grep -qx '/gpu-bundle/' "$root/.git/info/exclude" 2> /dev/null || echo '/gpu-bundle/' >> "$root/.git/info/exclude"
du -sh "$out"
