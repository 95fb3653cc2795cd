// device_assert and print.
#include "dsl/debug_ops.h"

#include "dsl/builder.h"
#include "dsl/error.h"
#include "dsl/promote.h"

namespace monotile::dsl {

void device_assert(const Value& cond, std::string message, SourceLocation loc) {
  Builder& builder = Builder::current("device_assert", loc);
  Type type = builder.type_of(cond, "device_assert", loc);
  if (type.element != ElementType{ScalarType::kI1}) {
    throw Error(SourceLoc::from(loc), "device_assert",
                "the condition has dtype " + dtype_str(type.element) + ", not i1", "i1",
                dtype_str(type.element), "assert a comparison, e.g. device_assert(n > 0, \"...\")");
  }
  Attrs attrs;
  attrs.text = std::move(message);
  builder.emit(OpCode::kAssert, {cond}, std::move(attrs), {}, loc);
}

void print(std::string prefix, const std::vector<Value>& values, SourceLocation loc) {
  Builder& builder = Builder::current("print", loc);
  Attrs attrs;
  attrs.text = std::move(prefix);
  builder.emit(OpCode::kPrint, values, std::move(attrs), {}, loc);
}

}  // namespace monotile::dsl
