#include "ops_command.h"

#include <cstdio>
#include <string>

#include "graph/builtin_names.h"
#include "ops/op_descriptor.h"

namespace cltrain {

int run_ops() {
  std::printf("%-24s %-31s %-24s %-10s %s\n", "op", "loads from", "options", "activation", "trains");
  for (const OpDescriptor* d : all_ops()) {
    if (d->kind != CLTRAIN_KIND_MODEL) continue;
    std::string codes;
    for (int32_t c : d->builtin_codes) codes += (codes.empty() ? "" : ", ") + describe_builtin(c);
    if (codes.empty()) codes = "(a training pass fuses it)";
    const char* act = d->fused_activation == FusedActivation::kAny        ? "fused"
                      : d->fused_activation == FusedActivation::kOnlyNone ? "NONE only"
                                                                          : "-";
    const char* options = d->options == fb::BuiltinOptions::NONE ? "-" : fb::EnumNameBuiltinOptions(d->options);
    std::printf("%-24s %-31s %-24s %-10s %s\n", d->name, codes.c_str(), options, act, d->backward ? "yes" : "no");
  }
  std::printf("steps the training graph adds:");
  for (const OpDescriptor* d : all_ops())
    if (d->kind != CLTRAIN_KIND_MODEL) std::printf(" %s", d->name);
  std::printf("\n");
  return 0;
}

}  // namespace cltrain
