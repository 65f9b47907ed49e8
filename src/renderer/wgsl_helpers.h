// The WGSL renderer's helper functions (wgsl_helpers.cpp): the semantics the IR defines (NaN-propagating
// max, floor division with the zero check, PyTorch's shifts, 16-bit float rounding, exp and log at
// their edges) spelled in WGSL, which has neither pointers into buffers nor 64-bit integers, and whose
// compilers may assume that no float is NaN or infinite. Each is emitted only into kernels that call it.
#pragma once

#include <string>

namespace lazygrad::wgsl {

// The code of helpers called in `code` (by name, "lg_f2h(" and so on), in dependency order.
std::string helper_definitions(const std::string& code);

// Floor division and modulo (lg_idiv_<t>, lg_mod_<t>) for t "i32" or "u32", with the error bits of
// a zero divisor.
std::string int_division_helpers(const std::string& t);

}  // namespace lazygrad::wgsl
