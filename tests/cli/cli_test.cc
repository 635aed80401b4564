// The cltrain command line: every bad input gives one clear line and a non-zero exit.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/builder.h"
#include "model/model.h"
#include "ops/op_descriptor.h"

#include "cli_fixture.h"
#include "test_util.h"  // tests/model: the embedding model

namespace cltrain {
namespace {

// `cltrain ops` lists every model op of the descriptors, with the builtin code it loads from.
TEST_F(Cli, OpsListsEveryModelOpWithItsBuiltinCode) {
  const Result r = run_cli_stdout("ops");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const OpDescriptor* d : all_ops()) {
    if (d->kind != CLTRAIN_KIND_MODEL) continue;
    if (d->builtin_codes.empty()) {  // made by a training pass (the LSTM cells): listed as such
      bool listed = r.err.find(std::string("\n") + d->name + " ") != std::string::npos;
      EXPECT_TRUE(listed) << d->name << " is not listed:\n" << r.err;
      continue;
    }
    // A line that starts with the op's name and holds its code ("ELU " is also inside "RELU
    // (builtin 19)", and a line of another op may come out cut where a test beside this one
    // writes to the same terminal).
    const std::string code = "(builtin " + std::to_string(d->builtin_codes.at(0)) + ")";
    bool listed = false;
    std::istringstream lines(r.err);
    for (std::string l; std::getline(lines, l);)
      listed = listed || (l.rfind(std::string(d->name) + " ", 0) == 0 && l.find(code) != std::string::npos);
    EXPECT_TRUE(listed) << d->name << " " << code << " is not listed:\n" << r.err;
  }
}

TEST_F(Cli, TrainsOnRawData) {
  const Result r = run_cli(train_args(model_file(make_named_model("mlp", 2), "mlp.circle")));
  EXPECT_EQ(r.code, 0) << r.err;
}

// A model that takes int32 token ids reads --load_input:raw as int32 ids; an id outside the
// embedding table is one line, and Fashion-MNIST (images) is refused for it.
TEST_F(Cli, TrainsOnInt32Ids) {
  const std::string m = model_file(test::embedding_model(), "emb.circle");
  std::vector<int32_t> ids(4 * 5);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i % 11);
  auto write_ids = [&](const std::string& p) {
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(ids.data()), static_cast<std::streamsize>(ids.size() * 4));
  };
  write_ids(path("ids.raw"));
  std::vector<float> y(4 * 3, 0.0f);
  for (int i = 0; i < 4; ++i) y[i * 3 + i % 3] = 1.0f;
  write_floats(path("y3.raw"), y);
  const std::string args = m + " --batch_size 2 --epoch 2 --backends cpu --load_expected:raw " + path("y3.raw");
  const Result r = run_cli_all(args + " --load_input:raw " + path("ids.raw"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("Epoch 2/2"), std::string::npos) << r.err;
  ids[7] = 11;
  write_ids(path("bad.raw"));
  expect_one_line_failure(run_cli(args + " --load_input:raw " + path("bad.raw")),
                          "id 11 at element 7 is outside the embedding table's 11 rows");
  expect_one_line_failure(run_cli(m + " --batch_size 2 --data fashion-mnist"), "takes int32 token ids");
  // bench makes ids within the table (float bits read as ids would be far outside it: NaN rows).
  const Result b = run_cli_stdout("bench " + m + " --batch_size 2 --steps 2 --backends cpu");
  EXPECT_EQ(b.code, 0) << b.err;
  EXPECT_NE(b.err.find("step 2 - loss: "), std::string::npos) << b.err;
  EXPECT_EQ(b.err.find("nan"), std::string::npos) << b.err;
}

// --lora RANK[:ALPHA]: the adapters train (bench's loss is finite); a rank below 1 or an alpha
// that is not positive is one usage line.
TEST_F(Cli, LoraTrainsAndBadRanksAreOneLine) {
  const std::string m = model_file(test::embedding_model(), "emb_lora.circle");
  const Result b = run_cli_stdout("bench " + m + " --batch_size 2 --steps 2 --backends cpu --lora 2:4");
  EXPECT_EQ(b.code, 0) << b.err;
  EXPECT_NE(b.err.find("step 2 - loss: "), std::string::npos) << b.err;
  EXPECT_EQ(b.err.find("nan"), std::string::npos) << b.err;
  expect_one_line_failure(run_cli("bench " + m + " --lora 0"), "--lora takes a rank of 1 or more, not '0'");
  expect_one_line_failure(run_cli("bench " + m + " --lora 2:-1"), "--lora's alpha must be positive, not '2:-1'");
}

