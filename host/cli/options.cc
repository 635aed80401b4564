#include "options.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <map>

#include "atomic_file.h"

namespace cltrain {

int32_t to_int(const std::string& opt, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || n < INT32_MIN || n > INT32_MAX)
    throw UsageError(opt + " takes an integer, not '" + v + "'");
  return static_cast<int32_t>(n);
}

void check_output_paths(const Options& o) {
  const std::pair<const char*, const std::string*> outputs[] = {{"--export_circle", &o.export_circle},
                                                                {"--export_circleplus", &o.export_circleplus},
                                                                {"--export_checkpoint", &o.export_checkpoint},
                                                                {"--export_lora", &o.export_lora},
                                                                {"--report", &o.report}};
  for (size_t i = 0; i < std::size(outputs); ++i) {
    const std::string& path = *outputs[i].second;
    if (path.empty()) continue;
    if (const std::string why = why_not_writable(path); !why.empty())
      throw UsageError(std::string(outputs[i].first) + " " + path + " cannot be written: " + why);
    for (size_t j = 0; j < i; ++j)
      if (*outputs[j].second == path)
        throw UsageError(std::string(outputs[j].first) + " and " + outputs[i].first + " both name " + path);
  }
}

namespace {

// A finite float32: "inf", "nan" and values beyond float32's range (1e39) are refused, not rounded
// to infinity; a value below its smallest normal (1e-50) is refused too, not rounded to zero.
float to_float(const std::string& opt, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const float f = std::strtof(v.c_str(), &end);
  if (v.empty() || *end) throw UsageError(opt + " takes a number, not '" + v + "'");
  if (!std::isfinite(f) || errno == ERANGE)
    throw UsageError(opt + " takes a finite float32 (magnitude from 1.2e-38 to 3.4e38, or 0), not '" + v + "'");
  return f;
}

// A byte count: digits, optionally followed by K, M or G (powers of 1024); more than 0.
uint64_t to_bytes(const std::string& opt, const std::string& v) {
  size_t digits = 0;
  while (digits < v.size() && std::isdigit(static_cast<unsigned char>(v[digits]))) ++digits;
  const std::string suffix = v.substr(digits);
  const int shift = suffix.empty() ? 0 : suffix == "K" ? 10 : suffix == "M" ? 20 : suffix == "G" ? 30 : -1;
  errno = 0;
  const unsigned long long n = digits > 0 && digits <= 15 ? std::strtoull(v.substr(0, digits).c_str(), nullptr, 10) : 0;
  if (digits == 0 || digits > 15 || shift < 0 || errno || n == 0)
    throw UsageError(opt + " takes a byte count above 0 (digits, optionally K, M or G), not '" + v + "'");
  return static_cast<uint64_t>(n) << shift;
}

int32_t one_of(const std::string& opt, int32_t v, std::initializer_list<int32_t> allowed, const char* meaning) {
  for (int32_t a : allowed)
    if (a == v) return v;
  throw UsageError(opt + " " + std::to_string(v) + " is not one of " + meaning);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return out;
}

}  // namespace

