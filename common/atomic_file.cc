#include "atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace cltrain {
namespace {

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Removes the NAME.tmp.PID files of dir whose NAME is stem (exact) or starts with it (!exact) and
// whose PID is not a running process (a kill -9 during a write leaves them); our own and live
// processes' are left alone.
void remove_stale(const std::string& dir, const std::string& stem, bool exact) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  while (const dirent* e = ::readdir(d)) {
    const char* name = e->d_name;
    if (std::strncmp(name, stem.c_str(), stem.size()) != 0) continue;
    const char* tmp = exact ? name + stem.size() : std::strstr(name + stem.size(), ".tmp.");
    if (!tmp || std::strncmp(tmp, ".tmp.", 5) != 0) continue;
    const char* digits = tmp + 5;
    char* end = nullptr;
    const long pid = std::strtol(digits, &end, 10);
    if (end == digits || *end || pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // running, or not ours to ask
    ::unlink((dir + "/" + name).c_str());
  }
  ::closedir(d);
}

void remove_stale_temporaries(const std::string& path) {
  const size_t slash = path.rfind('/');
  remove_stale(directory_of(path), slash == std::string::npos ? path : path.substr(slash + 1), true);
}

}  // namespace

void remove_stale_temporaries_in(const std::string& dir, const std::string& stem) { remove_stale(dir, stem, false); }

std::string stage_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  remove_stale_temporaries(path);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  auto fail = [&](const char* step, int fd) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw std::runtime_error(path + ": cannot " + step + ": " + std::strerror(err));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("create a temporary file", -1);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = EIO;
    if (n <= 0) fail("write", fd);
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) fail("sync", fd);
  if (::close(fd) != 0) fail("close", -1);
  return tmp;
}

void commit_file(const std::string& staged, const std::string& path) {
  if (::rename(staged.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(staged.c_str());
    throw std::runtime_error(path + ": cannot rename the temporary file: " + std::strerror(err));
  }
}

void discard_file(const std::string& staged) { ::unlink(staged.c_str()); }

void save_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes) {
  commit_file(stage_file(path, bytes), path);
}

std::string why_not_writable(const std::string& path) {
  if (path.empty()) return "the path is empty";
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return "it is a directory";
  }
  const std::string dir = directory_of(path);
  if (::stat(dir.c_str(), &st) != 0) return "its directory " + dir + " does not exist";
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return "its directory " + dir + " is not writable";
  return {};
}

}  // namespace cltrain