// --export_lora writes the adapters alone (safetensors); --lora_from starts from them. With SGD
// (no optimizer state) and no shuffle, one epoch, export, then one epoch from the file trains the
// second epoch of a two-epoch run bit for bit (CLTRAIN_STEP_LOG: epoch, step and loss of each).
TEST_F(Cli, LoraAdaptersResumeBitwiseFromTheirFile) {
  const std::string m = model_file(make_named_model("mlp", 2), "lora_mlp.circle");
  const std::string args = train_args(m) + " --lora 2 --optimizer 1 --learning_rate 0.1 --no-shuffle";
  const Result two = run_cli(args + " --epoch 2", "CLTRAIN_STEP_LOG=" + path("two.log"));
  ASSERT_EQ(two.code, 0) << two.err;
  const Result first = run_cli(args + " --export_lora " + path("a.safetensors"));
  ASSERT_EQ(first.code, 0) << first.err;
  const Result second =
      run_cli(args + " --lora_from " + path("a.safetensors"), "CLTRAIN_STEP_LOG=" + path("second.log"));
  ASSERT_EQ(second.code, 0) << second.err;
  std::vector<std::string> all, resumed;
  for (auto [file, lines] : {std::make_pair("two.log", &all), std::make_pair("second.log", &resumed)}) {
    std::ifstream f(path(file));
    for (std::string line; std::getline(f, line);) lines->push_back(line.substr(line.find(' ') + 1));  // step, loss
  }
  ASSERT_EQ(all.size(), 2 * resumed.size());
  ASSERT_FALSE(resumed.empty());
  EXPECT_EQ(std::vector<std::string>(all.begin() + static_cast<std::ptrdiff_t>(resumed.size()), all.end()), resumed);
  expect_one_line_failure(run_cli(train_args(m) + " --export_lora " + path("c.safetensors")), "give --lora RANK");
  expect_one_line_failure(run_cli(train_args(m) + " --lora 3 --lora_from " + path("a.safetensors")),
                          "adapters of rank 2; this session's are of rank 3");
}

TEST_F(Cli, neg_TruncatedFile) {
  auto bytes = write_model(make_named_model("mlp", 2), "circle");
  bytes.resize(bytes.size() / 3);
  write_bytes(path("t.circle"), bytes);
  expect_one_line_failure(run_cli(train_args(path("t.circle"))), "t.circle");
}

TEST_F(Cli, neg_WrongIdentifier) {
  auto bytes = write_model(make_named_model("mlp", 2), "circle");
  bytes[4] = 'X';
  bytes[5] = 'Y';
  write_bytes(path("id.circle"), bytes);
  expect_one_line_failure(run_cli(train_args(path("id.circle"))), "identifier");
}

TEST_F(Cli, neg_TensorIndexOutOfRange) {
  Model m = make_named_model("mlp", 2);
  m.operators[1].inputs[0] = 99;
  expect_one_line_failure(run_cli(train_args(model_file(m, "idx.circle"))), "99");
}

TEST_F(Cli, neg_BufferShorterThanTensor) {
  Model m = make_named_model("mlp", 2);
  for (auto& t : m.tensors)
    if (t.data.size() > 1000) {
      t.data.resize(1000);
      break;
    }
  expect_one_line_failure(run_cli(train_args(model_file(m, "buf.circle"))), "buffer");
}

TEST_F(Cli, neg_MissingModel) {
  expect_one_line_failure(run_cli(train_args(path("nothing.circle"))), "nothing.circle");
}

TEST_F(Cli, neg_RawDataNotWholeSamples) {
  write_floats(path("x.raw"), std::vector<float>(4 * 784 + 3, 0.5f));
  expect_one_line_failure(run_cli(train_args(model_file(make_named_model("mlp", 2), "mlp.circle"))),
                          "not a multiple of the sample size");
}

TEST_F(Cli, neg_LossBecomesNaN) {
  const std::string model = model_file(make_named_model("mlp", 2), "mlp.circle");
  expect_one_line_failure(run_cli(train_args(model) + " --optimizer 1 --learning_rate 1e30 --loss 1 --epoch 5"),
                          "loss became");
}

