// The plugin ABI's growth rules (cltrain_backend.h), held by two plugins built from copies of the
// header (tests/runtime/abi/): one frozen with a member fewer at the end of the function table and
// of cltrain_tensor_desc, one a step ahead with a member more there and at the end of every other
// array struct.
// The host must serve both: the same losses as the CPU alone, the ReLU steps on the plugin, and
// the plugin's rows read by their row size. And it must refuse, naming both versions, an ABI
// version outside the range it serves, and a table too short for the required functions.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "backend.h"
#include "cltrain/cltrain_cpu.h"
#include "model/builder.h"
#include "session.h"
#include "training_graph.h"

namespace cltrain {
namespace {

std::string plugin_path(const char* name) {
  return std::string(CLTRAIN_TEST_PLUGIN_DIR) + "/libcltrain_" + name + ".so";
}

// x [4,6] -> FC 5 -> Reshape -> ReLU -> FC 3 -> Softmax, trained with Adam and CCE (the Reshape
// keeps the ReLU a step of its own: activation-fusion would make it the FC's activation).
TrainingGraph relu_model_graph() {
  ModelBuilder b(7);
  int x = b.input({4, 6});
  x = b.fully_connected(x, 5, CLTRAIN_ACT_NONE);
  x = b.reshape(x, {4, 5});
  x = b.relu(x);
  x = b.fully_connected(x, 3, CLTRAIN_ACT_NONE);
  b.output(b.softmax(x));
  return build_training_graph(b.build(), TrainOptions{});
}

struct Trained {
  std::vector<float> losses;
  std::vector<std::string> placement;
  std::vector<cltrain_private_tensor> rows;
  std::optional<std::vector<cltrain_kernel_profile>> profile;
  bool profiling = false;
};

// Three training steps on fixed data, on `plugin` (if any) then the CPU.
Trained train(std::unique_ptr<Backend> plugin) {
  std::vector<std::unique_ptr<Backend>> backends;
  const bool with_plugin = plugin != nullptr;
  if (plugin) backends.push_back(std::move(plugin));
  std::string why;
  backends.push_back(open_backend("cpu", default_backend_config(), &why));
  Session session(relu_model_graph(), std::move(backends));
  session.prepare();
  Trained t;
  if (with_plugin) t.profiling = session.backend(0).set_profiling(true);
  std::vector<float> input(24), expected(12, 0.0f);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.25f;
  for (size_t n = 0; n < 4; ++n) expected[n * 3 + n % 3] = 1.0f;
  for (int64_t it = 1; it <= 3; ++it) t.losses.push_back(session.train_step(input.data(), expected.data(), nullptr));
  t.placement = session.model_op_placement();
  if (with_plugin) {
    t.rows = session.backend(0).plan_private();
    t.profile = session.backend(0).profile();
  }
  return t;
}

class AbiCompat : public ::testing::TestWithParam<const char*> {};

TEST_P(AbiCompat, HostServesThePlugin) {
  std::string why;
  std::unique_ptr<Backend> plugin = open_plugin_file(plugin_path(GetParam()), default_backend_config(), &why);
  ASSERT_TRUE(plugin) << why;
  EXPECT_EQ(plugin->name(), GetParam());
  const Trained got = train(std::move(plugin));
  const Trained want = train(nullptr);

  // The ReLU's steps ran on the plugin, which checked every tensor and step it was given.
  ASSERT_EQ(got.placement.size(), 5u);
  EXPECT_EQ(got.placement[2], GetParam());
  EXPECT_EQ(got.placement[0], "cpu");
  // ReLU is exact: the same losses, bit for bit.
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (size_t i = 0; i < got.losses.size(); ++i)
    EXPECT_EQ(std::memcmp(&got.losses[i], &want.losses[i], sizeof(float)), 0)
        << "step " << i + 1 << ": " << got.losses[i] << " vs " << want.losses[i];

  // The plugin's fixed rows, read by the plugin's row size.
  ASSERT_EQ(got.rows.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(got.rows[k].role, CLTRAIN_ROLE_LAYER_SCOPE) << k;
    EXPECT_EQ(got.rows[k].offset, uint64_t{k + 1} << 20) << k;
    EXPECT_EQ(got.rows[k].bytes, 64u * (k + 1)) << k;
  }
  EXPECT_LT(got.rows[0].step, got.rows[1].step);

  if (std::string(GetParam()) == "abi_fewer") {
    // Its table ends before profile: the host treats profile as absent.
    EXPECT_FALSE(got.profiling);
    EXPECT_FALSE(got.profile.has_value());
  } else {
    ASSERT_TRUE(got.profiling);
    ASSERT_TRUE(got.profile.has_value());
    ASSERT_EQ(got.profile->size(), 2u);  // the ReLU's forward and backward
    for (const cltrain_kernel_profile& r : *got.profile) {
      EXPECT_EQ(r.calls, 3);
      EXPECT_EQ(r.ms, 1.5);
    }
    EXPECT_EQ((*got.profile)[0].step, got.rows[0].step);
    EXPECT_EQ((*got.profile)[1].step, got.rows[1].step);
  }
}

INSTANTIATE_TEST_SUITE_P(FrozenHeaders, AbiCompat, ::testing::Values("abi_fewer", "abi_more"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

// Versions outside [CLTRAIN_BACKEND_ABI_OLDEST, CLTRAIN_BACKEND_ABI_VERSION] are refused with one
// line naming the plugin's version and the range served; so is a table too short for the required
// functions.
TEST(AbiCompat, neg_VersionsOutsideTheRangeAndShortTablesAreRefused) {
  const cltrain_backend_iface cpu = *cltrain_cpu_backend_iface();
  EXPECT_EQ(unusable_iface(cpu), "");
  for (uint32_t version : {CLTRAIN_BACKEND_ABI_OLDEST - 1, CLTRAIN_BACKEND_ABI_VERSION + 1}) {
    cltrain_backend_iface other = cpu;
    other.abi_version = version;
    const std::string why = unusable_iface(other);
    EXPECT_NE(why.find("has ABI version " + std::to_string(version)), std::string::npos) << why;
    EXPECT_NE(why.find("serves version"), std::string::npos) << why;
    EXPECT_NE(why.find(std::to_string(CLTRAIN_BACKEND_ABI_VERSION)), std::string::npos) << why;
  }
  cltrain_backend_iface short_table = cpu;
  short_table.struct_size = offsetof(cltrain_backend_iface, sync);
  const std::string why = unusable_iface(short_table);
  EXPECT_NE(why.find("function table of " + std::to_string(short_table.struct_size) + " bytes"), std::string::npos)
      << why;
}

}  // namespace
}  // namespace cltrain
