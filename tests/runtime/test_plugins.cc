// Broken plugins for the neg_ tests: one with another ABI version, one without the entry symbol's
// required functions. Built as libcltrain_badabi.so and libcltrain_incomplete.so.
#include "cltrain/cltrain_backend.h"

#ifdef CLTRAIN_TEST_BAD_ABI
extern "C" CLTRAIN_EXPORT const cltrain_backend_iface* cltrain_backend_entry(void) {
  static cltrain_backend_iface iface{};
  iface.abi_version = CLTRAIN_BACKEND_ABI_VERSION + 1000;
  iface.struct_size = sizeof iface;
  iface.name = "badabi";
  return &iface;
}
#else
extern "C" CLTRAIN_EXPORT const cltrain_backend_iface* cltrain_backend_entry(void) {
  static cltrain_backend_iface iface{};
  iface.abi_version = CLTRAIN_BACKEND_ABI_VERSION;
  iface.struct_size = sizeof iface;
  iface.name = "incomplete";
  return &iface;  // every function missing
}
#endif
