// The libfuse3 low-level API for Swift, plus static inline helpers for what Swift cannot import:
// function-like macros (FUSE_ARGS_INIT, fuse_session_loop_mt's versioned names), bit-field members of
// fuse_file_info, and buffer vectors for zero-copy replies.
#ifndef DOCFS_CFUSE_SHIM_H
#define DOCFS_CFUSE_SHIM_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <stdlib.h>
#include <string.h>

/// Runs the multi-threaded loop with up to `max_threads` workers; returns what the loop returns
/// (0 after an unmount, the signal number after SIGINT/SIGTERM/SIGHUP).
static inline int docfs_session_loop_mt(struct fuse_session *se, unsigned int max_threads) {
    struct fuse_loop_config *config = fuse_loop_cfg_create();
    if (config == NULL) return -1;
    fuse_loop_cfg_set_max_threads(config, max_threads);
    fuse_loop_cfg_set_idle_threads(config, max_threads);
    int result = fuse_session_loop_mt(se, config);
    fuse_loop_cfg_destroy(config);
    return result;
}

/// Replies to a read with `size` bytes of `fd` at `offset`, spliced by the kernel where it can.
static inline int docfs_reply_fd(fuse_req_t req, int fd, off_t offset, size_t size) {
    struct fuse_bufvec buffer = FUSE_BUFVEC_INIT(size);
    buffer.buf[0].flags = (enum fuse_buf_flags)(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
    buffer.buf[0].fd = fd;
    buffer.buf[0].pos = offset;
    return fuse_reply_data(req, &buffer, FUSE_BUF_SPLICE_MOVE);
}

static inline int docfs_fi_flags(const struct fuse_file_info *fi) { return fi->flags; }
static inline uint64_t docfs_fi_fh(const struct fuse_file_info *fi) { return fi->fh; }
static inline uint64_t docfs_fi_lock_owner(const struct fuse_file_info *fi) { return fi->lock_owner; }
static inline int docfs_fi_writepage(const struct fuse_file_info *fi) { return fi->writepage; }

/// Fills the reply fields of an open: the handle and the kernel cache hints.
static inline void docfs_fi_set_open_reply(struct fuse_file_info *fi, uint64_t fh, int keep_cache,
                                           int direct_io, int cache_readdir, int noflush) {
    fi->fh = fh;
    fi->keep_cache = keep_cache ? 1 : 0;
    fi->direct_io = direct_io ? 1 : 0;
    fi->cache_readdir = cache_readdir ? 1 : 0;
    fi->noflush = noflush ? 1 : 0;
}

/// A fuse_args over a copy of argv that libfuse may modify and free.
static inline struct fuse_args docfs_make_args(int argc, char **argv) {
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    return args;
}

#endif
