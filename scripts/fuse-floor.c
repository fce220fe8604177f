// The FUSE floor: a low-level FUSE file system that stores nothing (names and sizes in memory, no
// content), mounted with DocFS's options (default_permissions, day-long caches) and served by the
// same multi-threaded loop. What it costs per create, write, close and unlink is what the kernel
// round trips alone cost on this machine: no FUSE file system can be faster here. scripts/bench.py
// builds it and reports it beside DocFS for the small-file cases.
//
// Build: cc -O2 -o fuse-floor fuse-floor.c $(pkg-config --cflags --libs fuse3)
// Run:   fuse-floor MOUNTPOINT   (stays in the foreground; fusermount3 -u MOUNTPOINT ends it)
#define _GNU_SOURCE  // RENAME_NOREPLACE and RENAME_EXCHANGE (stdio.h)
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { buckets = 1 << 20 };
static const double day = 86400;

struct node {
    fuse_ino_t ino, parent;
    mode_t mode;
    off_t size;
    char *name;
    struct node *next_in_bucket;
};

static struct node *table[buckets];
static struct node **by_ino;
static size_t ino_capacity, next_ino = 2;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct node root = {FUSE_ROOT_ID, FUSE_ROOT_ID, S_IFDIR | 0755, 0, (char *)"", NULL};

static size_t bucket_of(fuse_ino_t parent, const char *name) {
    size_t hash = parent * 1099511628211u;
    for (const char *c = name; *c; c++) hash = (hash ^ (unsigned char)*c) * 1099511628211u;
    return hash & (buckets - 1);
}

static struct node *find(fuse_ino_t parent, const char *name) {
    for (struct node *n = table[bucket_of(parent, name)]; n; n = n->next_in_bucket)
        if (n->parent == parent && strcmp(n->name, name) == 0) return n;
    return NULL;
}

static struct node *node_of(fuse_ino_t ino) {
    if (ino == FUSE_ROOT_ID) return &root;
    return ino < next_ino ? by_ino[ino] : NULL;
}

static struct node *add(fuse_ino_t parent, const char *name, mode_t mode) {
    struct node *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    if (next_ino >= ino_capacity) {
        size_t capacity = ino_capacity ? ino_capacity * 2 : 4096;
        struct node **grown = realloc(by_ino, capacity * sizeof *grown);
        if (!grown) { free(n); return NULL; }
        by_ino = grown;
        ino_capacity = capacity;
    }
    n->ino = next_ino++;
    n->parent = parent;
    n->mode = mode;
    n->name = strdup(name);
    by_ino[n->ino] = n;
    size_t b = bucket_of(parent, name);
    n->next_in_bucket = table[b];
    table[b] = n;
    return n;
}

static void attributes(const struct node *n, struct stat *st) {
    memset(st, 0, sizeof *st);
    st->st_ino = n->ino;
    st->st_mode = n->mode;
    st->st_nlink = S_ISDIR(n->mode) ? 2 : 1;
    st->st_size = n->size;
    st->st_uid = getuid();
    st->st_gid = getgid();
}

static void entry_of(const struct node *n, struct fuse_entry_param *e) {
    memset(e, 0, sizeof *e);
    e->ino = n->ino;
    e->attr_timeout = e->entry_timeout = day;
    attributes(n, &e->attr);
}

static void floor_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
    struct fuse_entry_param e;
    pthread_mutex_lock(&lock);
    struct node *n = find(parent, name);
    if (n) entry_of(n, &e);
    pthread_mutex_unlock(&lock);
    if (n) { fuse_reply_entry(req, &e); return; }
    memset(&e, 0, sizeof e);
    e.entry_timeout = day;  // a negative entry, as DocFS gives with a watched store
    fuse_reply_entry(req, &e);
}

static void floor_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    (void)fi;
    struct stat st;
    pthread_mutex_lock(&lock);
    struct node *n = node_of(ino);
    if (n) attributes(n, &st);
    pthread_mutex_unlock(&lock);
    if (n) fuse_reply_attr(req, &st, day); else fuse_reply_err(req, ENOENT);
}

static void make(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi) {
    struct fuse_entry_param e;
    pthread_mutex_lock(&lock);
    struct node *n = find(parent, name) ? NULL : add(parent, name, mode);
    if (n) entry_of(n, &e);
    pthread_mutex_unlock(&lock);
    if (!n) fuse_reply_err(req, EEXIST);
    else if (fi) fuse_reply_create(req, &e, fi);
    else fuse_reply_entry(req, &e);
}

static void floor_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode) {
    make(req, parent, name, S_IFDIR | (mode & 07777), NULL);
}

static void floor_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi) {
    make(req, parent, name, S_IFREG | (mode & 07777), fi);
}

static void floor_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi) {
    (void)fi;
    struct stat st;
    pthread_mutex_lock(&lock);
    struct node *n = node_of(ino);
    if (n && (to_set & FUSE_SET_ATTR_SIZE)) n->size = attr->st_size;
    if (n && (to_set & FUSE_SET_ATTR_MODE)) n->mode = (n->mode & S_IFMT) | (attr->st_mode & 07777);
    if (n) attributes(n, &st);
    pthread_mutex_unlock(&lock);
    if (n) fuse_reply_attr(req, &st, day); else fuse_reply_err(req, ENOENT);
}