const char* train_usage() {
  return "usage: cltrain MODEL [options]\n"
         "  --epoch N                 epochs (default 5)\n"
         "  --batch_size N            batch size (default: the model's training info, else its first dimension)\n"
         "  --learning_rate F         (default 0.001)\n"
         "  --loss N                  1 = mean squared error, 2 = categorical cross-entropy (default 2),\n"
         "                            3 = categorical cross-entropy from logits (an output without softmax)\n"
         "  --loss_reduction_type N   1 = sum over batch size (default), 2 = sum\n"
         "  --optimizer N             1 = SGD, 2 = Adam (default 2)\n"
         "  --metric N                -1 = none (default), 0 = categorical accuracy\n"
         "  --validation_split F      fraction in [0,1) of the training data kept for validation\n"
         "  --num_of_trainable_ops N  -1 = all (default), 0 = none, N = the last N operations\n"
         "  --train_config FILE       onert-micro's per-operator training configuration (ALL, ONLY_BIAS, UP_1_2_PART, "
         "LOWER_1_2_PART)\n"
         "  --load_input:raw FILE     input samples back to back (float32, or int32 ids)\n"
         "  --load_expected:raw FILE  float32 expected outputs back to back\n"
         "  --data fashion-mnist[:DIR]  train on Fashion-MNIST (default DIR /usr/share/datasets/fashion-mnist)\n"
         "                            and report the accuracy on its 10,000 test images\n"
         "  --data_limit N            use only the first N training samples\n"
         "  --backends LIST           backends in order of preference (default opencl,cpu; cpu is always last)\n"
         "  --device N                OpenCL device index (see `cltrain devices`; or CLTRAIN_OPENCL_DEVICE)\n"
         "  --report FILE             write a JSON report\n"
         "  --cache-dir DIR           keep saved memory plans and kernel binaries in DIR, so that the next\n"
         "                            prepare of the same model and options skips planning and kernel builds\n"
         "                            (default $CLTRAIN_CACHE_DIR, else $XDG_CACHE_HOME/cltrain, else\n"
         "                            ~/.cache/cltrain; '' = no cache)\n"
         "  --no-cache                neither read nor write a cache\n"
         "  --export_circle FILE      write the model with its trained weights (.tflite: as tflite, else circle)\n"
         "  --export_circleplus FILE  the same plus the training parameters as CIRCLE_TRAINING metadata\n"
         "  --checkpoint FILE         resume from an onert checkpoint (weights, Adam state, step, epoch);\n"
         "                            --epoch stays the total, so training goes on from the next epoch\n"
         "  --export_checkpoint FILE  write a checkpoint after training (atomically)\n"
         "  --export_lora FILE        with --lora: write the adapters alone after training (safetensors:\n"
         "                            <weight>.lora_A.weight, <weight>.lora_B.weight; atomically)\n"
         "  --lora_from FILE          with --lora: start from the adapters of FILE (as --export_lora writes)\n"
         "  --checkpoint_every N      a checkpoint every N steps (atomic, with a checksum) into\n"
         "                            --checkpoint_dir (default: --resume's DIR, else .), the newest\n"
         "                            --keep_checkpoints K (3) kept\n"
         "  --resume DIR              go on from the newest checkpoint of DIR that loads (a torn or\n"
         "                            corrupted one is passed over), mid-epoch, with the same batches;\n"
         "                            from the start where DIR holds none\n"
         "  --on_nonfinite stop|skip  a step whose loss or gradients are not finite is never applied;\n"
         "                            stop (default): exit with one line; skip: go on, counting it\n"
         "  --no-progress             no progress line while an epoch runs\n"
         "  --add_missing_biases      a zero bias, trained and exported, for each FullyConnected, Conv2D and\n"
         "                            DepthwiseConv2D without one (converters drop zero biases)\n"
         "  --memory_budget BYTES     the device memory the plan may take (K, M, G suffixes: 1024s); forward\n"
         "                            steps are recomputed during backward to fit, with the same results\n"
         "  --storage fp16|float32    fp16: activations and back-prop tensors stored as float16 (half the\n"
         "                            bytes; float32 arithmetic, weights and optimizer state)\n"
         "  --lora RANK[:ALPHA]       LoRA adapters on the FullyConnected operators --num_of_trainable_ops or\n"
         "                            --train_config choose; only they train, exports merge them (ALPHA: RANK)\n"
         "  --no-shuffle              train on the samples in their order (default: reshuffled each epoch)\n"
         "other commands:\n"
         "  cltrain devices                           list OpenCL platforms and devices\n"
         "  cltrain ops                               the ops cltrain loads and trains\n"
         "  cltrain make-model NAME -o FILE [--batch_size B] [--format circle|tflite]\n"
         "                                            NAME: mlp, mnist-kaggle, mobilenetv2, branched, cnn-tiny\n"
         "  cltrain plan MODEL [training options] [--plan-json FILE] [--plan-svg FILE]\n"
         "                                            planned device memory by role, pool, lower bound\n"
         "                                            (planned only: no kernel is built; seconds cold)\n"
         "  cltrain bench MODEL [training options] [--steps N] [--warmup N] [--seed S] [--profile]\n"
         "                                            trains N steps on one fixed random batch and\n"
         "                                            prints each step's loss, the median ms/step,\n"
         "                                            GFLOP/s, launches, transfer bytes and waits per\n"
         "                                            step; --profile: device time per op and phase\n";
}

