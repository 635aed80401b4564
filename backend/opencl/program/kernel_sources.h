// OpenCL C sources of kernels/*.cl, embedded at build time by cmake/EmbedKernels.cmake into the
// generated kernel_sources.cc.
#pragma once

#include <cstddef>
#include <string>

namespace cltrain::ocl {

extern const char* const kKernelNames[];    // file names: "softmax.cl"
extern const char* const kKernelSources[];  // their text
extern const std::size_t kKernelCount;

// The text of an embedded file, or nullptr.
inline const char* find_kernel_source(const std::string& name) {
  for (std::size_t i = 0; i < kKernelCount; ++i)
    if (name == kKernelNames[i]) return kKernelSources[i];
  return nullptr;
}

}  // namespace cltrain::ocl
