// GATHER: forward in [table, ids] out [y], y's row i = table's row r(ids[i]) (negative ids count
// from the end; out of range: NaN); backward in [dy, ids] out [dtable, dsq], the rows of dy (and
// their squares) added into the rows their ids read, in increasing order of i (cltrain_ops.h).
#include <cstring>
#include <limits>

#include "cpu_op.h"

namespace cltrain {
namespace cpu {
namespace {

// "" when table is [V, ...] float, ids int32 and y ids' shape followed by the table's dims after
// the first.
std::string check_shapes(const TensorRef& table, const TensorRef& ids, const TensorRef& y, const char* table_name,
                         const char* y_name) {
  if (std::string e = require(table, table_name); !e.empty()) return e;
  if (std::string e = require(ids, "ids"); !e.empty()) return e;
  if (table.rank() < 1) return std::string(table_name) + " is a scalar";
  if (ids.rank() + table.rank() - 1 > CLTRAIN_MAX_RANK) return "the output's rank is more than 6";
  int64_t want[CLTRAIN_MAX_RANK];
  int rank = 0;
  for (int d = 0; d < ids.rank(); ++d) want[rank++] = ids.dim(d);
  for (int d = 1; d < table.rank(); ++d) want[rank++] = table.dim(d);
  return require_dims(y, want, rank, y_name);
}

std::string check_forward(const StepView& s) {
  if (std::string e = require_slots(s, 2, 1); !e.empty()) return e;
  return check_shapes(s.in[0], s.in[1], s.out[0], "table", "y");
}

std::string check_backward(const StepView& s) {
  if (std::string e = require_slots(s, 2, 2); !e.empty()) return e;
  if (std::string e = check_shapes(s.out[0], s.in[1], s.in[0], "dtable", "dy"); !e.empty()) return e;
  if (s.out[1].present() && s.out[1].elements != s.out[0].elements) return "dsq is not shaped as dtable";
  return {};
}

// The table row id k reads, or -1 outside the table.
int64_t row_of(int32_t k, int64_t rows) {
  const int64_t r = k < 0 ? int64_t{k} + rows : int64_t{k};
  return r >= 0 && r < rows ? r : -1;
}

const int32_t* ids_of(const TensorRef& t) { return reinterpret_cast<const int32_t*>(t.data); }

std::string run_forward(const StepView& s, const cltrain_run_args&) {
  const TensorRef& table = s.in[0];
  const int64_t rows = table.dim(0);
  const uint64_t width = table.elements / static_cast<uint64_t>(rows);
  const int32_t* ids = ids_of(s.in[1]);
  float* y = s.out[0].data;
  for (uint64_t i = 0; i < s.in[1].elements; ++i) {
    const int64_t r = row_of(ids[i], rows);
    float* dst = y + i * width;
    if (r < 0)
      for (uint64_t j = 0; j < width; ++j) dst[j] = std::numeric_limits<float>::quiet_NaN();
    else
      std::memcpy(dst, table.data + static_cast<uint64_t>(r) * width, width * sizeof(float));
  }
  return {};
}

std::string run_backward(const StepView& s, const cltrain_run_args&) {
  const TensorRef& dtable = s.out[0];
  const int64_t rows = dtable.dim(0);
  const uint64_t width = dtable.elements / static_cast<uint64_t>(rows);
  const int32_t* ids = ids_of(s.in[1]);
  const float* dy = s.in[0].data;
  float* dt = dtable.data;
  float* sq = s.out[1].data;  // nullptr: no dsq
  for (uint64_t e = 0; e < dtable.elements; ++e) dt[e] = 0.0f;
  for (uint64_t e = 0; sq && e < dtable.elements; ++e) sq[e] = 0.0f;
  for (uint64_t i = 0; i < s.in[1].elements; ++i) {
    const int64_t r = row_of(ids[i], rows);
    if (r < 0) continue;
    const uint64_t at = static_cast<uint64_t>(r) * width;
    for (uint64_t j = 0; j < width; ++j) {
      const float g = dy[i * width + j];
      dt[at + j] = dt[at + j] + g;
      if (sq) sq[at + j] = sq[at + j] + g * g;
    }
  }
  return {};
}

}  // namespace

extern const CpuOp kCpuOp_GATHER = {{{check_forward, run_forward}, {check_backward, run_backward}, {}}};

}  // namespace cpu
}  // namespace cltrain
