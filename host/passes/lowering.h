// What an import pass builds when one file operator becomes several model operators (its parts:
// export writes the file's operator back as it was, with the trained weights it reads).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cltrain/cltrain_backend.h"
#include "cltrain/cltrain_ops.h"
#include "passes/file_links.h"
#include "passes/new_tensors.h"

namespace cltrain {

struct Lowering {
  Model& m;
  const FileOperator& fo;
  std::vector<Operator> ops;

  Operator part(int32_t op_code, std::vector<int32_t> in, int32_t out) const {
    return part_of(fo, op_code, std::move(in), out);
  }
  int32_t tensor(const Tensor& like, std::vector<int32_t> shape, const std::string& suffix) {
    Tensor t;
    t.name = like.name + suffix;
    t.shape = std::move(shape);
    return append_tensor(m, std::move(t));
  }
  // Concatenates parts (each with extent 1 at axis) into out, through a tree of at most
  // CLTRAIN_MAX_STEP_IO inputs per CONCATENATION.
  void concatenate(std::vector<int32_t> parts, int32_t axis, int32_t out, const std::vector<int32_t>& out_shape) {
    while (parts.size() > CLTRAIN_MAX_STEP_IO) {
      std::vector<int32_t> next;
      for (size_t start = 0; start < parts.size(); start += CLTRAIN_MAX_STEP_IO) {
        const size_t end = std::min(parts.size(), start + CLTRAIN_MAX_STEP_IO);
        int32_t extent = 0;
        for (size_t k = start; k < end; ++k)
          extent += m.tensors[static_cast<size_t>(parts[k])].shape[static_cast<size_t>(axis)];
        std::vector<int32_t> shape = out_shape;
        shape[static_cast<size_t>(axis)] = extent;
        const int32_t group =
            tensor(m.tensors[static_cast<size_t>(out)], shape, "/stack" + std::to_string(start / CLTRAIN_MAX_STEP_IO));
        Operator c =
            part(CLTRAIN_OP_CONCATENATION,
                 {parts.begin() + static_cast<std::ptrdiff_t>(start), parts.begin() + static_cast<std::ptrdiff_t>(end)},
                 group);
        c.params.axis = axis;
        ops.push_back(std::move(c));
        next.push_back(group);
      }
      parts = std::move(next);
    }
    Operator c = part(CLTRAIN_OP_CONCATENATION, std::move(parts), out);
    c.params.axis = axis;
    ops.push_back(std::move(c));
  }
};

}  // namespace cltrain
