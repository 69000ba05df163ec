// Small string helpers shared by every layer's messages and readings.
#pragma once

#include <string>
#include <vector>

namespace ordo {

// The items with `separator` between them: joined({"a", "b"}, " or ") is "a or b".
std::string joined(const std::vector<std::string>& items, const char* separator = " and ");

}  // namespace ordo