namespace {
Options parse_options(const std::vector<std::string>& args, bool bench) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    std::string value;
    bool has_value = false;
    const size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_value = true;
    }
    if (a.rfind("--", 0) == 0) o.given.insert(a);
    auto next = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= args.size()) throw UsageError(a + " needs a value");
      return args[++i];
    };
    if (a == "--epoch") {
      o.epochs = to_int(a, next());
      if (o.epochs < 0) throw UsageError("--epoch must not be negative");
    } else if (a == "--batch_size") {
      o.batch_size = to_int(a, next());
      if (*o.batch_size < 1) throw UsageError("--batch_size must be at least 1");
    } else if (a == "--learning_rate") {
      o.learning_rate = to_float(a, next());
      if (!(o.learning_rate > 0)) throw UsageError("--learning_rate must be positive");
    } else if (a == "--loss") {
      o.loss = one_of(a, to_int(a, next()),
                      {CLTRAIN_LOSS_MEAN_SQUARED_ERROR, CLTRAIN_LOSS_CATEGORICAL_CROSSENTROPY,
                       CLTRAIN_LOSS_CATEGORICAL_CROSSENTROPY_FROM_LOGITS},
                      "1 (mean squared error), 2 (categorical cross-entropy), 3 (from logits)");
    } else if (a == "--loss_reduction_type") {
      o.loss_reduction =
          one_of(a, to_int(a, next()), {CLTRAIN_REDUCTION_TYPE_SUM_OVER_BATCH_SIZE, CLTRAIN_REDUCTION_TYPE_SUM},
                 "1 (sum over batch size), 2 (sum)");
    } else if (a == "--optimizer") {
      o.optimizer = one_of(a, to_int(a, next()), {CLTRAIN_OPTIMIZER_SGD, CLTRAIN_OPTIMIZER_ADAM}, "1 (SGD), 2 (Adam)");
    } else if (a == "--metric") {
      o.metric = one_of(a, to_int(a, next()), {-1, 0}, "-1 (none), 0 (categorical accuracy)");
    } else if (a == "--validation_split") {
      o.validation_split = to_float(a, next());
      if (!(o.validation_split >= 0 && o.validation_split < 1))
        throw UsageError("--validation_split must be in [0, 1)");
    } else if (a == "--num_of_trainable_ops") {
      o.num_of_trainable_ops = to_int(a, next());
      if (o.num_of_trainable_ops < -1) throw UsageError("--num_of_trainable_ops must be -1 (all), 0 (none) or a count");
    } else if (a == "--load_input:raw") {
      o.load_input_raw = next();
    } else if (a == "--load_expected:raw") {
      o.load_expected_raw = next();
    } else if (a == "--data") {
      o.data = next();
      if (o.data != "fashion-mnist" && o.data.rfind("fashion-mnist:", 0) != 0)
        throw UsageError("--data takes fashion-mnist or fashion-mnist:DIR, not '" + o.data + "'");
    } else if (a == "--data_limit") {
      o.data_limit = to_int(a, next());
      if (o.data_limit < 0) throw UsageError("--data_limit must not be negative");
    } else if (a == "--backends") {
      o.backends.clear();
      for (const auto& b : split(next(), ','))
        if (!b.empty()) o.backends.push_back(b);
      if (o.backends.empty()) throw UsageError("--backends needs at least one backend");
    } else if (a == "--device") {
      o.device = to_int(a, next());
      if (o.device < 0) throw UsageError("--device takes a device index (0, 1, ...; cltrain devices lists them)");
    } else if (a == "--cache-dir") {
      o.cache_dir = next();
    } else if (a == "--no-cache") {
      o.cache_dir = std::string();
    } else if (a == "--train_config") {
      o.train_config = next();
    } else if (a == "--export_circle") {
      o.export_circle = next();
    } else if (a == "--export_circleplus") {
      o.export_circleplus = next();
    } else if (a == "--checkpoint") {
      o.checkpoint = next();
    } else if (a == "--resume") {
      o.resume = next();
    } else if (a == "--checkpoint_every") {
      o.checkpoint_every = to_int(a, next());
      if (o.checkpoint_every < 1) throw UsageError("--checkpoint_every takes a number of steps, 1 or more");
    } else if (a == "--checkpoint_dir") {
      o.checkpoint_dir = next();
    } else if (a == "--keep_checkpoints") {
      o.keep_checkpoints = to_int(a, next());
      if (o.keep_checkpoints < 1) throw UsageError("--keep_checkpoints takes 1 or more");
    } else if (a == "--on_nonfinite") {
      const std::string v = next();
      if (v != "stop" && v != "skip") throw UsageError("--on_nonfinite takes stop or skip, not '" + v + "'");
      o.on_nonfinite_skip = v == "skip";
    } else if (a == "--export_checkpoint") {
      o.export_checkpoint = next();
    } else if (a == "--export_lora") {
      o.export_lora = next();
    } else if (a == "--lora_from") {
      o.lora_from = next();
    } else if (a == "--report") {
      o.report = next();
    } else if (a == "--no-progress") {
      o.progress = false;
    } else if (a == "--memory_budget") {
      o.memory_budget = to_bytes(a, next());
    } else if (a == "--storage") {
      const std::string v = next();
      if (v != "fp16" && v != "float32") throw UsageError("--storage takes fp16 or float32, not '" + v + "'");
      o.half_storage = v == "fp16";
    } else if (a == "--lora") {
      const std::string v = next();
      const size_t colon = v.find(':');
      o.lora_rank = to_int(a, v.substr(0, colon));
      if (o.lora_rank < 1) throw UsageError("--lora takes a rank of 1 or more, not '" + v + "'");
      if (colon != std::string::npos) {
        o.lora_alpha = to_float(a, v.substr(colon + 1));
        if (!(o.lora_alpha > 0)) throw UsageError("--lora's alpha must be positive, not '" + v + "'");
      }
    } else if (a == "--add_missing_biases") {
      o.add_missing_biases = true;
    } else if (a == "--no-shuffle") {
      o.shuffle = false;
    } else if (bench && a == "--steps") {
      o.steps = to_int(a, next());
      if (o.steps < 1) throw UsageError("--steps must be at least 1");
    } else if (bench && a == "--warmup") {
      o.warmup = to_int(a, next());
      if (o.warmup < 0) throw UsageError("--warmup must not be negative");
    } else if (bench && a == "--seed") {
      o.seed = static_cast<uint32_t>(to_int(a, next()));
    } else if (bench && a == "--profile") {
      o.profile = true;
    } else if (a.rfind("-", 0) == 0 && a.size() > 1) {
      throw UsageError("unknown option " + a + " (cltrain --help lists them)");
    } else if (o.model.empty()) {
      o.model = a;
    } else {
      throw UsageError("more than one model given: " + o.model + " and " + a);
    }
  }
  if (o.model.empty()) throw UsageError("no model given");
  if (bench) return o;
  if (o.data.empty() && (o.load_input_raw.empty() != o.load_expected_raw.empty()))
    throw UsageError("--load_input:raw and --load_expected:raw go together");
  if (o.data.empty() && o.load_input_raw.empty())
    throw UsageError("no training data: give --data fashion-mnist or --load_input:raw and --load_expected:raw");
  return o;
}
}  // namespace

Options parse_train_options(const std::vector<std::string>& args) { return parse_options(args, false); }

Options parse_bench_options(const std::vector<std::string>& args) { return parse_options(args, true); }

}  // namespace cltrain
