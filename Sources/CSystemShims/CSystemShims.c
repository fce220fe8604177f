#define _GNU_SOURCE
#include "CSystemShims.h"
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <pthread.h>
#include <linux/close_range.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/fanotify.h>
#include <linux/openat2.h>
#include <limits.h>
#include <linux/limits.h>
#include <stdint.h>
#include <sys/xattr.h>
#include <sys/socket.h>
#include <sys/vfs.h>

int docfs_renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags) {
    return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, flags);
}

int docfs_clone_file(int destfd, int srcfd) {
    return ioctl(destfd, FICLONE, srcfd);
}

int docfs_openat(int dirfd, const char *path, int flags, mode_t mode) {
    return openat(dirfd, path, flags, mode);
}

int docfs_open_beneath(int dirfd, const char *path, int flags) {
    struct open_how how = {
        .flags = (unsigned long long)(flags | O_CLOEXEC),
        .mode = 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM)) return fd;
    // No openat2: the same walk by hand, one name at a time, never following a link.
    char name[256];
    int current = dirfd;
    const char *cursor = path;
    for (;;) {
        const char *slash = strchr(cursor, '/');
        size_t length = slash ? (size_t)(slash - cursor) : strlen(cursor);
        if (length == 0 || length > 255 || (length == 1 && cursor[0] == '.') || (length == 2 && cursor[0] == '.' && cursor[1] == '.')) {
            if (current != dirfd) close(current);
            errno = length > 255 ? ENAMETOOLONG : EXDEV;
            return -1;
        }
        memcpy(name, cursor, length);
        name[length] = 0;
        int next = openat(current, name, slash ? (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : (flags | O_NOFOLLOW | O_CLOEXEC));
        int saved = errno;
        if (current != dirfd) close(current);
        if (next < 0) {
            errno = saved;
            return -1;
        }
        if (!slash) return next;
        current = next;
        cursor = slash + 1;
    }
}

// The *xattrat calls' numbers and argument block, which Debian 12's kernel headers predate. The
// numbers are the common table's (x86_64 and aarch64 alike); elsewhere, unless the headers know
// them, the procfs path is used.
#if defined(__NR_getxattrat)
enum { xattrat_set = __NR_setxattrat, xattrat_get = __NR_getxattrat, xattrat_list = __NR_listxattrat, xattrat_remove = __NR_removexattrat };
#define XATTRAT_NUMBERS_KNOWN 1
#elif defined(__x86_64__) || defined(__aarch64__)
enum { xattrat_set = 463, xattrat_get = 464, xattrat_list = 465, xattrat_remove = 466 };
#define XATTRAT_NUMBERS_KNOWN 1
#else
enum { xattrat_set = -1, xattrat_get = -1, xattrat_list = -1, xattrat_remove = -1 };
#define XATTRAT_NUMBERS_KNOWN 0
#endif
struct xattrat_arguments { unsigned long long value; unsigned int size; unsigned int flags; };
enum { xattrat_unknown = 0, xattrat_usable = 1, xattrat_missing = 2 };
static int xattrat_state;

// Whether the *xattrat calls work here. Asked once, of "/": a kernel without them answers ENOSYS,
// but a sandbox (seccomp) may answer EPERM or anything else for a call it does not know, so only
// the answers of a working call (a value, no such attribute, none supported) count as working.
static int xattrat_usable_here(void) {
    int state = __atomic_load_n(&xattrat_state, __ATOMIC_RELAXED);
    if (state != xattrat_unknown) return state == xattrat_usable;
    int usable = 0;
    if (XATTRAT_NUMBERS_KNOWN) {
        int saved = errno;
        struct xattrat_arguments arguments = { 0, 0, 0 };
        long result = syscall(xattrat_get, AT_FDCWD, "/", AT_SYMLINK_NOFOLLOW, "user.docfs.probe", &arguments, sizeof arguments);
        usable = result >= 0 || errno == ENODATA || errno == EOPNOTSUPP;
        errno = saved;
    }
    __atomic_store_n(&xattrat_state, usable ? xattrat_usable : xattrat_missing, __ATOMIC_RELAXED);
    return usable;
}

