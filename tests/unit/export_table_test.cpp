// SPDX-License-Identifier: BSD-2-Clause
// The export table in a context's command fd: what an importer accepts as one, how slots are
// taken and given back, and that a withdrawn publication cannot be entered.
#include "verbs/export_table.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

using namespace softrdma::verbs;

namespace {

struct Memfd {
    int fd = memfd_create("export-table-test", MFD_CLOEXEC);
    ~Memfd() { close(fd); }
};

ExportedObject region(uint32_t handle, uint32_t pd) {
    ExportedObject o;
    o.handle = handle;
    o.pd_handle = pd;
    o.addr = 0x10000;
    o.length = 4096;
    o.iova = 0x10000;
    o.access = 7;
    o.key = 0x1234;
    return o;
}

}  // namespace

TEST(ExportTable, AttachRefusesWhatIsNoTable) {
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    errno = 0;
    EXPECT_EQ(ExportTable::attach(p[0]), nullptr);
    EXPECT_EQ(errno, EOPNOTSUPP);
    close(p[0]);
    close(p[1]);
    Memfd small;
    ASSERT_EQ(ftruncate(small.fd, 4096), 0);
    EXPECT_EQ(ExportTable::attach(small.fd), nullptr);
    // The right size without the magic: zeros are no table either.
    Memfd created, zeros;
    auto t = ExportTable::create(created.fd, "sr_lo");
    ASSERT_TRUE(t);
    struct stat st;
    ASSERT_EQ(fstat(created.fd, &st), 0);
    ASSERT_EQ(ftruncate(zeros.fd, st.st_size), 0);
    EXPECT_EQ(ExportTable::attach(zeros.fd), nullptr);
    auto seen = ExportTable::attach(created.fd);
    ASSERT_TRUE(seen);
    EXPECT_STREQ(seen->device(), "sr_lo");
    EXPECT_EQ(seen->creator(), getpid());
    const uint32_t a = t->next_handle(), b = seen->next_handle();
    EXPECT_NE(a, 0u);
    EXPECT_EQ(b, a + 1);  // one counter for every process on the table
}

TEST(ExportTable, OwnPublicationsAreNotImportsAndOthersAre) {
    Memfd m;
    auto t = ExportTable::create(m.fd, "sr_lo");
    ASSERT_TRUE(t);
    ASSERT_GE(t->publish_pd(5), 0);
    ASSERT_GE(t->publish_mr(region(6, 5)), 0);
    ExportedObject o;
    ExportRef ref;
    EXPECT_FALSE(t->find_pd(5));  // ours: found in the process's own objects instead
    EXPECT_FALSE(t->find_mr(6, 5, o, ref));
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        auto c = ExportTable::attach(m.fd);
        bool ok = c && c->find_pd(5) && !c->find_pd(7) && c->find_mr(6, 5, o, ref) &&
                  !c->find_mr(6, 9, o, ref) && o.key == 0x1234 && o.length == 4096;
        ok = ok && c->enter(ref);
        if (ok) c->leave(ref);
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    ASSERT_EQ(waitpid(child, &st, 0), child);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

TEST(ExportTable, WithdrawnSlotsCannotBeEnteredAndAreReused) {
    Memfd m;
    auto t = ExportTable::create(m.fd, "sr_lo");
    ASSERT_TRUE(t);
    const int s = t->publish_mr(region(1, 1));
    ASSERT_GE(s, 0);
    ExportRef ref{s, 0};
    ASSERT_TRUE(t->enter(ref));
    t->leave(ref);
    t->retire(s);
    EXPECT_FALSE(t->enter(ref));
    t->retire(s);  // twice is harmless
    const int again = t->publish_mr(region(2, 1));
    ASSERT_GE(again, 0);
    // The slot may come back, but with another version: the old name does not reach it.
    if (again == s) {
        EXPECT_FALSE(t->enter(ref));
    }
    int n = 1;
    while (t->publish_pd(uint32_t(100 + n)) >= 0) ++n;
    EXPECT_GT(n, 1000);  // a full table says so; objects beyond it stay local
    t->retire(again);
    EXPECT_GE(t->publish_pd(99), 0);
}

TEST(ExportTable, AtomicsLockExcludesAnotherProcess) {
    Memfd m;
    auto t = ExportTable::create(m.fd, "sr_lo");
    ASSERT_TRUE(t);
    auto *word = static_cast<uint64_t *>(
        mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(word, MAP_FAILED);
    *word = 0;
    constexpr int kRounds = 20000;
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    auto add = [&](ExportTable &x) {
        for (int i = 0; i < kRounds; ++i) {
            AtomicsGuard g(&x);
            const uint64_t v = *reinterpret_cast<volatile uint64_t *>(word);  // plain RMW
            *reinterpret_cast<volatile uint64_t *>(word) = v + 1;
        }
    };
    if (child == 0) {
        auto c = ExportTable::attach(m.fd);
        if (!c) _exit(1);
        add(*c);
        _exit(0);
    }
    add(*t);
    int st = 0;
    ASSERT_EQ(waitpid(child, &st, 0), child);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    EXPECT_EQ(*word, uint64_t(2 * kRounds));
    munmap(word, 4096);
}
