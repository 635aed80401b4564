// GATHER: forward in [table, ids] out [y] (y's row i is the table's row ids[i], negative ids
// counting from the end), backward in [dy, ids] out [dtable] (dy's rows added into the rows their
// ids read, in increasing order of i). The forward copies; the backward's sums are exact too
// (the same order on every backend).
#include "case_common.h"

namespace cltrain {
namespace optest {
namespace {

// squares: the backward also writes dsq (Adam's v of an embedding table, as Keras takes it).
OpCase gather_case(const std::string& tag, std::vector<int32_t> table_dims, std::vector<int32_t> id_dims,
                   std::vector<float> ids, bool squares = false) {
  OpCase c;
  c.op = CLTRAIN_OP_GATHER;
  c.name = "Gather_" + tag;
  std::vector<int32_t> ydims = id_dims;
  ydims.insert(ydims.end(), table_dims.begin() + 1, table_dims.end());
  const int32_t table = c.weight("table", table_dims);
  TensorSpec idt;
  idt.name = "ids";
  idt.dims = id_dims;
  idt.dtype = CLTRAIN_INT32;
  idt.fill = Fill::Values;
  idt.values = ids;
  const int32_t id = c.add(idt);
  const int32_t y = c.output("y", ydims);
  const int32_t dy = c.input("dy", ydims);
  c.tensors[dy].role = CLTRAIN_ROLE_BACK_PROP;
  const int32_t dtable = c.output("dtable", table_dims, CLTRAIN_ROLE_GRADIENT);
  const int32_t dsq = squares ? c.output("dsq", table_dims, CLTRAIN_ROLE_GRADIENT) : -1;
  c.step(CLTRAIN_OP_GATHER, CLTRAIN_PHASE_FORWARD, {table, id}, {y});
  c.step(CLTRAIN_OP_GATHER, CLTRAIN_PHASE_BACKWARD, {dy, id},
         squares ? std::vector<int32_t>{dtable, dsq} : std::vector<int32_t>{dtable});
  c.y = y;
  c.dy = dy;
  c.grads = {{table, dtable}};
  c.fd_samples = 32;
  c.tol.fd_eps = 1e-2;
  c.tol.fd_tol = 1e-3;
  c.tol.vs_cpu = 0.0;
  const int64_t rows = table_dims[0];
  uint64_t width = 1;
  for (size_t d = 1; d < table_dims.size(); ++d) width *= static_cast<uint64_t>(table_dims[d]);
  const uint64_t n = ids.size();
  // The generic reference: double, or float in the op's order (the same sums, in increasing i).
  const auto ref = [=](const auto& in) {
    using T = typename std::decay_t<decltype(in.at(table))>::value_type;
    std::vector<T> yv(n * width), dt(static_cast<uint64_t>(rows) * width, T(0)), sq(dt);
    for (uint64_t i = 0; i < n; ++i) {
      const int64_t k = static_cast<int64_t>(in.at(id)[i]);
      const uint64_t r = static_cast<uint64_t>(k < 0 ? k + rows : k);
      for (uint64_t j = 0; j < width; ++j) {
        yv[i * width + j] = in.at(table)[r * width + j];
        const T g = in.at(dy)[i * width + j];
        dt[r * width + j] = dt[r * width + j] + g;
        const T gg = g * g;
        sq[r * width + j] = sq[r * width + j] + gg;
      }
    }
    std::decay_t<decltype(in)> out{{y, yv}, {dtable, dt}};
    if (dsq >= 0) out[dsq] = sq;
    return out;
  };
  c.reference = ref;
  c.exact = ref;
  return c;
}

std::vector<OpCase> make_cases() {
  return {
      // An embedding: [2, 5] token ids into a [7, 4] table; repeated ids add up, row 6 unread.
      gather_case("embedding_v7_d4_ids2x5", {7, 4}, {2, 5}, {0, 3, 3, 1, 5, 2, 3, 0, 4, 3}),
      // Negative ids count from the end (Keras' Embedding guards them so): -1 is row 4.
      gather_case("negative_ids_v5_d3", {5, 3}, {6}, {-1, 0, -5, 4, 2, -1}),
      // Rows of rank 2 (a [V, 2, 3] table), ids of rank 3; width wider than a work-group's 64.
      gather_case("rank3_table_v4_2x3", {4, 2, 3}, {2, 2, 2}, {3, 0, 1, 1, 2, 3, 0, 0}),
      gather_case("wide_rows_v3_d70", {3, 70}, {2, 2}, {2, 2, 0, 1}),
      gather_case("squares_v6_d5_ids3x4", {6, 5}, {3, 4}, {1, 1, 4, 0, 2, 1, 5, 5, 1, -1, 3, 0}, true),
  };
}

const RegisterCases kCases(make_cases);

}  // namespace
}  // namespace optest
}  // namespace cltrain
