# Cross-build for 64-bit Arm Linux boards (Mali, Adreno, PowerVR, Jetson) from an x86-64 Debian:
#
#   cmake -S . -B build-aarch64 --toolchain cmake/toolchains/aarch64-linux-gnu.cmake
#   cmake --build build-aarch64 -j
#
# What it needs (Debian, .ci/cross installs them): the cross compilers (crossbuild-essential-arm64)
# and the arm64 builds of the dependencies through multiarch (dpkg --add-architecture arm64; then
# ocl-icd-opencl-dev:arm64 libclblast-dev:arm64 libflatbuffers-dev:arm64 libgtest-dev:arm64
# zlib1g-dev:arm64), which live in /usr/lib/aarch64-linux-gnu beside the host's own libraries.
# Programs the build runs on the build machine (flatc for the schemas, cmake for the embedded
# kernels) are the build machine's. Where qemu-user is installed, the built programs run through it
# (the CMAKE_CROSSCOMPILING_EMULATOR): gtest's test discovery and ctest use it, so
# `ctest` in the cross-build directory runs the aarch64 tests on this machine.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CLTRAIN_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${CLTRAIN_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${CLTRAIN_CROSS_TRIPLE}-g++)
# Debian's multiarch layout: libraries and package configs in /usr/lib/aarch64-linux-gnu, headers
# in /usr/include (and /usr/include/aarch64-linux-gnu), the C library in /usr/aarch64-linux-gnu.
set(CMAKE_LIBRARY_ARCHITECTURE ${CLTRAIN_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# pkg-config, where a find module asks it, answers for arm64.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${CLTRAIN_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig)

# The emulator for running the aarch64 programs here. It runs them with the arm64 C library and
# dynamic loader of multiarch (libc6:arm64, which the -dev packages above pull in: /lib/ld-linux-
# aarch64.so.1), not with `-L /usr/aarch64-linux-gnu`: under qemu 7.2's -L, a program's first
# pthread_create spins for ever.
find_program(CLTRAIN_QEMU_AARCH64 qemu-aarch64)
if(CLTRAIN_QEMU_AARCH64 AND EXISTS /lib/ld-linux-aarch64.so.1)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${CLTRAIN_QEMU_AARCH64})
endif()
