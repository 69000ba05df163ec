// The one translation unit that compiles ordo's JSON implementation (see json.h).
#define ORDO_JSON_IMPLEMENTATION
#include "base/json.h"
