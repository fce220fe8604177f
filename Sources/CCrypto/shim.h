// OpenSSL's libcrypto, for SHA-256 (libpq links it already).
#ifndef DOCFS_CCRYPTO_SHIM_H
#define DOCFS_CCRYPTO_SHIM_H
#include <openssl/evp.h>

/// SHA-256 of `count` bytes at `bytes` into `digest` (32 bytes). Returns 1 on success.
static inline int docfs_sha256(const void *bytes, size_t count, unsigned char *digest) {
    unsigned int length = 0;
    return EVP_Digest(bytes, count, digest, &length, EVP_sha256(), NULL);
}
#endif
