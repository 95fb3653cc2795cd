// Atomics, the global timer and wait_until: the ops that talk across program instances. Each element
// is updated once, by its owner thread; results that replicated threads (or, for scalars, the whole
// block) need are shared through shared memory so control flow that depends on them stays uniform.
#include "absl/strings/str_cat.h"
#include "dsl/lower/op_lowering.h"
#include "support/check.h"
#include "support/strings.h"

namespace monotile::dsl::lower {
namespace {

std::string_view cmp_symbol(CmpPredicate cmp) {
  constexpr std::string_view kSymbols[] = {"==", "!=", "<", "<=", ">", ">="};
  return kSymbols[static_cast<int>(cmp)];
}

}  // namespace

std::string OpLowering::atomic_element(const Op& op, std::string_view ptr, std::string_view value,
                                       std::string_view desired, std::string_view dest) {
  ScalarType element = type(op.operands[1]).element.scalar;
  int bytes = scalar_type_bytes(element);
  std::string t = register_type(type(op.operands[1]).element);
  if (bytes == 2) {
    // 16-bit values: a CAS loop on the aligned 32-bit word that holds them.
    std::string next;
    bool fp = is_float(element);
    switch (op.code == OpCode::kAtomicCas ? AtomicKind::kXchg : op.attrs.atomic) {
      case AtomicKind::kAdd:
        next = fp ? absl::StrCat(element == ScalarType::kBf16 ? "mt_round_bf16" : "mt_round_f16", "(mt_cur + ",
                                 to_absl(value), ")")
                  : absl::StrCat("(", t, ")(mt_cur + ", to_absl(value), ")");
        break;
      case AtomicKind::kMax:
        next = fp ? absl::StrCat("mt_fmax(mt_cur, ", to_absl(value), ")")
                  : absl::StrCat("(mt_cur < ", to_absl(value), " ? ", to_absl(value), " : mt_cur)");
        break;
      case AtomicKind::kMin:
        next = fp ? absl::StrCat("mt_fmin(mt_cur, ", to_absl(value), ")")
                  : absl::StrCat("(", to_absl(value), " < mt_cur ? ", to_absl(value), " : mt_cur)");
        break;
      case AtomicKind::kAnd: next = absl::StrCat("(", t, ")(mt_cur & ", to_absl(value), ")"); break;
      case AtomicKind::kOr: next = absl::StrCat("(", t, ")(mt_cur | ", to_absl(value), ")"); break;
      case AtomicKind::kXor: next = absl::StrCat("(", t, ")(mt_cur ^ ", to_absl(value), ")"); break;
      case AtomicKind::kXchg:
        next = std::string(op.code == OpCode::kAtomicCas ? desired : value);
        break;
    }
    std::string skip = op.code == OpCode::kAtomicCas
                           ? absl::StrCat(" if (((mt_old >> mt_shift) & 0xffffu) != (", to_bits(element, value),
                                          " & 0xffffu)) break;")
                           : "";
    return absl::StrCat(
        "{ unsigned* mt_word = (unsigned*)((unsigned long long)", to_absl(ptr), " & ~3ull); const unsigned mt_shift = ",
        "(unsigned)(((unsigned long long)", to_absl(ptr), " & 2ull) * 8); unsigned mt_old; ",
        spelling_.load_ordered(MemOrder::kRelaxed, op.attrs.scope, 4, "mt_word", "mt_old"), " for (;;) { ", t,
        " mt_cur = ", from_bits(element, "((mt_old >> mt_shift) & 0xffffu)"), ";", skip, " ", t, " mt_next = ", next,
        "; const unsigned mt_new = (mt_old & ~(0xffffu << mt_shift)) | ((", to_bits(element, "mt_next"),
        " & 0xffffu) << mt_shift); unsigned mt_prev; ",
        spelling_.atomic_cas(op.attrs.order, op.attrs.scope, 4, "mt_word", "mt_old", "mt_new", "mt_prev"),
        " if (mt_prev == mt_old) break; mt_old = mt_prev; } ", to_absl(dest), " = ",
        from_bits(element, "((mt_old >> mt_shift) & 0xffffu)"), "; }");
  }
  std::string_view word = bytes == 8 ? "unsigned long long" : "unsigned";
  if (op.code == OpCode::kAtomicCas) {
    return absl::StrCat("{ ", to_absl(word), " mt_prev; ",
                        spelling_.atomic_cas(op.attrs.order, op.attrs.scope, bytes, ptr, to_bits(element, value),
                                             to_bits(element, desired), "mt_prev"),
                        " ", to_absl(dest), " = ", from_bits(element, "mt_prev"), "; }");
  }
  std::string native = spelling_.atomic_rmw(op.attrs.atomic, op.attrs.order, op.attrs.scope, element, ptr, value, dest);
  if (!native.empty()) return native;
  // No native instruction (float min/max, ...): a CAS loop on the bit pattern.
  std::string combined;
  switch (op.attrs.atomic) {
    case AtomicKind::kAdd: combined = absl::StrCat("mt_cur + ", to_absl(value)); break;
    case AtomicKind::kMax: combined = absl::StrCat("mt_fmax(mt_cur, ", to_absl(value), ")"); break;
    case AtomicKind::kMin: combined = absl::StrCat("mt_fmin(mt_cur, ", to_absl(value), ")"); break;
    case AtomicKind::kXchg: combined = std::string(value); break;
    default: MT_CHECK(false, "bitwise atomics on floats are rejected before emission");
  }
  return absl::StrCat(
      "{ ", to_absl(word), " mt_old; ",
      spelling_.load_ordered(MemOrder::kRelaxed, op.attrs.scope, bytes, ptr, "mt_old"), " for (;;) { ", t,
      " mt_cur = ", from_bits(element, "mt_old"), "; ", t, " mt_next = ", combined, "; ", to_absl(word), " mt_prev; ",
      spelling_.atomic_cas(op.attrs.order, op.attrs.scope, bytes, ptr, "mt_old", to_bits(element, "mt_next"), "mt_prev"),
      " if (mt_prev == mt_old) break; mt_old = mt_prev; } ", to_absl(dest), " = ", from_bits(element, "mt_old"), "; }");
}

absl::Status OpLowering::atomic(const Op& op) {
  bool cas = op.code == OpCode::kAtomicCas;
  ValueId value = op.operands[1];
  ElementType element = type(value).element;
  int bytes = scalar_type_bytes(element.scalar);
  if (element.pointer || (bytes != 2 && bytes != 4 && bytes != 8)) {
    return unsupported(op, absl::StrCat("atomics take 16-, 32- or 64-bit integer or float values, got ", type(value).str()));
  }
  bool bitwise = op.attrs.atomic == AtomicKind::kAnd || op.attrs.atomic == AtomicKind::kOr ||
                 op.attrs.atomic == AtomicKind::kXor;
  if (!cas && bitwise && is_float(element.scalar)) {
    return unsupported(op, absl::StrCat("atomic ", to_absl(atomic_name(op.attrs.atomic)), " takes integers, got ",
                                        type(value).str()));
  }
  ValueId result = op.results[0];
  Layout layout = layout_or_default(result);
  int64_t regs = layout.num_regs();
  std::string ptr = get(op.operands[0], layout);
  std::string val = get(value, layout);
  std::string desired = cas ? get(op.operands[2], layout) : "";
  size_t mask_index = cas ? 3 : 2;
  bool masked = op.attrs.has_mask && !state_.axis[op.operands[mask_index]].known_true();
  std::string mask = masked ? get(op.operands[mask_index], layout) : "";
  std::string out = name(result);
  std::string t = reg_type(result);
  line(absl::StrCat(t, " ", out, "[", regs, "];"));
  std::string guard = layout.rank() == 0 ? "mt_tid == 0" : owner(layout);
  if (masked) guard = guard.empty() ? absl::StrCat(mask, "[i]") : absl::StrCat(guard, " && ", mask, "[i]");
  unrolled("i", regs);
  line(absl::StrCat(out, "[i] = (", t, ")0;"));
  open(guard.empty() ? "" : absl::StrCat("if (", guard, ")"));
  line(atomic_element(op, absl::StrCat(ptr, "[i]"), absl::StrCat(val, "[i]"),
                      cas ? absl::StrCat(desired, "[i]") : "", absl::StrCat(out, "[i]")));
  close();
  close();
  // Replicated threads did not perform the update: they take the owner's old value.
  if (layout.rank() == 0) {
    broadcast_from_thread0(absl::StrCat(out, "[0]"), t);
  } else if (!owner(layout).empty()) {
    std::vector<int64_t> strides = row_major(type(result).shape);
    need_smem(type(result).num_elements() * 8);
    barrier();
    unrolled("i", regs);
    line(absl::StrCat("if (", owner(layout), ") ", smem(t), "[", linear(layout, "i", strides), "] = ", out, "[i];"));
    close();
    barrier();
    unrolled("i", regs);
    line(absl::StrCat(out, "[i] = ", smem(t), "[", linear(layout, "i", strides), "];"));
    close();
  }
  return absl::OkStatus();
}

absl::Status OpLowering::global_timer(const Op& op) {
  std::string out = name(op.results[0]);
  line(absl::StrCat("long long ", out, "[1];"));
  line(absl::StrCat("if (mt_tid == 0) ", out, "[0] = (long long)mt_globaltimer_ns();"));
  broadcast_from_thread0(absl::StrCat(out, "[0]"), "long long");
  return absl::OkStatus();
}

// Every thread, no guard (spelling.h). Where the target has no such instruction nothing is written:
// the runtime then launches the kernel after its predecessor has ended, which the wait promises.
absl::Status OpLowering::grid_dependency(const Op& op) {
  const bool wait = op.code == OpCode::kWaitGridDependency;
  auto spell = wait ? spelling_.wait_grid_dependency : spelling_.launch_dependents;
  std::string statement = spell == nullptr ? "" : spell(state_.target);
  if (!statement.empty()) line(statement);
  return absl::OkStatus();
}

absl::Status OpLowering::wait_until(const Op& op) {
  ValueId ptr = op.operands[0];
  ScalarType element = type(ptr).element.scalar;
  int bytes = scalar_type_bytes(element);
  if (!type(ptr).is_scalar() || (bytes != 4 && bytes != 8)) {
    return unsupported(op, absl::StrCat("waits on one 32- or 64-bit word, got ", type(ptr).str()));
  }
  std::string out = name(op.results[0]);
  std::string_view word = bytes == 8 ? "unsigned long long" : "unsigned";
  line(absl::StrCat("bool ", out, "[1] = {false};"));
  open("if (mt_tid == 0)");
  line("const unsigned long long mt_start = mt_globaltimer_ns();");
  line(absl::StrCat("const unsigned long long mt_limit = ", name(op.operands[2]), "[0] < 0 ? 0ull : (unsigned long long)",
                    name(op.operands[2]), "[0];"));
  open("for (;;)");
  line(absl::StrCat(to_absl(word), " mt_bits;"));
  line(spelling_.load_ordered(MemOrder::kAcquire, op.attrs.scope, bytes, absl::StrCat(name(ptr), "[0]"), "mt_bits"));
  line(absl::StrCat("if (", from_bits(element, "mt_bits"), " ", to_absl(cmp_symbol(op.attrs.cmp)), " ",
                    name(op.operands[1]), "[0]) break;"));
  line(absl::StrCat("if (mt_globaltimer_ns() - mt_start >= mt_limit) { ", out, "[0] = true; break; }"));
  line(absl::StrCat(to_absl(spelling_.backoff), ";"));
  close();
  close();
  broadcast_from_thread0(absl::StrCat(out, "[0]"), "bool");
  return absl::OkStatus();
}

}  // namespace monotile::dsl::lower
