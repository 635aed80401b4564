// OpenCL drivers loaded apart from an LLVM the process already holds.
#pragma once

#include <string>

namespace cltrain::ocl {

// POCL, Mesa's clover and rusticl link LLVM (libLLVM-15, libclang-cpp) and register its
// command-line options in their static initialisers. Where the process already exports LLVM's
// symbols globally (TensorFlow's libtensorflow_framework.so.2 does: `import tensorflow` before a
// cltrain Session), those initialisers bind to the foreign LLVM and crash inside dlopen. So before
// the ICD loader opens the drivers, each vendor library that is not loaded yet is opened here with
// RTLD_DEEPBIND (its own LLVM first) — only when such a foreign LLVM is there, so a process
// without one loads its drivers exactly as before. Not under AddressSanitizer, which refuses
// RTLD_DEEPBIND. Once per process; returns what it did, for the tests ("" where nothing).
std::string isolate_drivers_from_foreign_llvm();

}  // namespace cltrain::ocl
