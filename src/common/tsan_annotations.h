// SPDX-License-Identifier: BSD-2-Clause
// RDMA data model vs ThreadSanitizer: the progress engine writes (and reads) registered
// application memory on behalf of a remote peer, and the application synchronizes with that
// peer through its own protocol across a process boundary TSan cannot see. In TSan builds
// these accesses are left out of race detection; everything else stays checked.
#pragma once

#if defined(__SANITIZE_THREAD__)
extern "C" void AnnotateIgnoreReadsBegin(const char *file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char *file, int line);
extern "C" void AnnotateIgnoreWritesBegin(const char *file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char *file, int line);
namespace softrdma {
struct AppMemoryAccess {
    AppMemoryAccess() {
        AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
        AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
    }
    ~AppMemoryAccess() {
        AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
        AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
    }
    AppMemoryAccess(const AppMemoryAccess &) = delete;
    AppMemoryAccess &operator=(const AppMemoryAccess &) = delete;
};
}  // namespace softrdma
#else
namespace softrdma {
struct AppMemoryAccess {
    AppMemoryAccess() {}  // user-provided: a scope marker, not an unused variable
    ~AppMemoryAccess() {}
    AppMemoryAccess(const AppMemoryAccess &) = delete;
    AppMemoryAccess &operator=(const AppMemoryAccess &) = delete;
};
}  // namespace softrdma
#endif
