// The process's test hooks (test_hooks.h): empty unless a test sets them.
#include "cache/test_hooks.h"

namespace monotile::cache {

TestHooks& test_hooks() {
  static TestHooks* hooks = new TestHooks();
  return *hooks;
}

}  // namespace monotile::cache
