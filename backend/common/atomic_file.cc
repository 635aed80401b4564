#include "atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace cltrain {

void save_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes) {
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
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename the temporary file", -1);
}

}  // namespace cltrain
