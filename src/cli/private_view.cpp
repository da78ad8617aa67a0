// SPDX-License-Identifier: BSD-2-Clause
#include "cli/private_view.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/unique_fd.h"

namespace softrdma::cli {
namespace {

using verbs::SysfsEntry;

std::string err(const std::string &what, const std::string &path) {
    return what + " " + path + ": " + std::strerror(errno);
}

bool write_file(const std::string &path, const std::string &text, mode_t mode) {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
    return fd && ::write(fd.get(), text.data(), text.size()) == ssize_t(text.size());
}

bool make_parents(const std::string &path) {
    for (size_t i = 1; (i = path.find('/', i)) != std::string::npos; ++i)
        if (::mkdir(path.substr(0, i).c_str(), 0755) != 0 && errno != EEXIST) return false;
    return true;
}

// An unprivileged user namespace in which we keep our own uid and gid (so the program runs as
// itself and owns the files it finds), with the capabilities to mount until we exec.
bool enter_namespaces(std::string &why) {
    const bool root = ::geteuid() == 0;
    const uid_t uid = ::geteuid();
    const gid_t gid = ::getegid();
    if (::unshare(CLONE_NEWNS | (root ? 0 : CLONE_NEWUSER)) != 0) {
        why = std::string("unshare: ") + std::strerror(errno) +
              (root ? ""
                    : " (unprivileged user namespaces may be disabled: "
                      "kernel.unprivileged_userns_clone or user.max_user_namespaces)");
        return false;
    }
    if (!root) {
        char map[64];
        std::snprintf(map, sizeof map, "%u %u 1\n", unsigned(uid), unsigned(uid));
        if (!write_file("/proc/self/uid_map", map, 0)) return why = err("write", "uid_map"), false;
        if (!write_file("/proc/self/setgroups", "deny\n", 0))
            return why = err("write", "setgroups"), false;
        std::snprintf(map, sizeof map, "%u %u 1\n", unsigned(gid), unsigned(gid));
        if (!write_file("/proc/self/gid_map", map, 0)) return why = err("write", "gid_map"), false;
    }
    // Nothing we mount from here on propagates back to the host.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
        return why = err("make private", "/"), false;
    return true;
}

// A character device node at `path` without mknod (refused in a user namespace): /dev/null
// bound onto an empty file. Programs only stat() and access() these.
bool char_device(const std::string &path) {
    return write_file(path, "", 0666) &&
           ::mount("/dev/null", path.c_str(), nullptr, MS_BIND, nullptr) == 0;
}

// Replaces `target` (a directory) by a tmpfs that holds everything it held (each entry bound
// back in place, symlinks copied) plus our entries below `target`. Entries of the target with
// the name of one of ours (a real /dev/infiniband) give way to ours.
bool overlay(const std::string &target, const std::vector<SysfsEntry> &entries, std::string &why) {
    char tmpl[] = "/tmp/softrdma-view-XXXXXX";
    if (!::mkdtemp(tmpl)) return why = err("mkdtemp", tmpl), false;
    const std::string stage = tmpl;
    // Whatever happens, the directory must not outlive us in the host's /tmp.
    struct Cleanup {
        std::string dir;
        ~Cleanup() { ::rmdir(dir.c_str()); }
    } cleanup{stage};
    if (::mount("tmpfs", stage.c_str(), "tmpfs", MS_NOSUID, "mode=0755") != 0)
        return why = err("mount tmpfs on", stage), false;

    std::vector<std::string> ours;  // first path components we provide
    for (const SysfsEntry &e : entries) {
        if (e.path.rfind(target + "/", 0) != 0) continue;
        const std::string rel = e.path.substr(target.size() + 1);
        ours.push_back(rel.substr(0, rel.find('/')));
    }
    DIR *d = ::opendir(target.c_str());
    if (!d) return why = err("opendir", target), false;
    bool ok = true;
    while (dirent *de = ::readdir(d)) {
        const std::string name = de->d_name;
        if (name == "." || name == "..") continue;
        bool replaced = false;
        for (const auto &o : ours) replaced |= o == name;
        if (replaced) continue;
        const std::string from = target + "/" + name, to = stage + "/" + name;
        struct stat st;
        if (::lstat(from.c_str(), &st) != 0) continue;  // vanished meanwhile
        if (S_ISLNK(st.st_mode)) {
            char link[4096];
            const ssize_t n = ::readlink(from.c_str(), link, sizeof link - 1);
            if (n < 0) continue;
            link[n] = '\0';
            if (::symlink(link, to.c_str()) != 0) ok = false, why = err("symlink", to);
            continue;
        }
        const bool made =
            S_ISDIR(st.st_mode) ? ::mkdir(to.c_str(), 0755) == 0 : write_file(to, "", 0600);
        // MS_REC: a user namespace may not reveal what lies under a mount it inherited.
        if (!made || ::mount(from.c_str(), to.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
            ok = false;
            why = err("bind", from);
        }
        if (!ok) break;
    }
    ::closedir(d);
    for (const SysfsEntry &e : entries) {
        if (!ok) break;
        if (e.path.rfind(target + "/", 0) != 0) continue;
        const std::string at = stage + e.path.substr(target.size());
        if (!make_parents(at))
            ok = false, why = err("mkdir", at);
        else if (e.kind == SysfsEntry::Kind::kFile && !write_file(at, e.content, 0444))
            ok = false, why = err("write", at);
        else if (e.kind == SysfsEntry::Kind::kSymlink && ::symlink(e.content.c_str(), at.c_str()))
            ok = false, why = err("symlink", at);
        else if (e.kind == SysfsEntry::Kind::kCharDevice && !char_device(at))
            ok = false, why = err("device", at);
    }
    if (ok && ::mount(stage.c_str(), target.c_str(), nullptr, MS_MOVE, nullptr) != 0) {
        ok = false;
        why = err("move the view onto", target);
    }
    if (!ok) ::umount2(stage.c_str(), MNT_DETACH);
    return ok;
}

}  // namespace

bool enter_private_view(const std::vector<SysfsEntry> &entries, std::string &why) {
    return enter_namespaces(why) && overlay("/dev", entries, why) &&
           overlay("/sys/class", entries, why);
}

bool create_host_device_files(const std::vector<SysfsEntry> &entries, std::string &why) {
    const dev_t null_dev = makedev(1, 3);
    for (const SysfsEntry &e : entries) {
        if (e.kind != SysfsEntry::Kind::kCharDevice) continue;
        if (!make_parents(e.path)) return why = err("mkdir", e.path), false;
        if (::mknod(e.path.c_str(), S_IFCHR | 0666, null_dev) != 0 && errno != EEXIST)
            return why = err("mknod", e.path), false;
    }
    return true;
}

}  // namespace softrdma::cli