TEST_F(Cli, neg_MemoryBudgetBelowTheLeast) {
  const std::string model = model_file(make_named_model("mlp", 2), "mlp.circle");
  expect_one_line_failure(run_cli(train_args(model) + " --memory_budget 1000"),
                          "1000 bytes is below the least this model trains in here");
  expect_one_line_failure(run_cli(train_args(model) + " --memory_budget 12x"), "--memory_budget takes a byte count");
  EXPECT_EQ(run_cli(train_args(model) + " --memory_budget 1G").code, 0);
}

TEST_F(Cli, neg_StorageTakesFp16OrFloat32) {
  const std::string model = model_file(make_named_model("mlp", 2), "mlp.circle");
  expect_one_line_failure(run_cli(train_args(model) + " --storage fp8"), "--storage takes fp16 or float32, not 'fp8'");
  EXPECT_EQ(run_cli(train_args(model) + " --storage fp16").code, 0);
}

TEST_F(Cli, neg_UnknownOption) { expect_one_line_failure(run_cli("--frobnicate"), "unknown option"); }

TEST_F(Cli, neg_MissingPluginWarnsAndTrainsOnCpu) {
  const std::string model = model_file(make_named_model("mlp", 2), "mlp.circle");
  const Result r = run_cli(train_args(model) + " --backends nosuch");
  EXPECT_EQ(r.code, 0) << r.err;  // training continues on the CPU
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_NE(r.err.find("libcltrain_nosuch.so not found"), std::string::npos) << r.err;
}

TEST_F(Cli, neg_OtherAbiPluginWarnsAndTrainsOnCpu) {
  const std::string model = model_file(make_named_model("mlp", 2), "mlp.circle");
  const Result r = run_cli(train_args(model) + " --backends badabi", "CLTRAIN_BACKEND_PATH=" CLTRAIN_TEST_PLUGIN_DIR);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("ABI version"), std::string::npos) << r.err;
}

TEST_F(Cli, ExportedModelGivesTheSameTestAccuracy) {
  const std::string model = model_file(make_named_model("mlp", 32), "mlp.circle");
  const std::string data = " --data fashion-mnist --data_limit 320 --backends cpu ";
  const Result trained = run_cli_stdout(model + data + "--epoch 1 --export_circle " + path("trained.circle"));
  ASSERT_EQ(trained.code, 0);
  const Result reloaded = run_cli_stdout(path("trained.circle") + data + "--epoch 0");
  ASSERT_EQ(reloaded.code, 0);
  const std::string a = line_with(trained.err, "Test accuracy"), b = line_with(reloaded.err, "Test accuracy");
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  const Result untrained = run_cli_stdout(model + data + "--epoch 0");
  EXPECT_NE(line_with(untrained.err, "Test accuracy"), a);  // the weights did change
}

TEST_F(Cli, TrainingInfoGivesDefaults) {
  const std::string model = model_file(make_named_model("mlp", 2), "mlp.circle");
  ASSERT_EQ(
      run_cli(train_args(model) + " --optimizer 1 --learning_rate 0.01 --export_circleplus " + path("plus.circle"))
          .code,
      0);
  const Result r = run_cli_stdout(train_args(path("plus.circle")));
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.err.find("- optimizer       = sgd"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("- learning_rate   = 0.01"), std::string::npos) << r.err;
  const Result overridden = run_cli_stdout(train_args(path("plus.circle")) + " --optimizer 2");
  EXPECT_NE(overridden.err.find("- optimizer       = adam"), std::string::npos) << overridden.err;
}

