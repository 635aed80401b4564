// Faults a user meets (issue 14's D1-D9): non-finite data, weights and losses, options out of
// range, damaged plugins and checkpoints, bad output paths, full disks and killed writes. Each ends
// with one line and a non-zero exit (or a warning and a CPU run, for a plugin), and no good file is
// overwritten. Each neg_ test fails on 8580472 (run it with CLTRAIN_TEST_CLI=that build's cltrain).
#include <signal.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "cli_fixture.h"

namespace cltrain {
namespace {

class Faults : public Cli {
 protected:
  std::string mlp() { return model_file(make_named_model("mlp", 2), "mlp.circle"); }
  // train_args on the given backend, OpenCL's kernels cached in the build tree.
  std::string on(const std::string& backend, const std::string& model) const {
    std::string a = train_args(model);
    return a.replace(a.find("--backends cpu"), 14, "--backends " + backend);
  }
  // A good export at out, to check that a failing run leaves it alone.
  std::vector<uint8_t> good_export(const std::string& out) {
    EXPECT_EQ(run_cli(train_args(mlp()) + " --export_circle " + out).code, 0);
    return read_bytes(out);
  }
};

const char* const kBackends[] = {"cpu", "opencl"};

// D1: a NaN in the data is refused where it is read, naming sample and element.
TEST_F(Faults, neg_NaNInTheInputIsOneLine) {
  std::vector<float> x(4 * 784, 0.5f);
  x[784 + 7] = std::numeric_limits<float>::quiet_NaN();
  write_floats(path("x.raw"), x);
  for (const char* b : kBackends) expect_one_line_failure(run_cli(on(b, mlp())), "sample 1 holds NaN at element 7");
}

// D1: a learning rate that blows the weights up stops training with the step and epoch named, on
// both backends (cross-entropy's clamp and log pass NaN on), and the good export stays.
TEST_F(Faults, neg_BlownUpLearningRateStopsTrainingAndKeepsTheGoodExport) {
  const std::string out = path("good.circle");
  const std::vector<uint8_t> before = good_export(out);
  for (const char* b : kBackends) {
    const Result r = run_cli(on(b, mlp()) + " --optimizer 1 --learning_rate 1e30 --epoch 3 --export_circle " + out);
    expect_one_line_failure(r, "the loss became");
    EXPECT_NE(r.err.find("at epoch 1, step "), std::string::npos) << r.err;
    EXPECT_EQ(read_bytes(out), before) << b;
  }
}

// --on_nonfinite skip: the steps the blown-up learning rate makes non-finite are not applied but
// counted in the epoch line; training ends, and the export holds finite weights. The default
// (stop) says the failed step was not applied.
TEST_F(Faults, BlownUpStepsAreSkippedAndCounted) {
  for (const char* b : kBackends) {
    const std::string out = path(std::string("skip_") + b + ".circle");
    const Result r = run_cli_all(on(b, mlp()) + " --optimizer 1 --learning_rate 1e30 --epoch 2 --on_nonfinite skip" +
                                 " --export_circle " + out);
    ASSERT_EQ(r.code, 0) << b << ": " << r.err;
    EXPECT_NE(r.err.find("skipped: "), std::string::npos) << r.err;
    EXPECT_FALSE(read_bytes(out).empty());
    const Result stop = run_cli(on(b, mlp()) + " --optimizer 1 --learning_rate 1e30 --epoch 2");
    expect_one_line_failure(stop, "not applied: the weights and optimizer state are those before it");
  }
  expect_one_line_failure(run_cli(train_args(mlp()) + " --on_nonfinite ignore"), "--on_nonfinite takes stop or skip");
  expect_one_line_failure(run_cli(train_args(mlp()) + " --resume " + path("d") + " --checkpoint " + path("c")),
                          "give one");
}

// A device failing mid-training (CLTRAIN_OPENCL_FAULT: the Nth enqueue or read fails once) with a
// checkpoint after every step: one line and exit 1, the newest checkpoint restored where the
// failure hit the updates; --resume then ends with the uninterrupted run's weights, bitwise.
// A buffer that cannot be allocated trains on the CPU, with one warning.
TEST_F(Faults, DeviceFaultsMidTrainingResumeToTheCleanWeights) {
  std::vector<float> x(8 * 784), y(8 * 10, 0.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f;
  for (int i = 0; i < 8; ++i) y[static_cast<size_t>(i * 10 + (i * 3) % 10)] = 1.0f;
  write_floats(path("x.raw"), x);
  write_floats(path("y.raw"), y);
  const std::string dir = path("ck");
  const std::string args = on("opencl", mlp()) + " --epoch 2 --checkpoint_every 1 --checkpoint_dir " + dir;
  ASSERT_EQ(run_cli(args + " --export_circle " + path("clean.circle")).code, 0);
  const std::vector<uint8_t> clean = read_bytes(path("clean.circle"));
  int restored = 0, before_updates = 0;
  for (const char* fault :
       {"read:2", "enqueue:3", "enqueue:10", "enqueue:15", "enqueue:20", "enqueue:40", "enqueue:60"}) {
    SCOPED_TRACE(fault);
    std::filesystem::remove_all(dir);
    const Result r = run_cli(args, std::string("CLTRAIN_OPENCL_FAULT=") + fault);
    expect_one_line_failure(r, "CL_OUT_OF_RESOURCES");
    // In the first step's updates there is no checkpoint to restore yet: the weights are refused.
    if (r.err.find("back at optimizer step") != std::string::npos)
      ++restored;
    else if (r.err.find("while its updates ran") == std::string::npos)
      ++before_updates;
    const std::string out = path("resumed.circle");
    std::filesystem::remove(out);
    const Result again = run_cli(args + " --resume " + dir + " --export_circle " + out);
    ASSERT_EQ(again.code, 0) << again.err;
    EXPECT_EQ(read_bytes(out), clean) << "resumed after " << fault << ": " << again.err;
  }
  EXPECT_GT(restored, 0);
  EXPECT_GT(before_updates, 0);
  const Result cpu = run_cli(args, "CLTRAIN_OPENCL_FAULT=alloc:1");
  EXPECT_EQ(cpu.code, 0) << cpu.err;
  EXPECT_NE(cpu.err.find("training on the CPU backend instead"), std::string::npos) << cpu.err;
}

// A training writes only where it was told: the exports, the report, the checkpoint and cache
// directories given. Run from an empty directory with HOME, TMPDIR and XDG_CACHE_HOME empty too,
// on a model whose tensor names try to climb out ("../../..."), every file under the sandbox
// afterwards is under a path given on the command line (POCL's own kernel cache, POCL_CACHE_DIR,
// is the OpenCL implementation's and set aside).
TEST_F(Faults, WritesOnlyTheGivenPaths) {
  namespace fs = std::filesystem;
  const std::string sand = path("sand");
  for (const char* d : {"home", "cwd", "tmp", "in", "out", "pocl"}) fs::create_directories(sand + "/" + d);
  Model m = make_named_model("mlp", 2);
  for (size_t t = 0; t < m.tensors.size(); ++t) m.tensors[t].name = "../../../../escape" + std::to_string(t);
  write_bytes(sand + "/in/m.circle", write_model(m, "circle"));
  fs::copy_file(path("x.raw"), sand + "/in/x.raw");
  fs::copy_file(path("y.raw"), sand + "/in/y.raw");
  const std::string env = "cd " + sand + "/cwd && HOME=" + sand + "/home TMPDIR=" + sand +
                          "/tmp XDG_CACHE_HOME=" + sand + "/home/.cache POCL_CACHE_DIR=" + sand + "/pocl";
  const Result r = run_cli(sand + "/in/m.circle --batch_size 2 --epoch 2 --backends opencl --load_input:raw " + sand +
                               "/in/x.raw --load_expected:raw " + sand + "/in/y.raw --checkpoint_every 1" +
                               " --checkpoint_dir " + sand + "/ck --cache-dir " + sand + "/cache --export_circle " +
                               sand + "/out/m.circle --export_checkpoint " + sand + "/out/c.ckpt --export_circleplus " +
                               sand + "/out/p.circle --report " + sand + "/out/r.json",
                           env);
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> given = {"/in/", "/out/", "/ck/", "/cache/", "/pocl/"}, stray;
  int outputs = 0;
  for (const auto& e : fs::recursive_directory_iterator(sand)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = e.path().string().substr(sand.size());
    bool ok = false;
    for (const std::string& g : given) ok = ok || rel.rfind(g, 0) == 0;
    if (!ok) stray.push_back(rel);
    outputs += rel.rfind("/out/", 0) == 0 || rel.rfind("/ck/", 0) == 0;
  }
  EXPECT_TRUE(stray.empty()) << "written outside the given paths: " << stray.front();
  EXPECT_EQ(outputs, 4 + 3);  // the four outputs, the newest three checkpoints
  EXPECT_FALSE(fs::exists(path("escape0")));
  EXPECT_FALSE(fs::exists(sand + "/escape0"));
}

// D1: an Inf weight in the model is refused before training, naming the tensor.
TEST_F(Faults, neg_InfWeightIsRefused) {
  Model m = make_named_model("mlp", 2);
  int32_t w = -1;
  for (size_t t = 0; t < m.tensors.size(); ++t)
    if (m.tensors[t].name.find("weights") != std::string::npos) w = static_cast<int32_t>(t);
  ASSERT_GE(w, 0);
  const float inf = std::numeric_limits<float>::infinity();
  std::memcpy(m.tensors[static_cast<size_t>(w)].data.data() + 12, &inf, 4);
  const std::string file = model_file(m, "inf.circle");
  for (const char* b : kBackends) expect_one_line_failure(run_cli(on(b, file)), "holds +Inf at element 3");
}

// D2: learning rates beyond float32 are refused, not rounded to infinity.
TEST_F(Faults, neg_LearningRateBeyondFloat32) {
  for (const char* lr : {"inf", "1e39", "nan", "1e-50"})
    expect_one_line_failure(run_cli(train_args(mlp()) + " --learning_rate " + lr), "finite float32");
}

// D3: a truncated plugin is a warning and a CPU run (train), one line and exit 1 (devices), not
// SIGBUS.
TEST_F(Faults, neg_TruncatedPluginIsNamedNotACrash) {
  const std::string dir = path("plugins");
  std::filesystem::create_directories(dir);
  std::vector<uint8_t> so = read_bytes(std::string(CLTRAIN_TEST_BUILD_DIR) + "/libcltrain_opencl.so");
  ASSERT_GT(so.size(), 300000u);
  so.resize(so.size() / 2);
  write_bytes(dir + "/libcltrain_opencl.so", so);
  const std::string env = "CLTRAIN_BACKEND_PATH=" + dir;
  const Result r = run_cli(on("opencl", mlp()), env);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_NE(r.err.find("is truncated"), std::string::npos) << r.err;
  expect_one_line_failure(run_cli("devices", env), "is truncated");
}

// D4: a pool filter beyond any useful size (here 2^31 - 1 with SAME padding) is a model error.
TEST_F(Faults, neg_HugePoolFilter) {
  ModelBuilder b;
  int x = b.input({2, 28, 28, 1});
  x = b.max_pool2d(x, 2, 2, 2, CLTRAIN_PADDING_SAME, "pool");
  x = b.reshape(x, {2, 14 * 14});
  x = b.fully_connected(x, 10, CLTRAIN_ACT_NONE);
  b.output(b.softmax(x));
  Model m = b.build();
  for (auto& op : m.operators)
    if (op.op == CLTRAIN_OP_MAX_POOL_2D) op.params.filter_h = std::numeric_limits<int32_t>::max();
  const std::string file = model_file(m, "pool.circle");
  write_floats(path("x.raw"), std::vector<float>(4 * 784, 0.5f));
  expect_one_line_failure(run_cli(train_args(file)), "pool filter height 2147483647 exceeds");
}

// D5: a report that does not fit on the disk (a file size limit here) is an error, and no part
// of it is left.
TEST_F(Faults, neg_ReportOnAFullDiskIsAnError) {
  const std::string report = path("r.json");
  expect_one_line_failure(run_cli(train_args(mlp()) + " --no-cache --report " + report, "trap '' XFSZ; ulimit -f 1;"),
                          "r.json");
  EXPECT_FALSE(std::filesystem::exists(report));
}

// D6: output paths are checked before training; a checkpoint that cannot be written does not
// stop the model's export.
TEST_F(Faults, neg_BadOutputPathIsCheckedBeforeTraining) {
  for (const char* opt : {"--export_circle", "--export_checkpoint", "--report", "--export_circleplus"}) {
    const Result r = run_cli_all(train_args(mlp()) + " " + opt + " " + path("no/such/dir/out"));
    EXPECT_NE(r.code, 0) << opt;
    EXPECT_EQ(r.err.find("Epoch 1/"), std::string::npos) << opt << " trained first: " << r.err;
    EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
  }
  // 1000 blocks: room for the model (408 kB), not for the Adam checkpoint (1.2 MB).
  const Result r = run_cli(
      train_args(mlp()) + " --no-cache --export_checkpoint " + path("c.ckpt") + " --export_circle " + path("m.circle"),
      "trap '' XFSZ; ulimit -f 1000;");
  expect_one_line_failure(r, "c.ckpt");
  EXPECT_NE(r.err.find("written: " + path("m.circle")), std::string::npos) << r.err;
  EXPECT_TRUE(std::filesystem::exists(path("m.circle")));
  EXPECT_FALSE(std::filesystem::exists(path("c.ckpt")));
}

// D7: a checkpoint recording an impossible epoch is refused; one that has trained every epoch
// asked for says so.
TEST_F(Faults, neg_CheckpointEpochOutOfRange) {
  const std::string model = mlp(), ckpt = path("c.ckpt");
  ASSERT_EQ(run_cli(train_args(model) + " --export_checkpoint " + ckpt).code, 0);
  std::vector<uint8_t> bytes = read_bytes(ckpt);
  uint32_t other = 0;
  std::memcpy(&other, bytes.data() + 12, 4);
  ASSERT_LE(other + 8u, bytes.size());
  expect_one_line_failure(run_cli(train_args(model) + " --checkpoint " + ckpt), "has trained 1 epochs; --epoch 1");
  const uint32_t huge = 0xFFFFFFFFu;
  std::memcpy(bytes.data() + other + 4, &huge, 4);
  write_bytes(ckpt, bytes);
  expect_one_line_failure(run_cli(train_args(model) + " --epoch 2 --checkpoint " + ckpt), "records epoch 4294967295");
}

// D8: the temporary file a killed write left behind is removed by the next write of that file.
TEST_F(Faults, neg_StaleTemporaryOfAKilledWriteIsRemoved) {
  const std::string out = path("m.circle");
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  waitpid(child, nullptr, 0);  // a pid that no longer runs
  const std::string stale = out + ".tmp." + std::to_string(child);
  const std::string live = out + ".tmp." + std::to_string(getpid());  // ours: running, kept
  write_bytes(stale, {1, 2, 3});
  write_bytes(live, {1, 2, 3});
  ASSERT_EQ(run_cli(train_args(mlp()) + " --export_circle " + out).code, 0);
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_TRUE(std::filesystem::exists(out));
}

// D9: a directory as raw data, negative --data_limit and --device, a word as make-model's batch.
TEST_F(Faults, neg_OptionsAndPathsOutOfRange) {
  std::filesystem::create_directories(path("dir"));
  const std::string model = mlp();
  expect_one_line_failure(
      run_cli(model + " --backends cpu --load_input:raw " + path("dir") + " --load_expected:raw " + path("y.raw")),
      "is not a regular file (a directory)");
  expect_one_line_failure(run_cli(train_args(model) + " --data_limit -5"), "--data_limit must not be negative");
  expect_one_line_failure(run_cli(train_args(model) + " --device -1"), "--device takes a device index");
  expect_one_line_failure(run_cli("make-model mlp --batch_size abc -o " + path("m.circle")),
                          "--batch_size takes an integer, not 'abc'");
}

}  // namespace
}  // namespace cltrain
