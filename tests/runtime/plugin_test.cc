// Loading backends: the built-in CPU backend, the OpenCL plugin and broken plugins.
#include <gtest/gtest.h>

#include "backend.h"

namespace cltrain {
namespace {

TEST(Plugins, CpuIsBuiltIn) {
  std::string why;
  auto b = open_backend("cpu", default_backend_config(), &why);
  ASSERT_TRUE(b) << why;
  EXPECT_EQ(b->name(), "cpu");
}

TEST(Plugins, OpenclPluginLoads) {
  std::string why;
  auto b = open_plugin_file(CLTRAIN_OPENCL_PLUGIN, default_backend_config(), &why);
  if (!b && why.find("not available") != std::string::npos) GTEST_SKIP() << why;
  ASSERT_TRUE(b) << why;
  EXPECT_EQ(b->name(), "opencl");
  EXPECT_FALSE(b->device_name().empty());
}

TEST(Plugins, neg_MissingPlugin) {
  std::string why;
  auto b = open_backend("nosuch", default_backend_config(), &why);
  EXPECT_FALSE(b);
  EXPECT_NE(why.find("libcltrain_nosuch.so not found"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos);
}

TEST(Plugins, neg_OtherAbiVersion) {
  std::string why;
  auto b =
      open_plugin_file(std::string(CLTRAIN_TEST_PLUGIN_DIR) + "/libcltrain_badabi.so", default_backend_config(), &why);
  EXPECT_FALSE(b);
  const std::string mine = "serves version " + std::to_string(CLTRAIN_BACKEND_ABI_OLDEST);
  const std::string theirs = "ABI version " + std::to_string(CLTRAIN_BACKEND_ABI_VERSION + 1000);
  EXPECT_NE(why.find(mine), std::string::npos) << why;
  EXPECT_NE(why.find(theirs), std::string::npos) << why;
}

TEST(Plugins, neg_IncompletePlugin) {
  std::string why;
  auto b = open_plugin_file(std::string(CLTRAIN_TEST_PLUGIN_DIR) + "/libcltrain_incomplete.so",
                            default_backend_config(), &why);
  EXPECT_FALSE(b);
  EXPECT_NE(why.find("lacks a required function"), std::string::npos) << why;
}

TEST(Plugins, neg_NotALibrary) {
  std::string why;
  auto b = open_plugin_file("/etc/hostname", default_backend_config(), &why);
  EXPECT_FALSE(b);
  EXPECT_NE(why.find("cannot load backend plugin"), std::string::npos) << why;
}

TEST(Plugins, SearchPathFromEnvironment) {
  setenv("CLTRAIN_BACKEND_PATH", CLTRAIN_TEST_PLUGIN_DIR, 1);
  std::string why;
  auto b = open_backend("badabi", default_backend_config(), &why);
  unsetenv("CLTRAIN_BACKEND_PATH");
  EXPECT_FALSE(b);
  EXPECT_NE(why.find("ABI version"), std::string::npos) << why;  // found through the path
}

}  // namespace
}  // namespace cltrain
