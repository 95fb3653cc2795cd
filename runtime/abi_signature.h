// Test helper: a function pointer type's calling signature as the ABI sees it (per parameter and
// return: size, integer or floating, pointer depth, pointee size when it is a scalar), so our
// hand-written driver declarations can be checked against a vendor header's with static_assert.
// Types' names and constness do not matter to the ABI and are ignored.
#pragma once

#include <array>
#include <cstddef>
#include <type_traits>

namespace monotile::runtime::testing {

template <typename T>
constexpr int abi_kind() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_void_v<U>) {
    return 0;
  } else if constexpr (std::is_pointer_v<U>) {
    using Pointee = std::remove_cv_t<std::remove_pointer_t<U>>;
    if constexpr (std::is_pointer_v<Pointee> || std::is_arithmetic_v<Pointee> ||
                  std::is_enum_v<Pointee>) {
      return 1000 + abi_kind<Pointee>();
    } else {
      return 1000;  // void or an opaque struct: only the pointer matters
    }
  } else if constexpr (std::is_class_v<U>) {
    return 100000 + static_cast<int>(sizeof(U));  // a struct by value (an IPC handle): its size
  } else if constexpr (std::is_floating_point_v<U>) {
    return static_cast<int>(sizeof(U)) * 10 + 1;
  } else {
    static_assert(std::is_integral_v<U> || std::is_enum_v<U>, "not a driver API scalar");
    return static_cast<int>(sizeof(U)) * 10;
  }
}

template <typename F>
struct AbiSignature;

template <typename R, typename... Args>
struct AbiSignature<R (*)(Args...)> {
  static constexpr std::array<int, sizeof...(Args) + 1> kKinds = {abi_kind<R>(),
                                                                 abi_kind<Args>()...};
};

template <typename Ours, typename Theirs>
constexpr bool same_abi() {
  if constexpr (AbiSignature<Ours>::kKinds.size() != AbiSignature<Theirs>::kKinds.size()) {
    return false;
  } else {
    return AbiSignature<Ours>::kKinds == AbiSignature<Theirs>::kKinds;
  }
}

}  // namespace monotile::runtime::testing
