// The locks the calling thread holds, for the lock-order check of debug builds
// (SystemSupport/LockOrder.swift). A thread-local array: no allocation, no lock of its own.
#include "CSystemShims.h"

enum { docfs_lock_depth = 32 };

static __thread struct {
    unsigned int level;
    unsigned long long key;
    const char *site;
    unsigned int line;
} held[docfs_lock_depth];
static __thread int held_count;
/// Entries past the array's end (never expected: DocFS nests a handful of locks at most).
static __thread int overflow;
static __thread int suspended;

int docfs_lock_order_acquire(unsigned int level, unsigned long long key, int nests_by_key, const char *site, unsigned int line,
                             unsigned int *held_level, unsigned long long *held_key, const char **held_site, unsigned int *held_line) {
    int conflict = 0;
    if (!suspended) {
        for (int i = 0; i < held_count; i++) {
            unsigned int other = held[i].level;
            if (other > level || (other == level && !(nests_by_key && held[i].key < key))) {
                *held_level = other;
                *held_key = held[i].key;
                *held_site = held[i].site;
                *held_line = held[i].line;
                conflict = 1;
                break;
            }
        }
    }
    if (held_count < docfs_lock_depth) {
        held[held_count].level = level;
        held[held_count].key = key;
        held[held_count].site = site;
        held[held_count].line = line;
        held_count++;
    } else {
        overflow++;
    }
    return conflict;
}

void docfs_lock_order_release(unsigned int level, unsigned long long key) {
    if (overflow > 0) {
        overflow--;
        return;
    }
    // Closures release in the reverse order of taking, but a lock may be handed over: search.
    for (int i = held_count - 1; i >= 0; i--) {
        if (held[i].level == level && held[i].key == key) {
            for (int j = i; j < held_count - 1; j++) held[j] = held[j + 1];
            held_count--;
            return;
        }
    }
}

int docfs_lock_order_held_count(void) {
    return held_count;
}

void docfs_lock_order_suspend(int suspend) {
    suspended = suspend;
}
