// SPDX-License-Identifier: BSD-2-Clause
// A mutex that spins briefly before it sleeps (glibc's adaptive kind). For locks that two
// threads on two cores take in turn, each for a moment: the progress engine handing CM events
// to the application's event thread. There a sleeping waiter costs two context switches per
// hand-off, while the holder would have let go within a microsecond.
#pragma once
#include <pthread.h>

namespace softrdma {

class AdaptiveMutex {
  public:
    AdaptiveMutex() {
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
        pthread_mutex_init(&m_, &a);
        pthread_mutexattr_destroy(&a);
    }
    ~AdaptiveMutex() { pthread_mutex_destroy(&m_); }
    AdaptiveMutex(const AdaptiveMutex &) = delete;
    AdaptiveMutex &operator=(const AdaptiveMutex &) = delete;
    void lock() { pthread_mutex_lock(&m_); }
    void unlock() { pthread_mutex_unlock(&m_); }
    bool try_lock() { return pthread_mutex_trylock(&m_) == 0; }

  private:
    pthread_mutex_t m_;
};

}  // namespace softrdma
