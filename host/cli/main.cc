// cltrain: train a circle/tflite model on OpenCL devices.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "api_session.h"
#include "backend.h"
#include "bench_command.h"
#include "checkpoint.h"
#include "dataset.h"
#include "model/builder.h"
#include "model/model.h"
#include "ops_command.h"
#include "options.h"
#include "plan_command.h"
#include "train_command.h"
#include "trainer.h"

namespace {

int devices_command() {
  std::string why;
  const std::string list = cltrain::list_backend_devices("opencl", &why);
  if (list.empty()) {
    std::fprintf(stderr, "cltrain: %s\n", why.empty() ? "no OpenCL devices" : why.c_str());
    return 1;
  }
  std::fputs(list.c_str(), stdout);
  return 0;
}

int make_model_command(const std::vector<std::string>& args) {
  std::string name, out, format = "circle";
  int32_t batch = 32;
  for (size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw cltrain::UsageError(args[i] + " needs a value");
      return args[++i];
    };
    if (args[i] == "-o" || args[i] == "--output") {
      out = value();
    } else if (args[i] == "--batch_size") {
      batch = cltrain::to_int("--batch_size", value());
      if (batch < 1) throw cltrain::UsageError("--batch_size must be at least 1");
    } else if (args[i] == "--format") {
      format = value();
    } else if (name.empty() && args[i][0] != '-') {
      name = args[i];
    } else {
      throw cltrain::UsageError("make-model: unexpected argument " + args[i]);
    }
  }
  if (name.empty() || out.empty())
    throw cltrain::UsageError("usage: cltrain make-model NAME -o FILE [--batch_size B] [--format circle|tflite]");
  if (format != "circle" && format != "tflite") throw cltrain::UsageError("--format is circle or tflite");
  const cltrain::Model m = cltrain::make_named_model(name, batch);
  cltrain::save_file_atomic(out, cltrain::write_model(m, format));
  std::printf("wrote %s (%s, batch %d)\n", out.c_str(), name.c_str(), batch);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
      std::fputs(cltrain::train_usage(), args.empty() ? stderr : stdout);
      return args.empty() ? 2 : 0;
    }
    if (args[0] == "devices") return devices_command();
    if (args[0] == "ops") return cltrain::run_ops();
    if (args[0] == "make-model") return make_model_command({args.begin() + 1, args.end()});
    if (args[0] == "plan") return cltrain::run_plan({args.begin() + 1, args.end()});
    if (args[0] == "bench") return cltrain::run_bench(cltrain::parse_bench_options({args.begin() + 1, args.end()}));
    return cltrain::run_train(cltrain::parse_train_options(args));
  } catch (const cltrain::ApiError& e) {  // its line names its kind ("model error: ...")
    std::fprintf(stderr, "cltrain: %s\n", e.what());
    return 1;
  } catch (const cltrain::UsageError& e) {
    std::fprintf(stderr, "cltrain: %s\n", e.what());
    return 2;
  } catch (const cltrain::ModelError& e) {
    std::fprintf(stderr, "cltrain: model error: %s\n", e.what());
    return 1;
  } catch (const cltrain::DataError& e) {
    std::fprintf(stderr, "cltrain: data error: %s\n", e.what());
    return 1;
  } catch (const cltrain::BackendError& e) {
    std::fprintf(stderr, "cltrain: backend error: %s\n", e.what());
    return 1;
  } catch (const cltrain::CheckpointError& e) {
    std::fprintf(stderr, "cltrain: checkpoint error: %s\n", e.what());
    return 1;
  } catch (const cltrain::TrainingError& e) {
    std::fprintf(stderr, "cltrain: training error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cltrain: error: %s\n", e.what());
    return 1;
  }
}