void docfs_xattrat_set_missing(int missing) {
    __atomic_store_n(&xattrat_state, missing ? xattrat_missing : xattrat_unknown, __ATOMIC_RELAXED);
}

// The *at calls name the folder itself by an empty name only with AT_EMPTY_PATH ("N/" did).
static unsigned int xattrat_flags(const char *name) {
    return AT_SYMLINK_NOFOLLOW | (name[0] == 0 ? AT_EMPTY_PATH : 0);
}

// `name` in `dirfd` as one path for the l*xattr calls: /proc/self/fd/N/name, in `buffer`.
static const char *xattr_path(int dirfd, const char *name, char *buffer, size_t size) {
    if (dirfd == AT_FDCWD) return name;
    int length = snprintf(buffer, size, "/proc/self/fd/%d/%s", dirfd, name);
    if (length < 0 || (size_t)length >= size) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    return buffer;
}

ssize_t docfs_getxattrat(int dirfd, const char *name, const char *attribute, void *value, size_t size) {
    if (xattrat_usable_here()) {
        // No value is larger than the kernel's limit: a larger buffer is read as one of that size.
        if (size > XATTR_SIZE_MAX) size = XATTR_SIZE_MAX;
        struct xattrat_arguments arguments = { .value = (unsigned long long)(uintptr_t)value, .size = (unsigned int)size, .flags = 0 };
        return (ssize_t)syscall(xattrat_get, dirfd, name, xattrat_flags(name), attribute, &arguments, sizeof arguments);
    }
    char buffer[PATH_MAX + 32];
    const char *path = xattr_path(dirfd, name, buffer, sizeof buffer);
    return path ? lgetxattr(path, attribute, value, size) : -1;
}

int docfs_setxattrat(int dirfd, const char *name, const char *attribute, const void *value, size_t size, int flags) {
    if (xattrat_usable_here()) {
        if (size > XATTR_SIZE_MAX) {
            errno = E2BIG;
            return -1;
        }
        struct xattrat_arguments arguments = { .value = (unsigned long long)(uintptr_t)value, .size = (unsigned int)size, .flags = (unsigned int)flags };
        return (int)syscall(xattrat_set, dirfd, name, xattrat_flags(name), attribute, &arguments, sizeof arguments);
    }
    char buffer[PATH_MAX + 32];
    const char *path = xattr_path(dirfd, name, buffer, sizeof buffer);
    return path ? lsetxattr(path, attribute, value, size, flags) : -1;
}

ssize_t docfs_listxattrat(int dirfd, const char *name, char *list, size_t size) {
    if (xattrat_usable_here()) return (ssize_t)syscall(xattrat_list, dirfd, name, xattrat_flags(name), list, size);
    char buffer[PATH_MAX + 32];
    const char *path = xattr_path(dirfd, name, buffer, sizeof buffer);
    return path ? llistxattr(path, list, size) : -1;
}

int docfs_removexattrat(int dirfd, const char *name, const char *attribute) {
    if (xattrat_usable_here()) return (int)syscall(xattrat_remove, dirfd, name, xattrat_flags(name), attribute);
    char buffer[PATH_MAX + 32];
    const char *path = xattr_path(dirfd, name, buffer, sizeof buffer);
    return path ? lremovexattr(path, attribute) : -1;
}

void docfs_syslog(int priority, const char *message) {
    syslog(priority, "%s", message);
}

ssize_t docfs_copy_file_range(int infd, off_t *inoffset, int outfd, off_t *outoffset, size_t length) {
    return copy_file_range(infd, inoffset, outfd, outoffset, length, 0);
}

ssize_t docfs_getdents64(int fd, void *buffer, size_t size) {
    return syscall(SYS_getdents64, fd, buffer, size);
}

int docfs_fallocate(int fd, int mode, off_t offset, off_t length) {
    return fallocate(fd, mode, offset, length);
}

extern char **environ;

