#include "options.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iterator>

#include <CLI/CLI.hpp>

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

// The command line is CLI11's declarations below (Debian's libcli11-dev). What CLI11 does
// otherwise than onert_train's spellings and cltrain's messages is mended around it:
//  - argv is encode()d before CLI11 reads it, and what CLI11 hands back (values, left-over
//    arguments) is decode()d, so that values, messages and Options::given are what the user
//    wrote. CLI11's names cannot hold ':', so the ':' of --load_input:raw and --load_expected:raw
//    becomes a NUL (a name no command line can spell: argv strings end at NUL, so a literal
//    --load_input_raw stays unknown); and CLI11 reads `--NAME=` as --NAME followed by the next
//    argument, where cltrain reads an empty value (`--cache-dir=`: no cache), so it becomes
//    `--NAME=` NUL.
//  - every option's callback runs as CLI11 parses it (trigger_on_parse): the first bad argument
//    is the one reported, a repeated option's last value wins, --cache-dir and --no-cache go by
//    order.
//  - CLI11 keeps unknown options, a second model and `--` in remaining() (allow_extras); each
//    callback first reports the first of those before it, in cltrain's words (check_strays), so
//    errors still come in command-line order. An option-like positional ("-5", "---x": CLI11 reads
//    them as positionals) is refused by MODEL's check (validate_positionals), so it is one of them.
//  - the validators (to_int, to_float, to_bytes, one_of) run in ->each() and throw UsageError,
//    which CLI11 lets through; its own ParseError (a value missing at the end) becomes our line.
//  - no help flag: main prints train_usage() for a leading --help or -h; elsewhere it is unknown.
std::string encode(std::string a) {
  if (a.rfind("--", 0) != 0) return a;
  const size_t eq = a.find('=');
  for (const char* name : {"--load_input:raw", "--load_expected:raw"})
    if (a.compare(0, eq, name) == 0) a[a.find(':')] = '\0';
  if (eq != std::string::npos && eq + 1 == a.size()) a += '\0';
  return a;
}

std::string decode(std::string s) {
  if (s == std::string(1, '\0')) return "";          // the value of `--NAME=`
  if (!s.empty() && s.back() == '\0') s.pop_back();  // `--NAME=` itself, as a value or left over
  for (char& c : s)
    if (c == '\0') c = ':';
  return s;
}

class CommandLine {
 public:
  explicit CommandLine(Options& o) : o_(o) {
    app_.set_help_flag();
    app_.allow_extras();
    app_.validate_positionals();
    model_ = app_.add_option("MODEL")->check(
        [](const std::string& v) { return v.size() > 1 && v[0] == '-' ? std::string("an option") : std::string(); });
  }

  // --NAME VALUE (or --NAME=VALUE): set(NAME, VALUE) at each occurrence, in command-line order.
  void value(const char* name, std::function<void(const std::string&, const std::string&)> set) {
    app_.add_option(encode(name))->trigger_on_parse()->each([this, name, set](const std::string& v) {
      occurs(name);
      set(name, decode(v));
    });
  }
  void flag(const char* name, std::function<void()> set) {
    app_.add_flag(encode(name))->trigger_on_parse()->each([this, name, set](const std::string&) {
      occurs(name);
      set();
    });
  }

  // Parses args into the Options; throws UsageError. Returns the model.
  std::string parse(const std::vector<std::string>& args) {
    std::vector<std::string> reversed;  // as CLI11 takes it
    for (auto a = args.rbegin(); a != args.rend(); ++a) reversed.push_back(encode(*a));
    try {
      app_.parse(std::move(reversed));
    } catch (const CLI::ArgumentMismatch&) {  // the last argument, an option, has no value
      check_strays();
      throw UsageError(args.back() + " needs a value");
    } catch (const CLI::ParseError& e) {  // none other is expected; still one line
      throw UsageError(e.what());
    }
    return check_strays();
  }

