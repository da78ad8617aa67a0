// SPDX-License-Identifier: BSD-2-Clause
// Which of the application's descriptors stand for rsockets. The application holds a
// placeholder descriptor (a real one, so the kernel never hands its number out twice); the
// table maps it to the rsocket behind it. dup() makes two placeholders share one rsocket,
// closed with the last of them.
#pragma once

namespace softrdma::preload {

constexpr int kMaxFds = 1 << 16;

// The rsocket behind fd, or -1 when fd is the kernel's own.
int rsocket_of(int fd);
// fd (a placeholder) now stands for rs, taking one reference.
void map_fd(int fd, int rs);
// fd no longer stands for anything; returns the rsocket if fd held its last reference, or -1.
int unmap_fd(int fd);
// Another placeholder for the same rsocket (dup).
void alias_fd(int fd, int rs);
// A placeholder descriptor, close-on-exec if asked.
int make_placeholder(bool cloexec);

}  // namespace softrdma::preload