/// File actions and attributes for one posix_spawn: both made, or neither (-1).
static int spawn_begin(posix_spawn_file_actions_t *actions, posix_spawnattr_t *attributes) {
    if (posix_spawn_file_actions_init(actions) != 0) return -1;
    if (posix_spawnattr_init(attributes) != 0) {
        posix_spawn_file_actions_destroy(actions);
        return -1;
    }
    return 0;
}

/// Spawns with what `spawn_begin` made and frees it. Returns the pid, or -1 with errno set.
static pid_t spawn_finish(const char *path, char *const argv[], char *const envp[],
                          posix_spawn_file_actions_t *actions, posix_spawnattr_t *attributes) {
    pid_t pid = -1;
    int result = posix_spawn(&pid, path, actions, attributes, argv, envp);
    posix_spawn_file_actions_destroy(actions);
    posix_spawnattr_destroy(attributes);
    if (result != 0) {
        errno = result;
        return -1;
    }
    return pid;
}

pid_t docfs_spawn_detached(const char *path, char *const argv[], int keep_fd) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    if (spawn_begin(&actions, &attributes) != 0) return -1;
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, keep_fd, 2);
    posix_spawn_file_actions_adddup2(&actions, keep_fd, 3);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID);
    return spawn_finish(path, argv, environ, &actions, &attributes);
}

pid_t docfs_spawn_validator(const char *path, char *const argv[], char *const envp[], int stdin_fd, int stdout_fd, int stderr_fd) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    if (spawn_begin(&actions, &attributes) != 0) return -1;
    posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0);
    posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    posix_spawn_file_actions_addchdir_np(&actions, "/");
    sigset_t defaults, empty;
    sigfillset(&defaults);
    sigemptyset(&empty);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setsigmask(&attributes, &empty);
    // A session of its own (so a process group of its own too, whose id is its pid): no
    // controlling terminal to inject input into, and a time limit kills everything it started.
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    return spawn_finish(path, argv, envp, &actions, &attributes);
}

pid_t docfs_spawn_validator_as(const char *path, char *const argv[], char *const envp[], int stdin_fd, int stdout_fd, int stderr_fd,
                               uid_t uid, gid_t gid) {
    // The child reports a failure before its exec (its errno) on this pipe; a successful exec
    // closes it (close-on-exec), so the parent reads end-of-file.
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return -1;
    // No signal handler of the daemon's may run in the child between fork and exec.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pid_t pid = fork();
    if (pid == 0) {
        // The child of a multithreaded process: async-signal-safe calls and raw system calls only
        // (glibc's setuid would try to reach threads that do not exist here).
        int error = 0;
        struct sigaction defaults;
        memset(&defaults, 0, sizeof defaults);
        defaults.sa_handler = SIG_DFL;
        for (int signal = 1; signal < NSIG; signal++) sigaction(signal, &defaults, NULL);
        if (setsid() < 0 || dup2(stdin_fd, 0) < 0 || dup2(stdout_fd, 1) < 0 || dup2(stderr_fd, 2) < 0 || chdir("/") != 0
            || syscall(SYS_setgroups, 0, NULL) != 0 || syscall(SYS_setgid, gid) != 0 || syscall(SYS_setuid, uid) != 0
            || syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
        {
            error = errno;
        } else {
            sigset_t empty;
            sigemptyset(&empty);
            sigprocmask(SIG_SETMASK, &empty, NULL);
            execve(path, argv, envp);
            error = errno;
        }
        ssize_t ignored = write(report[1], &error, sizeof error);
        (void)ignored;
        _exit(127);
    }
    int forkError = errno;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    close(report[1]);
    if (pid < 0) {
        close(report[0]);
        errno = forkError;
        return -1;
    }
    int childError = 0;
    ssize_t count;
    do { count = read(report[0], &childError, sizeof childError); } while (count < 0 && errno == EINTR);
    close(report[0]);
    if (count == (ssize_t)sizeof childError) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        errno = childError;
        return -1;
    }
    return pid;
}

