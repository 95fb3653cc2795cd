// Value's queries, conversions and compound assignments (thin forwards to the builder and arith).
#include "dsl/value.h"

#include "dsl/arith.h"
#include "dsl/builder.h"

namespace monotile::dsl {

Type Value::type(SourceLocation loc) const {
  return Builder::owner_of(*this, "type", loc).type_of(*this, "type", loc);
}
ElementType Value::dtype(SourceLocation loc) const { return type(loc).element; }
std::vector<int64_t> Value::shape(SourceLocation loc) const { return type(loc).shape; }
int Value::rank(SourceLocation loc) const { return static_cast<int>(type(loc).shape.size()); }
bool Value::is_scalar(SourceLocation loc) const { return type(loc).is_scalar(); }

Value Value::to(ElementType type, SourceLocation loc) const { return cast(*this, type, loc); }
Value Value::bitcast(ElementType type, SourceLocation loc) const {
  return dsl::bitcast(*this, type, loc);
}

// The left operand takes the right one's location: both come from the user's statement.
Value& Value::operator+=(const Operand& rhs) { return *this = Operand(*this, rhs.loc()) + rhs; }
Value& Value::operator-=(const Operand& rhs) { return *this = Operand(*this, rhs.loc()) - rhs; }
Value& Value::operator*=(const Operand& rhs) { return *this = Operand(*this, rhs.loc()) * rhs; }
Value& Value::operator/=(const Operand& rhs) { return *this = Operand(*this, rhs.loc()) / rhs; }
Value& Value::operator%=(const Operand& rhs) { return *this = Operand(*this, rhs.loc()) % rhs; }
Value& Value::operator&=(const Operand& rhs) { return *this = Operand(*this, rhs.loc()) & rhs; }
Value& Value::operator|=(const Operand& rhs) { return *this = Operand(*this, rhs.loc()) | rhs; }
Value& Value::operator^=(const Operand& rhs) { return *this = Operand(*this, rhs.loc()) ^ rhs; }

}  // namespace monotile::dsl
