/* device/compute/keys.c - per-session key registry in sodium_malloc'd
 * memory (see keys.h). */
#include "device/compute/keys.h"

#include "common/le.h"

#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

struct ckey {
    uint32_t id;                 /* 0: slot empty */
    uint8_t *bytes;              /* sodium_malloc'd, CKEY_BYTES */
};

struct ckey_table {
    pthread_rwlock_t lock;       /* write: add/remove; read: ckey_with */
    uint32_t next_id;            /* ids are never reused (invariant 2) */
    struct ckey keys[CKEY_MAX];
};

int ckey_table_create(struct ckey_table **out)
{
    if (sodium_init() < 0)
        return -ENOMEM;
    struct ckey_table *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    pthread_rwlock_init(&t->lock, NULL);
    t->next_id = 1;
    *out = t;
    return 0;
}

void ckey_table_destroy(struct ckey_table *t)
{
    if (!t)
        return;
    for (unsigned i = 0; i < CKEY_MAX; i++)
        if (t->keys[i].id)
            sodium_free(t->keys[i].bytes);   /* zeroes before unmapping */
    pthread_rwlock_destroy(&t->lock);
    free(t);
}

static struct ckey *find(struct ckey_table *t, uint32_t id)
{
    for (unsigned i = 0; id && i < CKEY_MAX; i++)
        if (t->keys[i].id == id)
            return &t->keys[i];
    return NULL;
}

int ckey_add(struct ckey_table *t, uint32_t alg, const uint8_t *key, size_t len,
             uint32_t *id)
{
    if (alg != CKEY_ALG_XCHACHA20POLY1305 || len != CKEY_BYTES || !key)
        return -EINVAL;
    uint8_t *b = sodium_malloc(CKEY_BYTES);
    if (!b)
        return -ENOMEM;
    memcpy(b, key, CKEY_BYTES);
    sodium_mprotect_readonly(b);
    pthread_rwlock_wrlock(&t->lock);
    struct ckey *slot = NULL;
    for (unsigned i = 0; !slot && i < CKEY_MAX; i++)
        if (!t->keys[i].id)
            slot = &t->keys[i];
    int r = slot && t->next_id ? 0 : -ENOSPC;
    if (!r) {
        *slot = (struct ckey){ t->next_id++, b };
        *id = slot->id;
    }
    pthread_rwlock_unlock(&t->lock);
    if (r)
        sodium_free(b);
    return r;
}

int ckey_remove(struct ckey_table *t, uint32_t id)
{
    pthread_rwlock_wrlock(&t->lock);
    struct ckey *k = find(t, id);
    uint8_t *b = k ? k->bytes : NULL;
    if (k)
        *k = (struct ckey){ 0, NULL };
    pthread_rwlock_unlock(&t->lock);
    if (!b)
        return -ENOKEY;
    sodium_free(b);
    return 0;
}

int ckey_with(struct ckey_table *t, uint32_t id,
              int (*fn)(const uint8_t key[CKEY_BYTES], void *arg), void *arg)
{
    if (!t)
        return -ENOKEY;
    pthread_rwlock_rdlock(&t->lock);
    struct ckey *k = find(t, id);
    int r = k ? fn(k->bytes, arg) : -ENOKEY;
    pthread_rwlock_unlock(&t->lock);
    return r;
}

int ckey_ctl_add(struct ckey_table *t, uint8_t *payload, size_t len, uint8_t reply[4])
{
    if (len < 8)
        return -EPROTO;
    uint32_t alg = le32_get(payload), klen = le32_get(payload + 4);
    if (klen != len - 8) {
        sodium_memzero(payload + 8, len - 8);
        return -EPROTO;
    }
    uint32_t id = 0;
    int r = ckey_add(t, alg, payload + 8, klen, &id);
    sodium_memzero(payload + 8, klen);
    le32_put(reply, id);
    return r;
}

int ckey_ctl_remove(struct ckey_table *t, const uint8_t *payload, size_t len)
{
    if (len != 4)
        return -EPROTO;
    return ckey_remove(t, le32_get(payload));
}