static __thread int requester_known;
static __thread uid_t requester_uid;
static __thread gid_t requester_gid;

void docfs_set_requester(int known, uid_t uid, gid_t gid) {
    requester_known = known;
    requester_uid = uid;
    requester_gid = gid;
}

int docfs_requester(uid_t *uid, gid_t *gid) {
    if (!requester_known) return 0;
    *uid = requester_uid;
    *gid = requester_gid;
    return 1;
}

/* The folders a thread resolved beneath a confined tree (see ConfinedTree.resolve): a save or an
   rm names the document's folder six to eight times, in three to seven requests, and each time it
   was opened again with openat2 and closed. Kept per thread, so nothing is shared. A descriptor
   handed out is in use until released: a clear (a rename, a folder removed) only stops handing it
   out, and it is closed once released, so a call that nests another never loses its folder.
   A folder is handed out only within a millisecond of being opened beneath its tree, in the
   request that opened it or the thread's next ones: a folder moved beside the mount while a
   request waits (a validator can take seconds) is resolved again, and found gone, as each call
   found it before, instead of being written through wherever it went. A folder renamed or removed
   on any thread advances a process-wide generation: every thread's folders from an earlier one
   are resolved again (a package moved into the versions archive by one request is not written
   into by another). A folder moved within a store's private area (a package's version renamed into
   the archive at every save) advances only the private generation: it changes what no path of
   another tree leads to, so only the folders of trees that follow it (the private area's, and
   those of trees opened on a descriptor, which may be inside it) are resolved again. Slots are
   keyed by the tree's serial number, never reused, so a tree opened or closed clears nothing. A
   thread's expired folders close as its next request ends, and all of them as it exits. */
#define DOCFS_FOLDER_SLOTS 4
#define DOCFS_FOLDER_PATH 256
#define DOCFS_FOLDER_LIFETIME_NS 1000000LL
struct docfs_folder_slot {
    unsigned long tree; int fd; int users; int doomed; int follows_private; long long opened; unsigned long generation;
    size_t length; char path[DOCFS_FOLDER_PATH];
};
/* Advanced by every folder moved or removed. */
static unsigned long folder_generation_all;
/* Advanced by every folder moved or removed anywhere but within the private areas only. */
static unsigned long folder_generation_public;

static long long folder_cache_now(void) {
    struct timespec now;
    /* The boot clock, which counts a suspend: a folder opened before one is not fresh after it. */
    clock_gettime(CLOCK_BOOTTIME, &now);
    return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}
static __thread int folder_cache_depth;
static __thread struct docfs_folder_slot folder_cache[DOCFS_FOLDER_SLOTS];
static __thread int folder_cache_used;

static void folder_cache_drop(int index) {
    close(folder_cache[index].fd);
    folder_cache[index] = folder_cache[--folder_cache_used];
}

/* Drops this thread's folders, or only those following the private areas (those in use once
   released). */
static void folder_cache_forget(int only_following_private) {
    for (int index = folder_cache_used - 1; index >= 0; index--) {
        if (only_following_private && !folder_cache[index].follows_private) continue;
        if (folder_cache[index].users > 0) folder_cache[index].doomed = 1;
        else folder_cache_drop(index);
    }
}

/* Drops this thread's folders past their millisecond (those in use once released). */
static void folder_cache_expire(void) {
    long long now = folder_cache_now();
    for (int index = folder_cache_used - 1; index >= 0; index--) {
        if (now - folder_cache[index].opened <= DOCFS_FOLDER_LIFETIME_NS) continue;
        if (folder_cache[index].users > 0) folder_cache[index].doomed = 1;
        else folder_cache_drop(index);
    }
}

void docfs_folder_cache_clear(void) {
    __atomic_add_fetch(&folder_generation_public, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&folder_generation_all, 1, __ATOMIC_SEQ_CST);
    folder_cache_forget(0);
}

void docfs_folder_cache_clear_private(void) {
    __atomic_add_fetch(&folder_generation_all, 1, __ATOMIC_SEQ_CST);
    folder_cache_forget(1);
}

