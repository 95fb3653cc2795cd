// The library's version, for hosts that check what they loaded.
#pragma once

namespace monotile {

// "MAJOR.MINOR.PATCH" of the monotile this program runs with.
const char* version();

}  // namespace monotile
