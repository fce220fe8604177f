#define _GNU_SOURCE
#include "CSystemShims.h"
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <unistd.h>
#include <linux/fs.h>

int docfs_renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags) {
    return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, flags);
}

int docfs_clone_file(int destfd, int srcfd) {
    return ioctl(destfd, FICLONE, srcfd);
}

int docfs_openat(int dirfd, const char *path, int flags, mode_t mode) {
    return openat(dirfd, path, flags, mode);
}

void docfs_syslog(int priority, const char *message) {
    syslog(priority, "%s", message);
}

ssize_t docfs_copy_file_range(int infd, off_t *inoffset, int outfd, off_t *outoffset, size_t length) {
    return copy_file_range(infd, inoffset, outfd, outoffset, length, 0);
}

int docfs_fallocate(int fd, int mode, off_t offset, off_t length) {
    return fallocate(fd, mode, offset, length);
}

extern char **environ;

pid_t docfs_spawn_detached(const char *path, char *const argv[], int keep_fd) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    pid_t pid = -1;
    if (posix_spawn_file_actions_init(&actions) != 0) return -1;
    if (posix_spawnattr_init(&attributes) != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return -1;
    }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, keep_fd, 2);
    posix_spawn_file_actions_adddup2(&actions, keep_fd, 3);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID);
    int result = posix_spawn(&pid, path, &actions, &attributes, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (result != 0) {
        errno = result;
        return -1;
    }
    return pid;
}

int docfs_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}