unsigned long docfs_folder_cache_generation(int follows_private) {
    return __atomic_load_n(follows_private ? &folder_generation_all : &folder_generation_public, __ATOMIC_SEQ_CST);
}

void docfs_folder_cache_begin(void) { folder_cache_depth++; }

void docfs_folder_cache_end(void) {
    if (folder_cache_depth > 0 && --folder_cache_depth == 0) folder_cache_expire();
}

static pthread_key_t folder_cache_exit_key;
static pthread_once_t folder_cache_exit_once = PTHREAD_ONCE_INIT;

/* A thread's folders outlive its requests: closed as it exits (a mount's workers end with it). */
static void folder_cache_thread_exit(void *unused) {
    (void)unused;
    folder_cache_forget(0);
}

static void folder_cache_make_exit_key(void) { pthread_key_create(&folder_cache_exit_key, folder_cache_thread_exit); }

int docfs_folder_cache_find(unsigned long tree, const char *path, size_t length) {
    if (folder_cache_depth == 0) return -1;
    long long now = folder_cache_now();
    for (int index = 0; index < folder_cache_used; index++) {
        struct docfs_folder_slot *slot = &folder_cache[index];
        if (slot->doomed || slot->tree != tree || slot->length != length || memcmp(slot->path, path, length) != 0) continue;
        if (now - slot->opened > DOCFS_FOLDER_LIFETIME_NS || slot->generation != docfs_folder_cache_generation(slot->follows_private)) {
            if (slot->users > 0) slot->doomed = 1;
            else folder_cache_drop(index);
            return -1;
        }
        slot->users++;
        return slot->fd;
    }
    return -1;
}

int docfs_folder_cache_add(unsigned long tree, const char *path, size_t length, int fd, unsigned long generation, int follows_private) {
    if (folder_cache_depth == 0 || length >= DOCFS_FOLDER_PATH) return 0;
    if (folder_cache_used == DOCFS_FOLDER_SLOTS) {
        int unused = -1;
        for (int index = 0; index < folder_cache_used && unused < 0; index++) {
            if (folder_cache[index].users == 0) unused = index;
        }
        if (unused < 0) return 0;
        folder_cache_drop(unused);
    }
    if (folder_cache_used == 0) {
        pthread_once(&folder_cache_exit_once, folder_cache_make_exit_key);
        pthread_setspecific(folder_cache_exit_key, (void *)1);
    }
    struct docfs_folder_slot *slot = &folder_cache[folder_cache_used++];
    slot->tree = tree;
    slot->fd = fd;
    slot->users = 1;
    slot->doomed = 0;
    slot->opened = folder_cache_now();
    slot->generation = generation;
    slot->follows_private = follows_private;
    slot->length = length;
    memcpy(slot->path, path, length);
    return 1;
}

void docfs_folder_cache_release(int fd) {
    for (int index = 0; index < folder_cache_used; index++) {
        if (folder_cache[index].fd != fd) continue;
        if (--folder_cache[index].users == 0 && folder_cache[index].doomed) folder_cache_drop(index);
        return;
    }
}

int docfs_restrict_helper(void) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return -1;
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

int docfs_pidfd_open(pid_t pid) {
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

int docfs_malloc_trim(void) {
    return malloc_trim(0);
}

int docfs_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

int docfs_is_socket_paired_with_self(int descriptor) {
    int domain = 0, type = 0;
    socklen_t length = sizeof domain;
    if (getsockopt(descriptor, SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0 || domain != AF_UNIX) return 0;
    length = sizeof type;
    if (getsockopt(descriptor, SOL_SOCKET, SO_TYPE, &type, &length) != 0 || type != SOCK_STREAM) return 0;
    struct ucred peer;
    length = sizeof peer;
    return getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &peer, &length) == 0 && peer.pid == getpid();
}

int docfs_release_after_every_descriptor(int descriptor) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) != 0) return -1;
    char byte = 0;
    struct iovec payload = { .iov_base = &byte, .iov_len = 1 };
    union { struct cmsghdr header; char space[CMSG_SPACE(sizeof(int))]; } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = {
        .msg_iov = &payload, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof control.space,
    };
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &descriptor, sizeof(int));
    ssize_t sent = sendmsg(pair[0], &message, MSG_NOSIGNAL);
    int failure = errno;
    close(pair[0]);
    if (sent != 1) {
        close(pair[1]);
        errno = failure;
        return -1;
    }
    close(descriptor);
    return pair[1];
}

