#define _GNU_SOURCE
#include "CSystemShims.h"
#include <fcntl.h>
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
