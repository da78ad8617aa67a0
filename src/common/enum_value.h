// SPDX-License-Identifier: BSD-2-Clause
// Reads an enum field the application filled in, without assuming it holds a valid
// enumerator: C callers can store any integer there, and in C++ loading an out-of-range
// value through the enum type is undefined.
#pragma once
#include <cstring>
#include <type_traits>

namespace softrdma {

template <typename E>
long long enum_value(const E &e) {
    static_assert(std::is_enum_v<E>);
    std::underlying_type_t<E> v;
    std::memcpy(&v, &e, sizeof v);
    return static_cast<long long>(v);
}

}  // namespace softrdma
