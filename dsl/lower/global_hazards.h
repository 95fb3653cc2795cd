// Program order for global memory inside one program instance. A tile op's elements are spread over
// the program's threads, often with copies: a [256] vector may sit in every warp while one warp
// stores it. So a load by one warp can run after another warp's store of the same element, which
// the tile program (and the interpreter) orders the other way. GlobalHazards tracks, along the
// emitted code, which buffers were loaded and stored since the last block barrier, and says where a
// plain load or store needs one first: a store after a load of the same buffer (WAR), a load after
// a store (RAW), and a store after a store of the same pointer tile (WAW: the same parameter plus
// the same offsets; stores of different pieces of a buffer are taken to be disjoint, as a program
// that writes each output once makes them). Buffers are told apart by the pointer parameter they
// derive from; a pointer of unknown origin may alias any. Only stored buffers can conflict. Ordered
// and atomic accesses are left to the program's own fences and barriers.
#pragma once

#include <map>
#include <set>

#include "dsl/ir.h"

namespace monotile::dsl::lower {

class GlobalHazards {
 public:
  // `producers`: every value's defining op (block arguments have none).
  GlobalHazards(const Program& program, const std::map<ValueId, const Op*>& producers);

  // Whether a block barrier must come before this plain load or store (`op` is kLoad or kStore).
  bool needs_barrier(const Op& op) const;
  // Records the access, after the barrier (if any) and the access were emitted.
  void accessed(const Op& op);
  // A block barrier was emitted: nothing is pending.
  void barrier() { pending_ = {}; }

  // Control flow. A branch starts from the state before it; after it, what either arm left is
  // pending. A loop body starts with what the body itself accesses pending (the previous
  // iteration's), and leaves the same after the loop.
  struct Pending {
    std::set<int> loaded, stored;  // buffers (parameter index, kUnknown for any)
    std::set<ValueId> stores;      // the pointer tiles stored
  };
  Pending save() const { return pending_; }
  void restore(const Pending& pending) { pending_ = pending; }
  void merge(const Pending& other);
  void enter_loop(const Op& loop);

 private:
  static constexpr int kUnknown = -1;
  int buffer_of(ValueId pointer) const;
  bool tracked(int buffer) const {
    return any_ || (buffer == kUnknown ? !stored_.empty() : stored_.count(buffer) > 0);
  }
  static bool conflicts(int buffer, const std::set<int>& with);
  // Whether two pointer tiles address the same elements: the same value, or the same ops on the
  // same (or such) operands.
  bool same_pointers(ValueId a, ValueId b, int depth = 0) const;
  void summarize(const Block& block, Pending& into) const;

  const std::map<ValueId, const Op*>* producers_;
  std::map<ValueId, int> params_;  // a parameter's value -> its index
  std::set<int> stored_;           // buffers with a plain store
  bool any_ = false;               // a plain store through a pointer of unknown origin
  Pending pending_;
};

}  // namespace monotile::dsl::lower
