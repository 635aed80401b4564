// The fixture of the CLI tests: runs the cltrain executable ($CLTRAIN_TEST_CLI if set, so that
// the neg_ tests can be run against an older build) and checks its one-line errors.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "model/builder.h"
#include "model/model.h"

namespace cltrain {

inline std::string cli_path() {
  const char* over = std::getenv("CLTRAIN_TEST_CLI");
  return over && *over ? over : CLTRAIN_CLI;
}

struct Result {
  int code = -1;
  std::string err;  // stderr
};

// Runs cltrain with the given redirections; r.err gets what they send to the pipe.
inline Result run_with(const std::string& args, const std::string& env, const char* redirect) {
  const std::string cmd = env + " " + cli_path() + " " + args + " " + redirect;
  FILE* p = popen(cmd.c_str(), "r");
  Result r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.err.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

inline Result run_cli(const std::string& args, const std::string& env = "") {
  return run_with(args, env, "2>&1 >/dev/null");
}

// Runs cltrain and returns its standard output (stderr dropped), with the exit code.
inline Result run_cli_stdout(const std::string& args) { return run_with(args, "", "2>/dev/null"); }

// Runs cltrain and returns stdout and stderr together, with the exit code.
inline Result run_cli_all(const std::string& args, const std::string& env = "") { return run_with(args, env, "2>&1"); }

inline std::string line_with(const std::string& text, const std::string& prefix) {
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return "";
  return text.substr(at, text.find('\n', at) - at);
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    // The CLI's default cache directory: in the build tree, never the user's ~/.cache.
    setenv("CLTRAIN_CACHE_DIR", CLTRAIN_TEST_CACHE_DIR, 1);
    dir_ = ::testing::TempDir() + "cltrain_cli_" + std::to_string(getpid());
    mkdir_ok_ = system(("mkdir -p " + dir_).c_str()) == 0;
    ASSERT_TRUE(mkdir_ok_);
    // Four samples of valid data for the mlp (batch 2).
    write_floats(path("x.raw"), std::vector<float>(4 * 784, 0.5f));
    std::vector<float> y(4 * 10, 0.0f);
    for (int i = 0; i < 4; ++i) y[i * 10 + i] = 1.0f;
    write_floats(path("y.raw"), y);
  }
  // Each test's files go with it (a failing test's stay, to look at); tests that take
  // permissions away get them back first.
  void TearDown() override {
    if (dir_.empty() || HasFailure()) return;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(
             dir_, std::filesystem::directory_options::skip_permission_denied, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
      std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all, std::filesystem::perm_options::add,
                                   ec);
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path(const std::string& f) const { return dir_ + "/" + f; }
  static void write_floats(const std::string& p, const std::vector<float>& v) {
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
  }
  static std::vector<uint8_t> read_bytes(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  static void write_bytes(const std::string& p, const std::vector<uint8_t>& b) {
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  std::string model_file(const Model& m, const std::string& name) {
    write_bytes(path(name), write_model(m, "circle"));
    return path(name);
  }
  std::string train_args(const std::string& model) const {
    return model + " --batch_size 2 --epoch 1 --backends cpu --load_input:raw " + path("x.raw") +
           " --load_expected:raw " + path("y.raw");
  }
  // One line on stderr, naming the problem, and a non-zero exit.
  static void expect_one_line_failure(const Result& r, const std::string& word) {
    EXPECT_NE(r.code, 0);
    EXPECT_LT(r.code, 128) << "crashed";
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
    EXPECT_NE(r.err.find(word), std::string::npos) << r.err;
  }
  std::string dir_;
  bool mkdir_ok_ = false;
};

}  // namespace cltrain