// The plan as JSON: every tensor placed, and no two tensors that live at once share a byte.
TEST_F(Cli, PlanJsonHasNoOverlaps) {
  const std::string model = model_file(make_named_model("branched", 4), "branched.circle");
  const Result r =
      run_cli_stdout("plan " + model + " --plan-json " + path("plan.json") + " --plan-svg " + path("plan.svg"));
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.err.find("[      ALLOC     ] allocation capacity:"), std::string::npos) << r.err;
  std::ifstream f(path("plan.json"));
  const auto j = nlohmann::json::parse(f);
  const auto& t = j["tensors"];
  ASSERT_GT(t.size(), 10u);
  // A tensor that shares another's bytes (in place) has its offset; the group may overlap itself.
  std::map<std::string, std::string> shares;
  for (const auto& x : t)
    if (x.contains("shares"))
      shares[x["backend"].get<std::string>() + "/" + x["name"].get<std::string>()] =
          x["backend"].get<std::string>() + "/" + x["shares"].get<std::string>();
  auto root = [&](std::string k) {
    for (int hops = 0; shares.count(k) && hops < 1000; ++hops) k = shares[k];
    return k;
  };
  for (size_t a = 0; a < t.size(); ++a) {
    ASSERT_GE(t[a]["offset"].get<int64_t>(), 0) << t[a]["name"];
    for (size_t b = a + 1; b < t.size(); ++b) {
      if (t[a]["backend"] != t[b]["backend"]) continue;
      const std::string ka = t[a]["backend"].get<std::string>() + "/" + t[a]["name"].get<std::string>();
      const std::string kb = t[b]["backend"].get<std::string>() + "/" + t[b]["name"].get<std::string>();
      if (root(ka) == root(kb)) {
        EXPECT_EQ(t[a]["offset"], t[b]["offset"]) << ka << " shares bytes with " << kb;
        continue;
      }
      const bool live_together = t[a]["first_step"] <= t[b]["last_step"] && t[b]["first_step"] <= t[a]["last_step"];
      const int64_t a0 = t[a]["offset"], a1 = a0 + t[a]["bytes"].get<int64_t>();
      const int64_t b0 = t[b]["offset"], b1 = b0 + t[b]["bytes"].get<int64_t>();
      EXPECT_FALSE(live_together && a0 < b1 && b0 < a1) << t[a]["name"] << " and " << t[b]["name"];
    }
  }
  EXPECT_TRUE(std::ifstream(path("plan.svg")).good());
}

// The OpenCL backend's prepare asks each op family for a step's plan once per budget it tries
// (the floor, each budget regrowing the scratch tries, the lean floor under a memory budget), and
// prepares the step with the plan made at its budget: its trace counts the asks and the (step,
// budget) pairs, which must be as many.
TEST_F(Cli, OpenclAsksForEachStepPlanOncePerBudget) {
  const std::string model = model_file(make_named_model("mnist-kaggle", 8), "mk.circle");
  for (const char* budget : {"", " --batch_size 32 --memory_budget 14500000"}) {
    // bench prepares (plan only plans: it prints no trace of the asks).
    const Result r =
        run_cli("bench " + model + " --backends opencl --no-cache --steps 1 --warmup 0" + std::string(budget),
                "CLTRAIN_OPENCL_TRACE=1");
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string line = line_with(r.err, "op plans: ");
    int asks = -1;
    size_t pairs = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "op plans: %d asked for %zu", &asks, &pairs), 2) << r.err;
    EXPECT_EQ(static_cast<size_t>(asks), pairs) << line;
    EXPECT_GE(pairs, 10u) << line;  // 3 convolutions and 2 FullyConnected, forward and backward
  }
}

TEST_F(Cli, ValidationSplitReportsValidationLossAndAccuracy) {
  const std::string model = model_file(make_named_model("mlp", 32), "mlp.circle");
  const Result r = run_cli_stdout(model +
                                  " --data fashion-mnist --data_limit 640 --validation_split 0.25 --epoch 2"
                                  " --backends cpu --metric 0 --report " +
                                  path("val.json"));
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(line_with(r.err, "Epoch 2/2").find(" - val_categorical_accuracy: "), std::string::npos) << r.err;
  std::ifstream f(path("val.json"));
  const auto j = nlohmann::json::parse(f);
  ASSERT_EQ(j["epochs"].size(), 2u);
  for (const auto& e : j["epochs"]) {
    EXPECT_GT(e["val_loss"].get<double>(), 0.0);
    EXPECT_GE(e["val_accuracy"].get<double>(), 0.0);
    EXPECT_LE(e["val_accuracy"].get<double>(), 1.0);
  }
}