int docfs_spawn_actions_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

/// The changes a watched directory reports: to its entries, and to the files in it.
static const unsigned long long docfs_watched_events =
    FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO | FAN_ATTRIB | FAN_MODIFY | FAN_CLOSE_WRITE
    | FAN_DELETE_SELF | FAN_MOVE_SELF | FAN_EVENT_ON_CHILD | FAN_ONDIR;

int docfs_fanotify_open(void) {
    return fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_REPORT_DFID_NAME, O_RDONLY | O_CLOEXEC);
}

int docfs_fanotify_watch_directory(int fanotify_fd, int directory_fd) {
    return fanotify_mark(fanotify_fd, FAN_MARK_ADD | FAN_MARK_ONLYDIR, docfs_watched_events, directory_fd, NULL);
}

int docfs_file_handle(int fd, unsigned char *handle, unsigned int *length) {
    union {
        struct file_handle header;
        unsigned char bytes[sizeof(struct file_handle) + 128];
    } buffer;
    buffer.header.handle_bytes = 128;
    int mount_id;
    if (name_to_handle_at(fd, "", &buffer.header, &mount_id, AT_EMPTY_PATH) != 0) return -1;
    unsigned int used = sizeof(struct file_handle) + buffer.header.handle_bytes;
    if (used > *length) {
        errno = EOVERFLOW;
        return -1;
    }
    memcpy(handle, buffer.bytes, used);
    *length = used;
    return 0;
}

int docfs_fanotify_read(int fanotify_fd, struct docfs_watch_event *events, int capacity) {
    static __thread char buffer[65536] __attribute__((aligned(8)));
    ssize_t length = read(fanotify_fd, buffer, sizeof buffer);
    if (length < 0) return -1;
    int count = 0;
    struct fanotify_event_metadata *metadata = (struct fanotify_event_metadata *)buffer;
    while (FAN_EVENT_OK(metadata, length) && count < capacity) {
        struct docfs_watch_event *event = &events[count];
        memset(event, 0, sizeof *event);
        event->mask = metadata->mask;
        event->pid = metadata->pid;
        char *info = (char *)metadata + metadata->metadata_len;
        char *end = (char *)metadata + metadata->event_len;
        while (info + sizeof(struct fanotify_event_info_header) <= end) {
            struct fanotify_event_info_header *header = (struct fanotify_event_info_header *)info;
            if (header->len == 0) break;
            if (header->info_type == FAN_EVENT_INFO_TYPE_DFID_NAME || header->info_type == FAN_EVENT_INFO_TYPE_DFID) {
                struct fanotify_event_info_fid *fid = (struct fanotify_event_info_fid *)info;
                struct file_handle *handle = (struct file_handle *)fid->handle;
                unsigned int used = sizeof(struct file_handle) + handle->handle_bytes;
                if (used <= sizeof event->handle) {
                    memcpy(event->handle, handle, used);
                    event->handle_length = used;
                }
                if (header->info_type == FAN_EVENT_INFO_TYPE_DFID_NAME) {
                    const char *name = (const char *)handle->f_handle + handle->handle_bytes;
                    strncpy(event->name, name, sizeof event->name - 1);
                }
            }
            info += header->len;
        }
        if (metadata->fd >= 0) close(metadata->fd);
        count++;
        metadata = FAN_EVENT_NEXT(metadata, length);
    }
    return count;
}

long docfs_file_system_type(const char *path) {
    struct statfs system;
    return statfs(path, &system) == 0 ? (long)system.f_type : -1;
}
