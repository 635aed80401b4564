// Writing a file so that readers see either the old contents or the new ones, never a part:
// shared by the host (models, checkpoints) and the backends (their on-disk caches).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cltrain {

// Writes bytes to path.tmp.PID, fsyncs, renames it over path. std::runtime_error with one line
// on failure (the temporary file is removed).
void save_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace cltrain