 private:
  void occurs(const std::string& name) {
    check_strays();
    o_.given.insert(name);
  }

  // Throws for the first argument CLI11 left over (in command-line order): an unknown option, or
  // a second model. Returns the model.
  std::string check_strays() const {
    std::string model = model_->count() > 0 ? decode(model_->results().front()) : "";
    for (const std::string& left : app_.remaining()) {
      std::string a = decode(left);
      if (a.size() > 1 && a[0] == '-') {
        if (a.rfind("--", 0) == 0) a = a.substr(0, a.find('='));
        throw UsageError("unknown option " + a + " (cltrain --help lists them)");
      }
      if (!model.empty()) throw UsageError("more than one model given: " + model + " and " + a);
      model = a;
    }
    return model;
  }

  Options& o_;
  CLI::App app_;
  CLI::Option* model_ = nullptr;
};

// An int32 option's setter: to_int, then UsageError(why) below `least`.
std::function<void(const std::string&, const std::string&)> at_least(int32_t& to, int32_t least, const char* why) {
  return [&to, least, why](const std::string& opt, const std::string& v) {
    to = to_int(opt, v);
    if (to < least) throw UsageError(why);
  };
}

std::function<void(const std::string&, const std::string&)> text(std::string& to) {
  return [&to](const std::string&, const std::string& v) { to = v; };
}

