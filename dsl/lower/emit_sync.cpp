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

// Thread 0 spins: the flag (acquire at the op's scope), then the abort word if any (relaxed, system
// scope: whoever sets it, the host or a peer GPU, is seen), then the clock; the block then shares
// its verdict (and, in the second form, the last value it loaded) through shared memory.
absl::Status OpLowering::wait_until(const Op& op) {
  ValueId ptr = op.operands[0];
  ScalarType element = type(ptr).element.scalar;
  int bytes = scalar_type_bytes(element);
  if (!type(ptr).is_scalar() || (bytes != 4 && bytes != 8)) {
    return unsupported(op, absl::StrCat("waits on one 32- or 64-bit word, got ", type(ptr).str()));
  }
  const bool with_abort = op.operands.size() == 4;
  const int abort_bytes = with_abort ? scalar_type_bytes(type(op.operands[3]).element.scalar) : 0;
  if (with_abort && (!type(op.operands[3]).is_scalar() || (abort_bytes != 4 && abort_bytes != 8))) {
    return unsupported(op, absl::StrCat("aborts on one 32- or 64-bit word, got ", type(op.operands[3]).str()));
  }
  std::string_view word = bytes == 8 ? "unsigned long long" : "unsigned";
  if (op.results.size() == 1) {
    std::string out = name(op.results[0]);
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
  std::string outcome = name(op.results[0]), seen = name(op.results[1]);
  std::string t = reg_type(op.results[1]);
  line(absl::StrCat("int ", outcome, "[1] = {", kWaitMet, "};"));
  line(absl::StrCat(t, " ", seen, "[1] = {(", t, ")0};"));
  open("if (mt_tid == 0)");
  // One deadline held through the loop rather than a start and a limit (on AMD every value here
  // sits in scalar registers, which the waits' callers run short of); the clock's nanoseconds since
  // boot plus any i64 bound stay below 2^64.
  line(absl::StrCat("const unsigned long long mt_deadline = mt_globaltimer_ns() + (", name(op.operands[2]),
                    "[0] < 0 ? 0ull : (unsigned long long)", name(op.operands[2]), "[0]);"));
  line(absl::StrCat(to_absl(word), " mt_bits = 0;"));
  if (with_abort) {
    // On AMD the abort word's address goes to vector registers (an opaque zero added to it): held
    // in scalar ones through the loop, it raised what K2's callers keep in VGPR lanes by up to 25.
    std::string at = name(op.operands[3]);
    if (state_.target.vendor() == Vendor::kAmd) {
      // Only where the code is compiled for the GPU (the host emulation of generated code runs it
      // as host C++).
      line("unsigned mt_vzero = 0;");
      line("#if defined(__AMDGCN__)");
      line("asm volatile(\"v_mov_b32 %0, 0\" : \"=v\"(mt_vzero));");
      line("#endif");
      line(absl::StrCat("const auto mt_abort_at = ", at, "[0] + mt_vzero;"));
    } else {
      line(absl::StrCat("const auto mt_abort_at = ", at, "[0];"));
    }
  }
  open("for (;;)");
  line(spelling_.load_ordered(MemOrder::kAcquire, op.attrs.scope, bytes, absl::StrCat(name(ptr), "[0]"), "mt_bits"));
  line(absl::StrCat("if (", from_bits(element, "mt_bits"), " ", to_absl(cmp_symbol(op.attrs.cmp)), " ",
                    name(op.operands[1]), "[0]) break;"));
  if (with_abort) {
    std::string_view abort_word = abort_bytes == 8 ? "unsigned long long" : "unsigned";
    line(absl::StrCat(to_absl(abort_word), " mt_abort;"));
    line(spelling_.load_ordered(MemOrder::kRelaxed, MemScope::kSystem, abort_bytes, "mt_abort_at", "mt_abort"));
    line(absl::StrCat("if (mt_abort != 0u) { ", outcome, "[0] = ", kWaitAborted, "; break; }"));
  }
  line(absl::StrCat("if (mt_globaltimer_ns() >= mt_deadline) { ", outcome, "[0] = ", kWaitTimedOut, "; break; }"));
  line(absl::StrCat(to_absl(spelling_.backoff), ";"));
  close();
  line(absl::StrCat(seen, "[0] = ", from_bits(element, "mt_bits"), ";"));
  close();
  // One round through shared memory for both: the outcome at byte 0, the value at byte 8.
  need_smem(16);
  barrier();
  line(absl::StrCat("if (mt_tid == 0) { ", smem("int"), "[0] = ", outcome, "[0]; ", smem(t, 8), "[0] = ", seen,
                    "[0]; }"));
  barrier();
  line(absl::StrCat(outcome, "[0] = ", smem("int"), "[0];"));
  line(absl::StrCat(seen, "[0] = ", smem(t, 8), "[0];"));
  return absl::OkStatus();
}

}  // namespace monotile::dsl::lower
