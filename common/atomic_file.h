// Writing a file so that readers see either the old contents or the new ones, never a part:
// shared by the host (models, checkpoints, reports) and the backends (their on-disk caches).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cltrain {

// Writes bytes to path.tmp.PID, fsyncs, renames it over path. std::runtime_error with one line
// on failure (the temporary file is removed). Temporary files of path that a process killed
// while writing left behind (path.tmp.PID of a PID no longer running) are removed first.
void save_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes);
inline void save_text_atomic(const std::string& path, const std::string& text) {
  save_file_atomic(path, std::vector<uint8_t>(text.begin(), text.end()));
}

// Removes the temporary files of dir that killed writers of files named stem... left behind
// (STEM*.tmp.PID of PIDs no longer running): a directory of files written under changing names
// (periodic checkpoints) never collects them.
void remove_stale_temporaries_in(const std::string& dir, const std::string& stem);

// The two halves of save_file_atomic, for files that go together: stage_file writes and syncs
// the temporary file and returns its name; commit_file renames it over path; discard_file removes
// it. Stage every file first, then commit them one after another.
std::string stage_file(const std::string& path, const std::vector<uint8_t>& bytes);
void commit_file(const std::string& staged, const std::string& path);
void discard_file(const std::string& staged);

// Where path cannot be written: "" when it can (its directory exists and is writable, and path is
// not a directory), else why. For checking output paths before a long run.
std::string why_not_writable(const std::string& path);

}  // namespace cltrain
