// Thin wrappers over libc calls that Swift cannot import directly: variadic functions
// (ioctl, syslog, open with a mode) and GNU-only declarations (renameat2).
#ifndef DOCFS_CSYSTEMSHIMS_H
#define DOCFS_CSYSTEMSHIMS_H

#include <sys/types.h>
#include <spawn.h>
#include <sys/xattr.h>

/// renameat2(2); flags are RENAME_NOREPLACE (1) and RENAME_EXCHANGE (2).
int docfs_renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags);

/// ioctl(FICLONE): share the extents of `srcfd` into `destfd` where the filesystem can (btrfs, xfs).
int docfs_clone_file(int destfd, int srcfd);

/// copy_file_range(2), declared by glibc only under _GNU_SOURCE.
ssize_t docfs_copy_file_range(int infd, off_t *inoffset, int outfd, off_t *outoffset, size_t length);

/// getdents64(2) (glibc declares it only under _GNU_SOURCE): the directory's next entries, as
/// linux_dirent64 records (inode u64, offset s64, record length u16, type u8, NUL-ended name), into
/// `buffer`; 0 at the end.
ssize_t docfs_getdents64(int fd, void *buffer, size_t size);

/// Extended attributes of the item `name` in the folder open as `dirfd` (AT_FDCWD: `name` is a whole
/// path), never following a link at `name`; as lgetxattr(2), lsetxattr, llistxattr and lremovexattr.
/// The *xattrat system calls (Linux 6.13) name the item by descriptor and name; where they do not
/// work (an older kernel, a sandbox that refuses them: asked once) the item is named through
/// /proc/self/fd/N/name, a walk of procfs on every call.
ssize_t docfs_getxattrat(int dirfd, const char *name, const char *attribute, void *value, size_t size);
int docfs_setxattrat(int dirfd, const char *name, const char *attribute, const void *value, size_t size, int flags);
ssize_t docfs_listxattrat(int dirfd, const char *name, char *list, size_t size);
int docfs_removexattrat(int dirfd, const char *name, const char *attribute);
/// Makes the four calls above name items through /proc/self/fd (as on a kernel before 6.13), or
/// ask again whether the *xattrat calls work: for tests of both ways.
void docfs_xattrat_set_missing(int missing);

/// fallocate(2), declared by glibc only under _GNU_SOURCE.
int docfs_fallocate(int fd, int mode, off_t offset, off_t length);

/// Starts `path` with `argv` in a new session (setsid), detached from the terminal: standard input
/// and output on /dev/null, `keep_fd` as its standard error and as descriptor 3. Returns the pid, or
/// -1 with errno set.
pid_t docfs_spawn_detached(const char *path, char *const argv[], int keep_fd);

/// Starts a validator: `path` with `argv` and `envp`, its standard input, output and error on the
/// given descriptors, in a session of its own (no controlling terminal; its process group is its
/// pid, so a time limit kills everything it started),
/// in "/", with default signal dispositions (the daemon ignores SIGPIPE) and no other descriptor
/// of the daemon's open. Returns the pid, or -1 with errno set.
pid_t docfs_spawn_validator(const char *path, char *const argv[], char *const envp[], int stdin_fd, int stdout_fd, int stderr_fd);

/// `docfs_spawn_validator` as user `uid` and group `gid` with no supplementary groups (the daemon
/// must be root): forked, the credentials dropped, then exec'd. Returns the pid, or -1 with errno set
/// (also when dropping the credentials or the exec failed).
pid_t docfs_spawn_validator_as(const char *path, char *const argv[], char *const envp[], int stdin_fd, int stdout_fd, int stderr_fd,
                               uid_t uid, gid_t gid);

/// The credentials of the request the calling thread serves (a thread-local the FUSE layer sets
/// as each request starts, and a commit sets to its writer's): whose rights a validator run for it
/// gets. `docfs_requester` returns 0 and leaves the outputs alone when none is set.
void docfs_set_requester(int known, uid_t uid, gid_t gid);
int docfs_requester(uid_t *uid, gid_t *gid);

/// 1 when `descriptor` is a Unix stream socket whose peer this process made (an end of a
/// socketpair(2) of its own), else 0.
int docfs_is_socket_paired_with_self(int descriptor);

/// Keeps the file open on `descriptor` until the process has given up every descriptor it holds
/// (at exit, or a crash): the file travels, with `descriptor` closed, in an unread message on a
/// close-on-exec socket pair the process keeps one end of, and is let go only when that end is,
/// after the files its descriptors named. Returns that end (to be left open), or -1 with errno and
/// `descriptor` untouched.
int docfs_release_after_every_descriptor(int descriptor);

/// pidfd_open(2): a descriptor that polls readable when process `pid` exits; -1 with errno where the
/// kernel lacks it.
int docfs_pidfd_open(pid_t pid);

/// malloc_trim(3): gives the heap's free pages back to the system (glibc keeps them otherwise).
int docfs_malloc_trim(void);

/// pipe2(O_CLOEXEC): both ends close-on-exec from the start, so no concurrently spawned child
/// inherits them.
int docfs_pipe_cloexec(int fds[2]);

