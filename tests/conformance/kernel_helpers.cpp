// Conformance kernel helpers: one program instance handles the whole tile, offsets are row-major.
#include "tests/conformance/kernel_helpers.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/check.h"
#include "support/strings.h"

namespace monotile::conformance {

using namespace monotile::dsl;  // NOLINT: kernels read like the language guide

Value flat_offsets(const std::vector<int64_t>& shape) {
  MT_CHECK(!shape.empty() && shape.size() <= 3);
  if (shape.size() == 1) return arange(0, shape[0]);
  if (shape.size() == 2) return col(arange(0, shape[0])) * shape[1] + row(arange(0, shape[1]));
  Value plane = expand_dims(expand_dims(arange(0, shape[0]), 1), 2) * (shape[1] * shape[2]);
  Value rows = expand_dims(col(arange(0, shape[1])), 0) * shape[2];
  Value cols = expand_dims(row(arange(0, shape[2])), 0);
  return plane + rows + cols;
}

std::string shape_name(const std::vector<int64_t>& shape) { return absl::StrCat("[", absl::StrJoin(shape, ", "), "]"); }

std::string case_name(const std::string& op, ScalarType dtype, const std::vector<int64_t>& shape) {
  return absl::StrCat(op, "/", to_absl(scalar_type_name(dtype)), "/", shape_name(shape));
}

Case unary_case(const ElementwiseSpec& spec, UnaryOp op) {
  Case c;
  c.name = case_name(spec.op, spec.in, spec.shape);
  c.build = [spec, op] {
    Builder b("unary_" + spec.op);
    Value x = b.arg("x", ptr(ElementType{spec.in})), y = b.arg("y", ptr(ElementType{spec.out}));
    Value offsets = flat_offsets(spec.shape);
    store(y + offsets, op(load(x + offsets)));
    return b.finish();
  };
  c.tensors = {{"x", spec.in, spec.shape, Role::kInput, spec.generate_a, std::nullopt},
               {"y", spec.out, spec.shape, Role::kOutput, nullptr, spec.tolerance}};
  c.reference = [spec](Tensors& t) {
    const HostTensor& x = t["x"];
    HostTensor& y = t["y"];
    for (int64_t i = 0; i < x.size(); ++i) {
      if (spec.int_unary) y.set_int(i, spec.int_unary(x.get_int(i)));
      else y.set(i, spec.float_unary(x.get(i)));
    }
  };
  return c;
}

Case binary_case(const ElementwiseSpec& spec, BinaryOp op) {
  Case c;
  c.name = case_name(spec.op, spec.in, spec.shape);
  c.build = [spec, op] {
    Builder b("binary_" + spec.op);
    Value x = b.arg("a", ptr(ElementType{spec.in})), y = b.arg("b", ptr(ElementType{spec.in}));
    Value out = b.arg("out", ptr(ElementType{spec.out}));
    Value offsets = flat_offsets(spec.shape);
    store(out + offsets, op(load(x + offsets), load(y + offsets)));
    return b.finish();
  };
  c.tensors = {{"a", spec.in, spec.shape, Role::kInput, spec.generate_a, std::nullopt},
               {"b", spec.in, spec.shape, Role::kInput, spec.generate_b ? spec.generate_b : spec.generate_a, std::nullopt},
               {"out", spec.out, spec.shape, Role::kOutput, nullptr, spec.tolerance}};
  c.reference = [spec](Tensors& t) {
    const HostTensor& a = t["a"];
    const HostTensor& b = t["b"];
    HostTensor& out = t["out"];
    for (int64_t i = 0; i < a.size(); ++i) {
      if (spec.int_binary) out.set_int(i, spec.int_binary(a.get_int(i), b.get_int(i)));
      else out.set(i, spec.float_binary(a.get(i), b.get(i)));
    }
  };
  return c;
}

}  // namespace monotile::conformance