static void floor_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    (void)ino;
    fuse_reply_open(req, fi);
}

static void floor_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
    (void)buf; (void)fi;
    pthread_mutex_lock(&lock);
    struct node *n = node_of(ino);
    if (n && off + (off_t)size > n->size) n->size = off + (off_t)size;
    pthread_mutex_unlock(&lock);
    fuse_reply_write(req, size);
}

static void floor_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
    (void)ino; (void)size; (void)off; (void)fi;
    fuse_reply_buf(req, NULL, 0);
}

static void floor_ok(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    (void)ino; (void)fi;
    fuse_reply_err(req, 0);
}

// Takes the name off its node (call holding the lock). The record stays for its inode number.
static struct node *unlink_name(fuse_ino_t parent, const char *name) {
    struct node **link = &table[bucket_of(parent, name)];
    while (*link && !((*link)->parent == parent && strcmp((*link)->name, name) == 0)) link = &(*link)->next_in_bucket;
    struct node *n = *link;
    if (n) *link = n->next_in_bucket;
    return n;
}

static void floor_unlink(fuse_req_t req, fuse_ino_t parent, const char *name) {
    pthread_mutex_lock(&lock);
    struct node *n = unlink_name(parent, name);
    pthread_mutex_unlock(&lock);
    fuse_reply_err(req, n ? 0 : ENOENT);
}

// A save by rename (sed -i, vim, os.replace) moves a new file over the old name.
static void floor_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent, const char *newname, unsigned int flags) {
    if (flags & RENAME_EXCHANGE) { fuse_reply_err(req, EINVAL); return; }
    char *moved_name = strdup(newname);
    if (!moved_name) { fuse_reply_err(req, ENOMEM); return; }
    int error = 0;
    pthread_mutex_lock(&lock);
    if (!find(parent, name)) error = ENOENT;
    else if ((flags & RENAME_NOREPLACE) && find(newparent, newname)) error = EEXIST;
    if (!error) {
        unlink_name(newparent, newname);
        struct node *n = unlink_name(parent, name);
        free(n->name);
        n->name = moved_name;
        n->parent = newparent;
        size_t b = bucket_of(newparent, newname);
        n->next_in_bucket = table[b];
        table[b] = n;
    }
    pthread_mutex_unlock(&lock);
    if (error) free(moved_name);
    fuse_reply_err(req, error);
}

static void floor_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
    (void)fi;
    char *buf = malloc(size);
    if (!buf) { fuse_reply_err(req, ENOMEM); return; }
    size_t used = 0;
    pthread_mutex_lock(&lock);
    // Entries are the live records with this parent, in inode order; the offset is the next inode.
    for (size_t i = off < 2 ? 2 : (size_t)off; i < next_ino; i++) {
        struct node *n = by_ino[i];
        if (n->parent != ino || find(ino, n->name) != n) continue;
        struct stat st = {.st_ino = n->ino, .st_mode = n->mode};
        size_t need = fuse_add_direntry(req, buf + used, size - used, n->name, &st, (off_t)i + 1);
        if (used + need > size) break;
        used += need;
    }
    pthread_mutex_unlock(&lock);
    fuse_reply_buf(req, buf, used);
    free(buf);
}

static void floor_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
    (void)ino; (void)nlookup;
    fuse_reply_none(req);
}

static const struct fuse_lowlevel_ops operations = {
    .lookup = floor_lookup, .getattr = floor_getattr, .setattr = floor_setattr, .mkdir = floor_mkdir, .create = floor_create,
    .open = floor_open, .read = floor_read, .write = floor_write, .flush = floor_ok,
    .release = floor_ok, .fsync = NULL, .unlink = floor_unlink, .rename = floor_rename, .opendir = floor_open,
    .readdir = floor_readdir, .releasedir = floor_ok, .forget = floor_forget,
};

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s MOUNTPOINT\n", argv[0]);
        return 2;
    }
    char *arguments[] = {argv[0], "-o", "default_permissions,fsname=fuse-floor", NULL};
    struct fuse_args args = FUSE_ARGS_INIT(3, arguments);
    struct fuse_session *session = fuse_session_new(&args, &operations, sizeof operations, NULL);
    if (!session || fuse_set_signal_handlers(session) != 0 || fuse_session_mount(session, argv[1]) != 0) {
        fprintf(stderr, "fuse-floor: cannot mount on %s\n", argv[1]);
        return 1;
    }
    // The same loop DocFS runs: 8 workers, all kept.
    struct fuse_loop_config *config = fuse_loop_cfg_create();
    fuse_loop_cfg_set_max_threads(config, 8);
    fuse_loop_cfg_set_idle_threads(config, 8);
    int result = fuse_session_loop_mt(session, config);
    fuse_loop_cfg_destroy(config);
    fuse_session_unmount(session);
    fuse_remove_signal_handlers(session);
    fuse_session_destroy(session);
    return result ? 1 : 0;
}