Options parse_options(const std::vector<std::string>& args, bool bench) {
  Options o;
  CommandLine cl(o);
  cl.value("--epoch", at_least(o.epochs, 0, "--epoch must not be negative"));
  cl.value("--batch_size", [&](const std::string& opt, const std::string& v) {
    o.batch_size = to_int(opt, v);
    if (*o.batch_size < 1) throw UsageError("--batch_size must be at least 1");
  });
  cl.value("--learning_rate", [&](const std::string& opt, const std::string& v) {
    o.learning_rate = to_float(opt, v);
    if (!(o.learning_rate > 0)) throw UsageError("--learning_rate must be positive");
  });
  cl.value("--loss", [&](const std::string& opt, const std::string& v) {
    o.loss = one_of(opt, to_int(opt, v),
                    {CLTRAIN_LOSS_MEAN_SQUARED_ERROR, CLTRAIN_LOSS_CATEGORICAL_CROSSENTROPY,
                     CLTRAIN_LOSS_CATEGORICAL_CROSSENTROPY_FROM_LOGITS},
                    "1 (mean squared error), 2 (categorical cross-entropy), 3 (from logits)");
  });
  cl.value("--loss_reduction_type", [&](const std::string& opt, const std::string& v) {
    o.loss_reduction =
        one_of(opt, to_int(opt, v), {CLTRAIN_REDUCTION_TYPE_SUM_OVER_BATCH_SIZE, CLTRAIN_REDUCTION_TYPE_SUM},
               "1 (sum over batch size), 2 (sum)");
  });
  cl.value("--optimizer", [&](const std::string& opt, const std::string& v) {
    o.optimizer = one_of(opt, to_int(opt, v), {CLTRAIN_OPTIMIZER_SGD, CLTRAIN_OPTIMIZER_ADAM}, "1 (SGD), 2 (Adam)");
  });
  cl.value("--metric", [&](const std::string& opt, const std::string& v) {
    o.metric = one_of(opt, to_int(opt, v), {-1, 0}, "-1 (none), 0 (categorical accuracy)");
  });
  cl.value("--validation_split", [&](const std::string& opt, const std::string& v) {
    o.validation_split = to_float(opt, v);
    if (!(o.validation_split >= 0 && o.validation_split < 1)) throw UsageError("--validation_split must be in [0, 1)");
  });
  cl.value("--num_of_trainable_ops",
           at_least(o.num_of_trainable_ops, -1, "--num_of_trainable_ops must be -1 (all), 0 (none) or a count"));
  cl.value("--load_input:raw", text(o.load_input_raw));
  cl.value("--load_expected:raw", text(o.load_expected_raw));
  cl.value("--data", [&](const std::string&, const std::string& v) {
    o.data = v;
    if (o.data != "fashion-mnist" && o.data.rfind("fashion-mnist:", 0) != 0)
      throw UsageError("--data takes fashion-mnist or fashion-mnist:DIR, not '" + o.data + "'");
  });
  cl.value("--data_limit", [&](const std::string& opt, const std::string& v) {
    o.data_limit = to_int(opt, v);
    if (o.data_limit < 0) throw UsageError("--data_limit must not be negative");
  });
  cl.value("--backends", [&](const std::string&, const std::string& v) {
    o.backends.clear();
    for (const auto& b : split(v, ','))
      if (!b.empty()) o.backends.push_back(b);
    if (o.backends.empty()) throw UsageError("--backends needs at least one backend");
  });
  cl.value("--device", at_least(o.device, 0, "--device takes a device index (0, 1, ...; cltrain devices lists them)"));
  cl.value("--cache-dir", [&](const std::string&, const std::string& v) { o.cache_dir = v; });
  cl.flag("--no-cache", [&] { o.cache_dir = std::string(); });
  cl.value("--train_config", text(o.train_config));
  cl.value("--export_circle", text(o.export_circle));
  cl.value("--export_circleplus", text(o.export_circleplus));
  cl.value("--checkpoint", text(o.checkpoint));
  cl.value("--resume", text(o.resume));
  cl.value("--checkpoint_every",
           at_least(o.checkpoint_every, 1, "--checkpoint_every takes a number of steps, 1 or more"));
  cl.value("--checkpoint_dir", text(o.checkpoint_dir));
  cl.value("--keep_checkpoints", at_least(o.keep_checkpoints, 1, "--keep_checkpoints takes 1 or more"));
  cl.value("--on_nonfinite", [&](const std::string&, const std::string& v) {
    if (v != "stop" && v != "skip") throw UsageError("--on_nonfinite takes stop or skip, not '" + v + "'");
    o.on_nonfinite_skip = v == "skip";
  });
  cl.value("--export_checkpoint", text(o.export_checkpoint));
  cl.value("--export_lora", text(o.export_lora));
  cl.value("--lora_from", text(o.lora_from));
  cl.value("--report", text(o.report));
  cl.flag("--no-progress", [&] { o.progress = false; });
  cl.value("--memory_budget",
           [&](const std::string& opt, const std::string& v) { o.memory_budget = to_bytes(opt, v); });
  cl.value("--storage", [&](const std::string&, const std::string& v) {
    if (v != "fp16" && v != "float32") throw UsageError("--storage takes fp16 or float32, not '" + v + "'");
    o.half_storage = v == "fp16";
  });
  cl.value("--lora", [&](const std::string& opt, const std::string& v) {
    const size_t colon = v.find(':');
    o.lora_rank = to_int(opt, v.substr(0, colon));
    if (o.lora_rank < 1) throw UsageError("--lora takes a rank of 1 or more, not '" + v + "'");
    if (colon != std::string::npos) {
      o.lora_alpha = to_float(opt, v.substr(colon + 1));
      if (!(o.lora_alpha > 0)) throw UsageError("--lora's alpha must be positive, not '" + v + "'");
    }
  });
  cl.flag("--add_missing_biases", [&] { o.add_missing_biases = true; });
  cl.flag("--no-shuffle", [&] { o.shuffle = false; });
  if (bench) {
    cl.value("--steps", at_least(o.steps, 1, "--steps must be at least 1"));
    cl.value("--warmup", at_least(o.warmup, 0, "--warmup must not be negative"));
    cl.value("--seed",
             [&](const std::string& opt, const std::string& v) { o.seed = static_cast<uint32_t>(to_int(opt, v)); });
    cl.flag("--profile", [&] { o.profile = true; });
  }
  o.model = cl.parse(args);
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
