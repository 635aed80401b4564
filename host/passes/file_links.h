// How the file's operators connect (import passes): per tensor, the operator that writes it and
// the operators (with the input slot) that read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "passes/passes.h"

namespace cltrain {

struct FileLinks {
  std::vector<int32_t> producer;                                 // per tensor: its operator, -1: none
  std::vector<std::vector<std::pair<int32_t, size_t>>> readers;  // per tensor: (operator, slot)
  FileLinks(const std::vector<FileOperator>& ops, size_t tensors) : producer(tensors, -1), readers(tensors) {
    for (size_t i = 0; i < ops.size(); ++i) {
      for (size_t k = 0; k < ops[i].inputs.size(); ++k)
        if (valid(ops[i].inputs[k]))
          readers[static_cast<size_t>(ops[i].inputs[k])].push_back({static_cast<int32_t>(i), k});
      for (int32_t t : ops[i].outputs)
        if (valid(t)) producer[static_cast<size_t>(t)] = static_cast<int32_t>(i);
    }
  }
  bool valid(int32_t t) const { return t >= 0 && static_cast<size_t>(t) < producer.size(); }
  // The operator writing t (-1: none, or t is no tensor).
  int32_t writer(int32_t t) const { return valid(t) ? producer[static_cast<size_t>(t)] : -1; }
  size_t reader_count(int32_t t) const { return valid(t) ? readers[static_cast<size_t>(t)].size() : 0; }
};

// A model operator that file operator fo becomes, one of its parts (export writes fo as it was).
inline Operator part_of(const FileOperator& fo, int32_t op, std::vector<int32_t> inputs, int32_t output) {
  Operator o;
  o.op = op;
  o.inputs = std::move(inputs);
  o.outputs = {output};
  o.file_index = fo.index;
  o.part = true;
  return o;
}

}  // namespace cltrain