/// posix_spawn_file_actions_addclosefrom_np(3) (a GNU extension Swift's Glibc module omits): the
/// spawned program gets no descriptor from `from` up.
int docfs_spawn_actions_close_from(posix_spawn_file_actions_t *actions, int from);

/// openat(2) with a creation mode (the libc function is variadic).
int docfs_openat(int dirfd, const char *path, int flags, mode_t mode);

/// openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS: opens `path`
/// (relative) beneath `dirfd` without following any symbolic link on the way or at the end, and
/// without leaving `dirfd` through `..`. Where the kernel lacks openat2 (before 5.6, or a sandbox
/// that refuses it), walks the path one name at a time with O_NOFOLLOW. O_CLOEXEC is added.
/// Returns the descriptor, or -1 with errno (ELOOP for a link on the way, EXDEV for an escape).
int docfs_open_beneath(int dirfd, const char *path, int flags);

/* Folders resolved beneath a confined tree (named by its serial number), kept per thread and
   handed out only while it serves a request (begin/end nest), within a millisecond of their
   opening; a folder renamed or removed on any thread (clear) makes every thread resolve them
   again, and one moved within the private areas only (clear_private) those of the trees that
   follow them (follows_private). find returns a descriptor the cache keeps (or -1); add, given
   the generation read before the folder was opened, returns 1 when the cache took the
   descriptor, 0 when the caller still owns it. Either way a descriptor the cache holds is in use
   until released. */
void docfs_folder_cache_begin(void);
void docfs_folder_cache_end(void);
void docfs_folder_cache_clear(void);
void docfs_folder_cache_clear_private(void);
unsigned long docfs_folder_cache_generation(int follows_private);
int docfs_folder_cache_find(unsigned long tree, const char *path, size_t length);
int docfs_folder_cache_add(unsigned long tree, const char *path, size_t length, int fd, unsigned long generation, int follows_private);
void docfs_folder_cache_release(int fd);

/// fanotify_init(2) for watching a store: FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_REPORT_DFID_NAME, so
/// every event names its directory (by file handle) and entry. Returns -1 with errno where the
/// kernel or the caller's privileges do not allow it.
int docfs_fanotify_open(void);

/// fanotify_mark(2): watches the directory open as `directory_fd` (an O_PATH descriptor will do)
/// for changes to its entries and to its children (create, delete, move, modify, close after
/// write, attributes).
int docfs_fanotify_watch_directory(int fanotify_fd, int directory_fd);

/// One change fanotify reported: what happened, who did it, the directory (by file handle) and the
/// entry's name. `mask` has FAN_Q_OVERFLOW set when events were lost.
struct docfs_watch_event {
    unsigned long long mask;
    int pid;
    unsigned int handle_length;
    unsigned char handle[128];
    char name[256];
};

/// The event mask bit for lost events (FAN_Q_OVERFLOW).
static const unsigned long long docfs_fanotify_overflow = 0x00004000ULL;

/// Reads the events pending on `fanotify_fd` into `events` (blocking until there is one).
/// Returns how many, or -1 with errno.
int docfs_fanotify_read(int fanotify_fd, struct docfs_watch_event *events, int capacity);

/// The file handle of the item open as `fd` (name_to_handle_at(2) with AT_EMPTY_PATH), written to
/// `handle` (`*length` bytes at most; set to the bytes used). Returns 0, or -1 with errno.
int docfs_file_handle(int fd, unsigned char *handle, unsigned int *length);

/// For a helper process that parses untrusted bytes: killed with SIGKILL when the process that
/// started it dies (PR_SET_PDEATHSIG), and unable to gain privileges through exec (PR_SET_NO_NEW_PRIVS).
/// Returns 0, or -1 with errno.
int docfs_restrict_helper(void);

/// The lock-order check of debug builds (SystemSupport/LockOrder.swift) keeps, per thread, the
/// levels and keys of the locks held, and where each was taken (`site`, a static string, and `line`).
/// `docfs_lock_order_acquire` records one more and returns 1 when a held lock forbids it (a later
/// level, the same level unless `nests_by_key` and a smaller held key), setting the `held_` outputs
/// to that lock's; else 0.
int docfs_lock_order_acquire(unsigned int level, unsigned long long key, int nests_by_key, const char *site, unsigned int line,
                             unsigned int *held_level, unsigned long long *held_key, const char **held_site, unsigned int *held_line);
/// Forgets the held lock of that level and key.
void docfs_lock_order_release(unsigned int level, unsigned long long key);
/// How many locks the calling thread holds.
int docfs_lock_order_held_count(void);
/// While set, acquisitions are recorded but not judged (a violation being reported logs).
void docfs_lock_order_suspend(int suspend);

/// syslog(3) with a fixed "%s" format, so a message is never read as a format string.
void docfs_syslog(int priority, const char *message);

/// The f_type of statfs(2) for the file system holding `path` (its magic number), or -1 with errno.
long docfs_file_system_type(const char *path);

#endif
