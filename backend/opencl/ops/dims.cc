#include "ops/dims.h"

#include <algorithm>

#include "device/cl_error.h"
#include "device/queue.h"

namespace cltrain::ocl {

std::vector<uint64_t> dims_of(const cltrain_tensor_desc& t) {
  std::vector<uint64_t> d;
  for (int32_t i = 0; i < t.rank && i < CLTRAIN_MAX_RANK; ++i)
    d.push_back(t.dims[i] < 0 ? 0 : static_cast<uint64_t>(t.dims[i]));
  return d;
}

std::string dims_string(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

View6 SpanView::strides(unsigned bit) const {
  View6 st{};
  uint64_t next = 1;
  for (int k = kViewDims - 1; k >= 0; --k) {
    if (size[k] > 1 && (mask[k] >> bit & 1u)) {
      st[k] = next;
      next *= size[k];
    } else {
      st[k] = 0;
    }
  }
  return st;
}

SpanView make_span_view(const std::vector<uint64_t>& sizes, const std::vector<unsigned>& masks) {
  std::vector<uint64_t> sz;
  std::vector<unsigned> mk;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;  // no tensor moves along it
    if (!mk.empty() && mk.back() == masks[d]) {
      sz.back() *= sizes[d];  // same tensors span both: their indices stay linear
    } else {
      sz.push_back(sizes[d]);
      mk.push_back(masks[d]);
    }
  }
  if (sz.size() > static_cast<size_t>(kViewDims))
    fail(CLTRAIN_INVALID, "shape " + dims_string(sizes) + " has more than six dims after merging");
  SpanView v;
  v.size.fill(1);
  v.mask.fill(0);
  const size_t pad = kViewDims - sz.size();
  for (size_t i = 0; i < sz.size(); ++i) {
    v.size[pad + i] = sz[i];
    v.mask[pad + i] = mk[i];
  }
  return v;
}

void define_view(Defines& d, const char* prefix, const View6& v) {
  for (int k = 0; k < kViewDims; ++k)
    d.set((std::string(prefix) + std::to_string(k)).c_str(), static_cast<long long>(v[k]));
}

uint64_t view_count(const View6& v) {
  uint64_t n = 1;
  for (uint64_t s : v) n *= s;
  return n;
}

std::string same_rank_pair(const StepView& s, int32_t* x, int32_t* y, std::vector<uint64_t>* xd,
                           std::vector<uint64_t>* yd) {
  if (std::string why = unary_pair(s, x, y); !why.empty()) return why;
  *xd = dims_of(s.tensor(*x)), *yd = dims_of(s.tensor(*y));
  if (xd->size() != yd->size())
    return "input " + dims_string(*xd) + " and output " + dims_string(*yd) + " differ in rank";
  return {};
}

StepRun row_launch(const OpContext& c, const Kernel& k, const View6& w) {
  if (view_count(w) == 0) return [](const Queue&, const cltrain_run_args*) {};
  const uint64_t cols = w[5], rows = view_count(w) / w[5];
  // Work-groups as launch_1d's (work_group_size): x covers the row (a power of two, at most 64)
  // and y takes as many whole rows as fit, a power of two dividing the rows. Short rows
  // (BATCH_MATMUL's 16 or 32 columns, a transpose's innermost dim) then fill work-groups instead
  // of padding each to 64.
  const size_t want = work_group_size(c.device(), k, rows * cols);
  size_t lx = 1;
  while (lx < cols && lx * 2 <= std::min<size_t>(64, want)) lx *= 2;
  size_t ly = 1;
  while (lx * ly * 2 <= want && rows % (ly * 2) == 0) ly *= 2;
  const size_t local[2] = {lx, ly};
  const size_t global[2] = {(cols + lx - 1) / lx * lx, rows};
  return [k, global, local](const Queue& q, const cltrain_run_args*) { q.launch(k, 2, global, local); };
}

}  // namespace cltrain::ocl
