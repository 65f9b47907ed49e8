// The strict JSON reader is public (models/ read config.json with it): lazygrad/json.h. This name
// stays for the library's own readers.
#pragma once

#include "lazygrad/json.h"
