// The OpenCL plugin opens its drivers beside a foreign LLVM (device/driver_isolation.h): with
// fake_llvm loaded globally, as `import tensorflow` loads TensorFlow's, the plugin's probe finds
// the devices; without the isolation, the same process ends in the fake (the crash it stands for).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "cltrain/cltrain_backend.h"

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

namespace {

bool under_address_sanitizer() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#endif
#endif
  return false;
}

void load_fake_llvm_globally() {
  if (!dlopen(CLTRAIN_FAKE_LLVM, RTLD_NOW | RTLD_GLOBAL)) _exit(10);
}

TEST(OpenCLDrivers, LoadBesideAForeignLlvm) {
  if (under_address_sanitizer()) GTEST_SKIP() << "ASan refuses RTLD_DEEPBIND: the isolation is off there";
  EXPECT_EXIT(
      {
        load_fake_llvm_globally();
        void* plugin = dlopen(CLTRAIN_OPENCL_PLUGIN, RTLD_NOW | RTLD_LOCAL);
        if (!plugin) _exit(11);
        auto entry = reinterpret_cast<cltrain_backend_entry_fn>(dlsym(plugin, CLTRAIN_BACKEND_ENTRY_SYMBOL));
        const cltrain_backend_iface* api = entry ? entry() : nullptr;
        char err[256] = {0};
        _exit(api && api->probe && api->probe(err, sizeof err) == CLTRAIN_OK ? 0 : 12);
      },
      ::testing::ExitedWithCode(0), "");
}

// The control: the fake does stand for the crash. POCL links LLVM (libLLVM-15, libclang-cpp);
// opened by the ICD loader with no isolation, its option registration binds to the fake.
TEST(OpenCLDrivers, neg_WithoutIsolationADriversLlvmBindsToTheForeignOne) {
  if (access("/etc/OpenCL/vendors/pocl.icd", F_OK) != 0 || std::getenv("OCL_ICD_VENDORS") ||
      std::getenv("OCL_ICD_FILENAMES"))
    GTEST_SKIP() << "the control needs POCL's ICD, which links LLVM";
  EXPECT_EXIT(
      {
        load_fake_llvm_globally();
        cl_uint n = 0;
        clGetPlatformIDs(0, nullptr, &n);
        _exit(0);
      },
      ::testing::ExitedWithCode(3), "");
}

}  // namespace
