// What the neg_ model tests share: a small valid model's bytes and the check that a load fails with
// one line, naming the file, that holds the given parts.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace cltrain {
namespace test {

inline std::vector<uint8_t> mlp_bytes() { return write_model(make_named_model("mlp", 4), "circle"); }

inline void expect_one_line(const std::string& msg) {
  EXPECT_FALSE(msg.empty());
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_EQ(msg.rfind("m.circle: ", 0), 0u) << msg;
}

}  // namespace test
}  // namespace cltrain

#define EXPECT_LOAD_ERROR(bytes, ...)                                                     \
  do {                                                                                    \
    const std::string msg_ = ::cltrain::test::load_error(bytes);                          \
    ::cltrain::test::expect_one_line(msg_);                                               \
    for (const char* part : {__VA_ARGS__}) EXPECT_THAT(msg_, ::testing::HasSubstr(part)); \
  } while (0)
