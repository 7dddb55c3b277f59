/*
 * device/compute/keys.h - a session's registry of encryption keys.
 *
 * A client registers a key once with the device (control request
 * CTL_KEY_ADD over its session's control connection) and gets a small id;
 * ENCRYPT and DECRYPT steps name the key by that id, so key bytes never
 * travel in commands or sit in the shared-memory arena. Keys are
 * XChaCha20-Poly1305 IETF keys (32 bytes).
 *
 * Control payloads (little-endian; see device/control.h for framing):
 *   CTL_KEY_ADD     u32 alg (CKEY_ALG_XCHACHA20POLY1305 = 1), u32 len,
 *                   len key bytes          -> s32 status, u32 key id
 *   CTL_KEY_REMOVE  u32 key id             -> s32 status
 *
 * Invariants:
 *   1. Key bytes live only in sodium_malloc'd memory (guard pages,
 *      mlock'd where allowed, never swapped out if it can be helped); a
 *      removed key and the whole table at ckey_table_destroy() are wiped
 *      (sodium_free zeroes before unmapping).
 *   2. Ids are never reused within a table, so a stale id names no key
 *      (-ENOKEY) rather than someone else's newer key.
 *   3. All calls are thread-safe: device cores use keys (ckey_with) while
 *      the control thread adds and removes them; a key is never freed
 *      while a ckey_with callback uses it.
 *   4. The table's owner (the session) destroys it only after every
 *      command that may name it has completed.
 */
#ifndef CISC_DEVICE_KEYS_H
#define CISC_DEVICE_KEYS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CKEY_ALG_XCHACHA20POLY1305 1u
#define CKEY_BYTES   32u
#define CKEY_MAX     64u          /* keys per session */

struct ckey_table;

/* Creates an empty table (initialises libsodium). Returns 0 or -ENOMEM. */
int ckey_table_create(struct ckey_table **out);

/* Wipes and frees every key and the table. NULL is a no-op. */
void ckey_table_destroy(struct ckey_table *t);

/* Registers a copy of key (CKEY_BYTES bytes, algorithm alg); sets *id.
 * Returns 0, -EINVAL (bad alg or length), -ENOSPC (CKEY_MAX keys) or
 * -ENOMEM. The caller wipes its own copy. */
int ckey_add(struct ckey_table *t, uint32_t alg, const uint8_t *key, size_t len,
             uint32_t *id);

/* Removes and wipes key id. Returns 0 or -ENOKEY. */
int ckey_remove(struct ckey_table *t, uint32_t id);

/* Calls fn(key, arg) with key id's bytes (valid only during the call).
 * Returns fn's result, or -ENOKEY (t NULL or no such id). */
int ckey_with(struct ckey_table *t, uint32_t id,
              int (*fn)(const uint8_t key[CKEY_BYTES], void *arg), void *arg);

/* Handles a CTL_KEY_ADD payload: registers the key, wipes the key bytes
 * in the payload buffer (which the caller owns and must be writable),
 * writes the u32 id into reply[0..4). Returns 0 or -errno (-EPROTO for a
 * malformed payload). */
int ckey_ctl_add(struct ckey_table *t, uint8_t *payload, size_t len, uint8_t reply[4]);

/* Handles a CTL_KEY_REMOVE payload. Returns 0 or -errno. */
int ckey_ctl_remove(struct ckey_table *t, const uint8_t *payload, size_t len);

#ifdef __cplusplus
}
#endif

#endif
