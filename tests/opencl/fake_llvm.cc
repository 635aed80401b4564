// A stand-in for an LLVM that a process holds before it opens OpenCL drivers (TensorFlow's
// libtensorflow_framework.so.2 exports LLVM's symbols): loaded with RTLD_GLOBAL, its
// llvm::cl::Option::addArgument() is what a driver's LLVM would bind to, and it ends the process
// with exit code 3 where the real foreign LLVM crashes.
#include <unistd.h>

namespace llvm::cl {
class Option {
 public:
  void addArgument();
};
void Option::addArgument() { _exit(3); }
}  // namespace llvm::cl