// onert writes epoch 0 into every checkpoint: resuming one goes on from the epoch its step count
// reaches (4 samples at batch 2: 2 steps an epoch), not from epoch 1.
TEST_F(Cli, CheckpointWithEpochZeroResumesFromItsSteps) {
  const std::string model = model_file(make_named_model("mlp", 2), "mlp.circle");
  const std::string args = model + " --batch_size 2 --backends cpu --no-progress --load_input:raw " + path("x.raw") +
                           " --load_expected:raw " + path("y.raw");
  ASSERT_EQ(run_cli(args + " --epoch 2 --export_checkpoint " + path("e.ckpt")).code, 0);
  std::ifstream in(path("e.ckpt"), std::ios::binary);
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GE(b.size(), 20u);
  uint32_t other;
  std::memcpy(&other, b.data() + 12, 4);
  ASSERT_LE(other + 8u, b.size());
  std::memset(b.data() + other + 4, 0, 4);  // cur_epoch = 0, as onert writes it
  write_bytes(path("onert_like.ckpt"), b);
  const Result r = run_cli_all(args + " --epoch 3 --checkpoint " + path("onert_like.ckpt"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("Epoch 1/3"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Epoch 2/3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Epoch 3/3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("records epoch 0 after 4 steps"), std::string::npos) << r.err;
}

TEST_F(Cli, neg_MismatchedCheckpoint) {
  const std::string model = model_file(make_named_model("mlp", 2), "mlp.circle");
  ASSERT_EQ(run_cli(train_args(model) + " --num_of_trainable_ops 2 --export_checkpoint " + path("c.ckpt")).code, 0);
  expect_one_line_failure(run_cli(train_args(model) + " --checkpoint " + path("c.ckpt")), "no Adam state");
}

TEST_F(Cli, neg_TruncatedCheckpoint) {
  const std::string model = model_file(make_named_model("mlp", 2), "mlp.circle");
  ASSERT_EQ(run_cli(train_args(model) + " --export_checkpoint " + path("c.ckpt")).code, 0);
  ASSERT_EQ(truncate(path("c.ckpt").c_str(), 5000), 0);
  expect_one_line_failure(run_cli(train_args(model) + " --checkpoint " + path("c.ckpt")), "truncated");
}

TEST_F(Cli, neg_TrainConfigNamesMissingOperator) {
  const std::string model = model_file(make_named_model("mlp", 2), "mlp.circle");
  // magic 29, schema 1, one entry: operator 9, rank ALL
  write_bytes(path("cfg.bin"), {29, 0, 1, 0, 1, 0, 0, 0, 9, 0, 0});
  expect_one_line_failure(run_cli(train_args(model) + " --train_config " + path("cfg.bin")), "names operator 9");
}

TEST_F(Cli, neg_FailedExportKeepsNoPartialFile) {
  const std::string model = model_file(make_named_model("mlp", 2), "mlp.circle");
  expect_one_line_failure(run_cli(train_args(model) + " --export_circle " + path("no/such/dir/x.circle")), "x.circle");
}

// cltrain bench on OpenCL: after the warm-up, a training step moves the batch, the expected
// outputs, the loss and the finite flag and nothing else, waits twice (their reads), creates no buffer and builds
// no program; --profile's rows share the step's device time and time Adam's update.
TEST_F(Cli, BenchStepMovesOnlyBatchLabelsAndLoss) {
  const int batch = 8;
  const std::string model = model_file(make_named_model("mlp", batch), "mlp8.circle");
  const Result r = run_cli_stdout("bench " + model +
                                  " --batch_size 8 --steps 3 --optimizer 2 --backends opencl"
                                  " --profile --report " +
                                  path("bench.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(path("bench.json"));
  const auto j = nlohmann::json::parse(f);
  if (j["backends"] != "opencl") GTEST_SKIP() << "no OpenCL device: " << j["backends"];
  // input, expected, loss, the finite flag (read, with the loss, before the updates, which then
  // run without a wait of the host)
  const double bytes = batch * 784 * 4 + batch * 10 * 4 + 4 + 4;
  EXPECT_EQ(j["transfer_bytes_per_step"].get<double>(), bytes) << r.err;
  EXPECT_EQ(j["bytes_from_device_per_step"].get<double>(), 8.0);
  EXPECT_EQ(j["waits_per_step"].get<double>(), 2.0) << r.err;
  EXPECT_GT(j["launches_per_step"].get<double>(), 0.0);
  EXPECT_GT(j["gflops"].get<double>(), 0.0);
  EXPECT_EQ(j["buffer_allocations"].get<int64_t>(), 0);
  EXPECT_EQ(j["program_builds"].get<int64_t>(), 0);
  // What the model needs, built or loaded before the measured steps (forward, loss, backward,
  // Adam, the checks: at least four programs), and said on stdout.
  EXPECT_GE(j["programs_before_measured"].get<int64_t>(), 4) << r.err;
  EXPECT_NE(r.err.find("programs: "), std::string::npos) << r.err;  // run_cli_stdout: stdout
  EXPECT_NE(r.err.find("GFLOP/s"), std::string::npos) << r.err;
  double share = 0;
  bool adam = false;
  ASSERT_GT(j["kernels"].size(), 3u) << r.err;
  for (const auto& k : j["kernels"]) {
    share += k["share"].get<double>();
    EXPECT_GE(k["ms"].get<double>(), 0.0);
    if (k["op"] == "Adam" && k["phase"] == "update") {
      adam = true;
      EXPECT_EQ(k["calls"].get<double>(), 4.0);  // two weights, two biases
      EXPECT_GT(k["gflops"].get<double>(), 0.0);
    }
  }
  EXPECT_NEAR(share, 1.0, 1e-6);
  EXPECT_TRUE(adam) << r.err;
  EXPECT_NE(r.err.find("Adam update"), std::string::npos) << r.err;
}

// On the CPU backend nothing crosses to a device and nothing waits; each step run is a launch.
TEST_F(Cli, BenchOnCpuCountsStepsAsLaunches) {
  const std::string model = model_file(make_named_model("mlp", 4), "mlp4.circle");
  const Result r =
      run_cli_stdout("bench " + model + " --batch_size 4 --steps 2 --backends cpu --report " + path("cpu.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(path("cpu.json"));
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["transfer_bytes_per_step"].get<double>(), 0.0);
  EXPECT_EQ(j["waits_per_step"].get<double>(), 0.0);
  EXPECT_GT(j["launches_per_step"].get<double>(), 5.0);  // forward, loss, backward, updates
  EXPECT_GT(j["flops_per_step"].get<double>(), 2.0 * 4 * 784 * 128);
  EXPECT_TRUE(j["kernels"].empty());  // no --profile
}

// The lines of `cltrain bench` that carry a step's loss, in order.
std::vector<std::string> loss_lines(const std::string& out) {
  std::vector<std::string> lines;
  for (size_t at = out.find(" - loss: "); at != std::string::npos; at = out.find(" - loss: ", at + 1)) {
    const size_t start = out.rfind('\n', at) + 1;  // npos + 1 == 0 on the first line
    lines.push_back(out.substr(start, out.find(" ms", at) - start));
    lines.back() = lines.back().substr(0, lines.back().rfind(" - "));  // without the time
  }
  return lines;
}

// --cache-dir: the second run loads the saved plan and binaries; corrupt entries are noted once,
// rebuilt and rewritten; the losses are the same as without a cache every time.
TEST_F(Cli, SavedPlanAndBinariesGiveTheSameLosses) {
  const std::string model = model_file(make_named_model("mlp", 2), "mlp.circle");
  const std::string bench = "bench " + model + " --steps 3 --backends opencl";
  const std::string trace = "CLTRAIN_OPENCL_TRACE=1";
  const Result none = run_cli_all(bench + " --no-cache", trace);
  ASSERT_EQ(none.code, 0) << none.err;
  if (none.err.find("continuing without it") != std::string::npos) GTEST_SKIP() << "no OpenCL: " << none.err;
  EXPECT_NE(none.err.find("no cache directory"), std::string::npos) << none.err;
  const std::vector<std::string> losses = loss_lines(none.err);
  ASSERT_EQ(losses.size(), 4u) << none.err;

  const std::string cache = path("cache");
  const Result first = run_cli_all(bench + " --cache-dir " + cache, trace);
  EXPECT_NE(first.err.find("plan computed"), std::string::npos) << first.err;
  EXPECT_NE(first.err.find("saved to " + cache), std::string::npos) << first.err;
  EXPECT_EQ(loss_lines(first.err), losses);
  const Result second = run_cli_all(bench + " --cache-dir " + cache, trace);
  EXPECT_NE(second.err.find("plan loaded from " + cache), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("programs: 0 built"), std::string::npos) << second.err;
  EXPECT_EQ(loss_lines(second.err), losses);

  // A flipped byte in every entry: one note, the same losses, and the entries are good again.
  ASSERT_EQ(
      system(("for f in " + cache + "/*; do printf '\\377' | dd of=$f bs=1 seek=60 conv=notrunc 2>/dev/null; done")
                 .c_str()),
      0);
  const Result corrupt = run_cli_all(bench + " --cache-dir " + cache);
  EXPECT_EQ(corrupt.code, 0) << corrupt.err;
  EXPECT_NE(line_with(corrupt.err, "cltrain: note: ").find("corrupt or stale entries in the OpenCL cache"),
            std::string::npos)
      << corrupt.err;
  EXPECT_EQ(loss_lines(corrupt.err), losses);
  const Result repaired = run_cli_all(bench + " --cache-dir " + cache, trace);
  EXPECT_NE(repaired.err.find("plan loaded from " + cache), std::string::npos) << repaired.err;
  EXPECT_NE(repaired.err.find("programs: 0 built"), std::string::npos) << repaired.err;
  EXPECT_EQ(repaired.err.find("cltrain: note: "), std::string::npos) << repaired.err;
  EXPECT_EQ(loss_lines(repaired.err), losses);
}

TEST_F(Cli, neg_UnusableCacheDirectoryStillTrains) {
  const std::string model = model_file(make_named_model("mlp", 2), "mlp.circle");
  const std::string bench = "bench " + model + " --steps 2";
  const Result none = run_cli_all(bench + " --cache-dir ''");
  ASSERT_EQ(none.code, 0) << none.err;
  // Cannot be created (a file is in the way): one warning, then training without a cache.
  write_bytes(path("file"), {1});
  const Result blocked = run_cli(bench + " --cache-dir " + path("file/cache"));
  EXPECT_EQ(blocked.code, 0) << blocked.err;
  EXPECT_NE(blocked.err.find("cannot create the cache directory " + path("file/cache")), std::string::npos)
      << blocked.err;
  EXPECT_EQ(blocked.err.find('\n'), blocked.err.size() - 1) << "more than one line: " << blocked.err;
  EXPECT_EQ(loss_lines(run_cli_all(bench + " --cache-dir " + path("file/cache")).err), loss_lines(none.err));
  // Exists but takes no files (root ignores permission bits; nothing creates files in /proc).
  std::string ro = "/proc/self";
  if (geteuid() != 0) {
    ro = path("ro");
    ASSERT_EQ(mkdir(ro.c_str(), 0555), 0);
  }
  const Result read_only = run_cli_all(bench + " --cache-dir " + ro);
  EXPECT_EQ(read_only.code, 0) << read_only.err;
  EXPECT_EQ(loss_lines(read_only.err), loss_lines(none.err));
}

// Without --cache-dir: $CLTRAIN_CACHE_DIR, else $XDG_CACHE_HOME/cltrain, else ~/.cache/cltrain,
// created with its parents. (The CPU backend only: with OpenCL, POCL would move its own kernel
// cache along with XDG_CACHE_HOME and HOME.)
TEST_F(Cli, DefaultCacheDirectoryIsCreated) {
  const std::string model = model_file(make_named_model("mlp", 2), "mlp.circle");
  const std::string bench = "bench " + model + " --steps 1 --warmup 0 --backends cpu";
  const std::string unset = "env -u CLTRAIN_CACHE_DIR ";
  EXPECT_EQ(run_cli(bench, unset + "XDG_CACHE_HOME=" + path("xdg")).code, 0);
  EXPECT_EQ(run_cli(bench, unset + "XDG_CACHE_HOME=relative/is/ignored HOME=" + path("home1")).code, 0);
  EXPECT_EQ(run_cli(bench, unset + "-u XDG_CACHE_HOME HOME=" + path("home2")).code, 0);
  EXPECT_EQ(run_cli(bench, "CLTRAIN_CACHE_DIR=" + path("env/a/b")).code, 0);
  EXPECT_EQ(run_cli(bench + " --cache-dir " + path("option"), "CLTRAIN_CACHE_DIR=" + path("not_this")).code, 0);
  EXPECT_EQ(run_cli(bench + " --no-cache", "CLTRAIN_CACHE_DIR=" + path("nor_this")).code, 0);
  EXPECT_EQ(run_cli(bench, "CLTRAIN_CACHE_DIR=").code, 0);  // empty: no cache
  for (const char* d : {"xdg/cltrain", "home1/.cache/cltrain", "home2/.cache/cltrain", "env/a/b", "option"}) {
    struct stat st {};
    EXPECT_TRUE(stat(path(d).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) << d << " was not created";
  }
  struct stat st {};
  EXPECT_NE(stat(path("not_this").c_str(), &st), 0);
  EXPECT_NE(stat(path("nor_this").c_str(), &st), 0);
}

// Two processes preparing the same model at once with one fresh cache directory: both train as a
// run without a cache does (same losses), the cache they leave serves a third run the same way,
// and no temporary file is left in it (entries are written to NAME.tmp.PID and renamed).
TEST_F(Cli, TwoProcessesShareOneCacheDirectory) {
  const std::string model = model_file(make_named_model("cnn-tiny", 2), "tiny.circle");
  std::vector<float> x(8 * 784), y(8 * 10, 0.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 101) / 101.0f;
  for (int i = 0; i < 8; ++i) y[static_cast<size_t>(i * 10 + i)] = 1.0f;
  write_floats(path("tx.raw"), x);
  write_floats(path("ty.raw"), y);
  const std::string args = model + " --batch_size 2 --epoch 2 --backends opencl --no-progress --load_input:raw " +
                           path("tx.raw") + " --load_expected:raw " + path("ty.raw");
  ASSERT_EQ(run_cli(args + " --no-cache", "CLTRAIN_STEP_LOG=" + path("alone.log")).code, 0);
  const std::string cache = " --cache-dir " + path("shared_cache");
  // wait on each pid (`wait -n` answers 127 where a process ended before it was called).
  const std::string cmd = "bash -c '" + std::string("CLTRAIN_STEP_LOG=") + path("a.log") + " " + cli_path() + " " +
                          args + cache + " > /dev/null 2>&1 & pa=$!; CLTRAIN_STEP_LOG=" + path("b.log") + " " +
                          cli_path() + " " + args + cache +
                          " > /dev/null 2>&1 & pb=$!; wait $pa; ra=$?; wait $pb; rb=$?; exit $((ra + rb))'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  ASSERT_EQ(run_cli(args + cache, "CLTRAIN_STEP_LOG=" + path("c.log")).code, 0);
  auto text = [](const std::string& p) {
    std::ifstream f(p);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  const std::string alone = text(path("alone.log"));
  ASSERT_FALSE(alone.empty());
  for (const char* log : {"a.log", "b.log", "c.log"}) EXPECT_EQ(text(path(log)), alone) << log;
  const std::string none_left =
      "test -d " + path("shared_cache") + " && test -z \"$(find " + path("shared_cache") + " -name \"*.tmp.*\")\"";
  EXPECT_EQ(std::system(none_left.c_str()), 0) << "temporary files left in the cache, or none made";
}

// `cltrain plan` plans memory without building a kernel (the backends' dry plan): on a cold cache
// it leaves a saved plan and no program binary, and the pool it reports is the one a training
// run's prepare plans for the same model and options.
TEST_F(Cli, PlanBuildsNoKernelsAndPlansWhatTrainingPrepares) {
  const std::string model = model_file(make_named_model("cnn-tiny", 2), "cnn.circle");
  const std::string cold = path("cold"), warm = path("warm");
  const Result plan = run_cli_stdout("plan " + model + " --batch_size 2 --backends opencl --cache-dir " + cold);
  ASSERT_EQ(plan.code, 0);
  const std::string pool = line_with(plan.err, "planned pool: ");
  ASSERT_FALSE(pool.empty()) << plan.err;
  int programs = 0, files = 0;
  for (const auto& e : std::filesystem::directory_iterator(cold)) {
    ++files;
    programs += e.path().filename().string().rfind("cltrain-ocl-program-", 0) == 0;
  }
  EXPECT_EQ(programs, 0) << "plan built kernels";
  EXPECT_GT(files, 0) << "plan saved no memory plan";
  std::vector<float> x(4 * 28 * 28, 0.5f);
  write_floats(path("cx.raw"), x);
  const Result train =
      run_cli(model + " --batch_size 2 --epoch 1 --backends opencl --cache-dir " + warm + " --load_input:raw " +
              path("cx.raw") + " --load_expected:raw " + path("y.raw") + " --report " + path("r.json"));
  ASSERT_EQ(train.code, 0) << train.err;
  std::ifstream f(path("r.json"));
  const nlohmann::json report = nlohmann::json::parse(f);
  const std::string total = std::to_string(report.at("memory").at("opencl").at("total").get<uint64_t>());
  EXPECT_EQ(pool.substr(14, pool.find(' ', 14) - 14), total) << pool << " vs the training's " << total;
}

}  // namespace
}  // namespace cltrain
