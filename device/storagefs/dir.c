/*
 * device/storagefs/dir.c - hashed directory entries over the B+tree
 * (see dir.h).
 */
#include "device/storagefs/dir.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "common/corrupt.h"
#include "common/le.h"
#include "device/storagefs/btree.h"
#include "device/storagefs/inode.h"
#include "device/storagefs/sfs_int.h"

static struct bt tree(struct sfs *fs, struct sfs_inode *dp, struct jnl_handle *h)
{
    struct bt t = {fs, dp, SFS_MAGIC_DIR, h};
    return t;
}

int dir_name_ok(const char *name, size_t *len)
{
    size_t n = strnlen(name, SFS_NAME_MAX + 1);
    if (n > SFS_NAME_MAX)
        return -ENAMETOOLONG;
    if (n == 0 || memchr(name, '/', n) || !strcmp(name, ".") || !strcmp(name, ".."))
        return -EINVAL;
    *len = n;
    return 0;
}

uint8_t dir_type_of(uint32_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG: return DT_REG;
    case S_IFDIR: return DT_DIR;
    case S_IFLNK: return DT_LNK;
    case S_IFIFO: return DT_FIFO;
    case S_IFSOCK: return DT_SOCK;
    case S_IFCHR: return DT_CHR;
    case S_IFBLK: return DT_BLK;
    default: return DT_UNKNOWN;
    }
}

static uint64_t base_key(struct sfs *fs, const char *name, size_t len)
{
    return sfs_dkey_base(sfs_name_hash(name, len, fs->sb.hash_seed));
}

static bool same_name(const struct bt_rec *rec, const char *name, size_t len)
{
    return rec->val[DV_NAMELEN] == len && !memcmp(rec->val + DV_NAME, name, len);
}

/* Walks the entries sharing name's hash. Sets *hit when found; *free_seq
 * gets the smallest unused sequence number (or > 0xFFFF when full). */
static int scan_bucket(struct sfs *fs, struct sfs_inode *dp, const char *name, size_t len,
                       struct dir_hit *hit, uint64_t *free_seq)
{
    struct bt t = tree(fs, dp, NULL);
    uint64_t base = base_key(fs, name, len), k = base, expect = 0;
    bool gap = false;
    struct bt_rec rec;
    int r;
    while ((r = bt_find_ge(&t, k, &rec)) == 0 && rec.key <= (base | SFS_DKEY_SEQ_MASK)) {
        if (!gap && rec.key - base != expect)
            gap = true;
        if (!gap)
            expect++;
        if (same_name(&rec, name, len)) {
            hit->key = rec.key;
            hit->ino = le64_get(rec.val + DV_INO);
            hit->type = rec.val[DV_TYPE];
            return 0;
        }
        k = rec.key + 1;
    }
    if (free_seq)
        *free_seq = expect;
    return r == 0 || r == -ENOENT ? -ENOENT : r;
}

int dir_find(struct sfs *fs, struct sfs_inode *dp, const char *name, size_t len,
             struct dir_hit *hit)
{
    return scan_bucket(fs, dp, name, len, hit, NULL);
}

static uint16_t encode_entry(uint8_t *v, const char *name, size_t len, uint64_t ino,
                             uint8_t type)
{
    le64_put(v + DV_INO, ino);
    v[DV_TYPE] = type;
    v[DV_NAMELEN] = (uint8_t)len;
    memcpy(v + DV_NAME, name, len);
    return (uint16_t)(DV_NAME + len);
}

int dir_add(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *dp, const char *name,
            size_t len, uint64_t ino, uint8_t type)
{
    struct dir_hit hit;
    uint64_t seq;
    int r = scan_bucket(fs, dp, name, len, &hit, &seq);
    if (r == 0)
        return -EEXIST;
    if (r != -ENOENT)
        return r;
    if (seq > SFS_DKEY_SEQ_MASK)
        return -ENOSPC;          /* 65536 names with one 46-bit hash */
    uint8_t v[SFS_DIRENT_MAX];
    struct bt t = tree(fs, dp, h);
    r = bt_insert(&t, base_key(fs, name, len) + seq, v, encode_entry(v, name, len, ino, type));
    if (r)
        return r;
    dp->d.size++;
    return inode_dirty(h, dp);
}

int dir_del(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *dp, uint64_t key)
{
    struct bt t = tree(fs, dp, h);
    int r = bt_delete(&t, key);
    if (r)
        return r;
    dp->d.size--;
    return inode_dirty(h, dp);
}

int dir_set(struct sfs *fs, struct jnl_handle *h, struct sfs_inode *dp, uint64_t key,
            const char *name, size_t len, uint64_t ino, uint8_t type)
{
    uint8_t v[SFS_DIRENT_MAX];
    struct bt t = tree(fs, dp, h);
    return bt_update(&t, key, v, encode_entry(v, name, len, ino, type));
}

static int emit(sfs_dirent_fn fn, void *arg, uint64_t ino, uint8_t type, uint64_t next,
                const char *name, size_t len)
{
    struct sfs_dirent de = {ino, type, next, name, len};
    return fn(arg, &de);
}

int dir_iterate(struct sfs *fs, struct sfs_inode *dp, uint64_t cookie, sfs_dirent_fn fn,
                void *arg)
{
    if (cookie == 0 && emit(fn, arg, dp->ino, DT_DIR, 1, ".", 1))
        return 0;
    if (cookie <= 1 && emit(fn, arg, dp->d.parent, DT_DIR, 2, "..", 2))
        return 0;
    struct bt t = tree(fs, dp, NULL);
    uint64_t k = cookie < DIR_COOKIE_FIRST ? DIR_COOKIE_FIRST : cookie;
    struct bt_rec rec;
    int r;
    while ((r = bt_find_ge(&t, k, &rec)) == 0) {
        char name[SFS_NAME_MAX + 1];
        size_t len = rec.val[DV_NAMELEN];
        memcpy(name, rec.val + DV_NAME, len);
        name[len] = '\0';
        if (emit(fn, arg, le64_get(rec.val + DV_INO), rec.val[DV_TYPE], rec.key + 1, name,
                 len))
            return 0;
        if (rec.key == UINT64_MAX)
            break;
        k = rec.key + 1;
    }
    return r == -ENOENT ? 0 : r;
}
