/* device/progs/progs_store.c - program records in the image: one file per
 * program in /.cisc-system/progs, named by its id, written under a
 * temporary name, synced and renamed; the next id in an xattr of the
 * directory. Record layout: docs/FORMAT.md "Program records". */
#include "device/progs/progs_int.h"

#include "common/corrupt.h"
#include "common/crc32c.h"
#include "common/le.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NEXT_ID_XATTR "trusted.cisc.next_id"
#define WRITE_CHUNK   (1u << 20)

/* Field offsets of the record header. */
enum {
    RH_MAGIC = 0, RH_VERSION = 4, RH_HDRSIZE = 6, RH_ID = 8, RH_OWNER = 12, RH_FLAGS = 16,
    RH_OBJSIZE = 20, RH_TIME = 24, RH_SHA = 32, RH_NAME = 64, RH_FUNC = 128,
    RH_RESERVED = 192, RH_CRC = 252, RH_END = 256,
};
_Static_assert(RH_END == PROGS_REC_HDR, "record header is 256 bytes");
_Static_assert(RH_FUNC - RH_NAME == PROGS_NAME_MAX, "name field holds a name");
_Static_assert(RH_RESERVED - RH_FUNC == PROGS_NAME_MAX, "func field holds a name");

void progs_sha256(const void *buf, size_t len, uint8_t out[32])
{
    crypto_hash_sha256(out, buf, len);
}

void progs_rec_encode(const struct progs_rec *r, uint8_t *b)
{
    memset(b, 0, PROGS_REC_HDR);
    le32_put(b + RH_MAGIC, PROGS_REC_MAGIC);
    le16_put(b + RH_VERSION, PROGS_REC_VERSION);
    le16_put(b + RH_HDRSIZE, PROGS_REC_HDR);
    le32_put(b + RH_ID, r->id);
    le32_put(b + RH_OWNER, r->owner);
    le32_put(b + RH_FLAGS, r->flags);
    le32_put(b + RH_OBJSIZE, r->obj_size);
    le64_put(b + RH_TIME, r->load_time_ns);
    memcpy(b + RH_SHA, r->sha256, 32);
    /* NUL-padded fields (zeroed above); the last byte stays NUL */
    memcpy(b + RH_NAME, r->name, strnlen(r->name, PROGS_NAME_MAX - 1));
    memcpy(b + RH_FUNC, r->func, strnlen(r->func, PROGS_NAME_MAX - 1));
    le32_put(b + RH_CRC, crc32c(0, b, RH_CRC));
}

/* A NUL-terminated, non-empty name field. */
static bool name_field_ok(const uint8_t *f)
{
    return f[0] && memchr(f, '\0', PROGS_NAME_MAX);
}

int progs_rec_decode(const uint8_t *b, struct progs_rec *r)
{
    if (le32_get(b + RH_MAGIC) != PROGS_REC_MAGIC)
        return CISC_CORRUPT("program record: bad magic 0x%08x", le32_get(b + RH_MAGIC));
    if (le32_get(b + RH_CRC) != crc32c(0, b, RH_CRC))
        return CISC_CORRUPT("program record: header checksum mismatch");
    if (le16_get(b + RH_VERSION) != PROGS_REC_VERSION || le16_get(b + RH_HDRSIZE) != RH_END)
        return CISC_CORRUPT("program record: version %u (header %u bytes) is not %u",
                            le16_get(b + RH_VERSION), le16_get(b + RH_HDRSIZE),
                            PROGS_REC_VERSION);
    if (!name_field_ok(b + RH_NAME) || !name_field_ok(b + RH_FUNC))
        return CISC_CORRUPT("program record: bad name or function field");
    memset(r, 0, sizeof(*r));
    r->id = le32_get(b + RH_ID);
    r->owner = le32_get(b + RH_OWNER);
    r->flags = le32_get(b + RH_FLAGS) & PROGS_F_SHARED;
    r->obj_size = le32_get(b + RH_OBJSIZE);
    r->load_time_ns = le64_get(b + RH_TIME);
    memcpy(r->sha256, b + RH_SHA, 32);
    memcpy(r->name, b + RH_NAME, PROGS_NAME_MAX);
    memcpy(r->func, b + RH_FUNC, PROGS_NAME_MAX);
    if (r->obj_size > PROGS_OBJ_MAX)
        return CISC_CORRUPT("program record: object size %u over %u", r->obj_size,
                            PROGS_OBJ_MAX);
    return 0;
}

/* ---- next id ------------------------------------------------------------ */

int progs_store_next_id(struct progs *p, uint32_t *id)
{
    uint8_t v[8];
    ssize_t n = sfs_getxattr(p->fs, p->dir, NEXT_ID_XATTR, v, sizeof(v));
    *id = 1;
    if (n == -ENODATA)
        return 0;
    if (n < 0)
        return (int)n;
    uint64_t x = n == 8 ? le64_get(v) : 0;
    *id = x >= 1 && x < UINT32_MAX ? (uint32_t)x : 1;   /* the scan corrects a bad one */
    return 0;
}

static int set_next_id(struct progs *p, uint32_t id)
{
    uint8_t v[8];
    le64_put(v, id);
    return sfs_setxattr(p->fs, NULL, p->dir, NEXT_ID_XATTR, v, sizeof(v), 0);
}

/* ---- writing and removing ----------------------------------------------------- */

static int write_all(struct sfs *fs, uint64_t ino, const uint8_t *buf, size_t len)
{
    for (size_t off = 0; off < len;) {
        size_t n = len - off < WRITE_CHUNK ? len - off : WRITE_CHUNK;
        ssize_t w = sfs_write(fs, NULL, ino, off, buf + off, n);
        if (w < 0)
            return (int)w;
        if (w == 0)
            return -EIO;
        off += (size_t)w;
    }
    return 0;
}

/* Creates tmp afresh and fills it with the record; syncs its data. */
static int write_tmp(struct progs *p, const char *tmp, const uint8_t *buf, size_t len)
{
    struct sfs_attr a;
    int r = sfs_mknod(p->fs, NULL, p->dir, tmp, S_IFREG | 0600, 0, 0, 0, &a);
    if (r == -EEXIST) {   /* left by a crash */
        sfs_unlink(p->fs, NULL, p->dir, tmp);
        r = sfs_mknod(p->fs, NULL, p->dir, tmp, S_IFREG | 0600, 0, 0, 0, &a);
    }
    if (!r)
        r = write_all(p->fs, a.ino, buf, len);
    if (!r)
        r = sfs_fsync(p->fs, a.ino, false);
    return r;
}

int progs_store_save(struct progs *p, const struct progs_rec *rec, const void *obj)
{
    char tmp[32], fin[32];
    snprintf(tmp, sizeof(tmp), "%u.tmp", rec->id);
    snprintf(fin, sizeof(fin), "%u", rec->id);
    size_t len = PROGS_REC_HDR + (size_t)rec->obj_size;
    uint8_t *buf = malloc(len);
    if (!buf)
        return -ENOMEM;
    progs_rec_encode(rec, buf);
    memcpy(buf + PROGS_REC_HDR, obj, rec->obj_size);
    int r = write_tmp(p, tmp, buf, len);
    free(buf);
    if (!r)
        r = set_next_id(p, rec->id + 1);
    if (!r)
        r = sfs_rename(p->fs, NULL, p->dir, tmp, p->dir, fin, SFS_RENAME_NOREPLACE);
    if (!r)
        r = sfs_sync(p->fs);
    if (r)
        sfs_unlink(p->fs, NULL, p->dir, tmp);
    return r;
}

int progs_store_remove(struct progs *p, uint32_t id)
{
    char fin[32];
    snprintf(fin, sizeof(fin), "%u", id);
    int r = sfs_unlink(p->fs, NULL, p->dir, fin);
    if (r == -ENOENT)
        r = 0;   /* already gone (a damaged directory): nothing to keep */
    return r ? r : sfs_sync(p->fs);
}

/* ---- reading everything at start-up ---------------------------------------------- */

struct names {
    char (*v)[32];
    size_t n, cap;
    bool oom;
};

static int collect(void *arg, const struct sfs_dirent *de)
{
    struct names *ns = arg;
    if (de->namelen >= 32 || (de->namelen <= 2 && de->name[0] == '.'))
        return 0;   /* ".", "..", and names we never write */
    if (ns->n == ns->cap) {
        size_t cap = ns->cap ? 2 * ns->cap : 64;
        char (*v)[32] = realloc(ns->v, cap * sizeof(*v));
        if (!v) {
            ns->oom = true;
            return 1;
        }
        ns->v = v;
        ns->cap = cap;
    }
    memcpy(ns->v[ns->n], de->name, de->namelen);
    ns->v[ns->n++][de->namelen] = '\0';
    return 0;
}

/* The id a record file name holds, or 0. */
static uint32_t parse_id(const char *s)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    return s[0] >= '1' && s[0] <= '9' && !*end && v < UINT32_MAX ? (uint32_t)v : 0;
}

/* Reads and checks one record; on damage *why says what (into msg). The
 * object comes back in *obj (malloc'd) when the record is good. */
static int read_record(struct progs *p, uint32_t id, const char *fname, struct progs_rec *rec,
                       uint8_t **obj, char *msg, size_t msglen)
{
    struct sfs_attr a;
    uint8_t hdr[PROGS_REC_HDR];
    *obj = NULL;
    int r = sfs_lookup(p->fs, p->dir, fname, &a);
    if (r)
        return r;
    ssize_t n = sfs_read(p->fs, a.ino, 0, hdr, sizeof(hdr));
    if (n < 0)
        return (int)n;
    cisc_corrupt_clear();
    if (n < (ssize_t)sizeof(hdr) || progs_rec_decode(hdr, rec)) {
        snprintf(msg, msglen, "damaged record: %s",
                 n < (ssize_t)sizeof(hdr) ? "truncated header" : cisc_corrupt_what());
        return 0;
    }
    if (rec->id != id || a.size != PROGS_REC_HDR + (uint64_t)rec->obj_size) {
        snprintf(msg, msglen, "damaged record: id %u / size %llu do not match", rec->id,
                 (unsigned long long)a.size);
        return 0;
    }
    uint8_t *o = malloc(rec->obj_size ? rec->obj_size : 1);
    if (!o)
        return -ENOMEM;
    n = sfs_read(p->fs, a.ino, PROGS_REC_HDR, o, rec->obj_size);
    uint8_t sha[32];
    progs_sha256(o, n > 0 ? (size_t)n : 0, sha);
    if (n != (ssize_t)rec->obj_size || memcmp(sha, rec->sha256, 32)) {
        free(o);
        if (n < 0)
            return (int)n;
        snprintf(msg, msglen, "damaged record: object checksum mismatch");
        return 0;
    }
    *obj = o;
    return 0;
}

/* One record file: read, check, hand to fn. */
static int scan_one(struct progs *p, uint32_t id, const char *fname,
                    void (*fn)(struct progs *, uint32_t, const struct progs_rec *,
                               const uint8_t *, const char *))
{
    struct progs_rec rec;
    uint8_t *obj;
    char msg[400] = "";
    memset(&rec, 0, sizeof(rec));
    int r = read_record(p, id, fname, &rec, &obj, msg, sizeof(msg));
    if (r)
        return r;
    if (!obj && !rec.name[0]) {   /* header damaged: visible, so root can unload it */
        snprintf(rec.name, sizeof(rec.name), "damaged-%u", id);
        snprintf(rec.func, sizeof(rec.func), "?");
    }
    if (fn)
        fn(p, id, &rec, obj, obj ? NULL : msg);
    free(obj);
    return 0;
}

/* Record files in id order (older programs first when limits bite),
 * then the other names. */
static int by_id(const void *a, const void *b)
{
    uint32_t x = parse_id(a), y = parse_id(b);
    if (!x || !y)
        return (x == 0) - (y == 0);
    return (x > y) - (x < y);
}

int progs_store_scan(struct progs *p,
                     void (*fn)(struct progs *p, uint32_t id, const struct progs_rec *r,
                                const uint8_t *obj, const char *why))
{
    struct names ns = { 0 };
    int r = sfs_readdir(p->fs, p->dir, 0, collect, &ns);
    if (!r && ns.oom)
        r = -ENOMEM;
    if (ns.n)
        qsort(ns.v, ns.n, sizeof(ns.v[0]), by_id);
    for (size_t i = 0; !r && i < ns.n; i++) {
        size_t len = strlen(ns.v[i]);
        bool tmp = len > 4 && !strcmp(ns.v[i] + len - 4, ".tmp");   /* an interrupted load */
        if (tmp)
            r = fn && !p->read_only ? sfs_unlink(p->fs, NULL, p->dir, ns.v[i]) : 0;
        else if (parse_id(ns.v[i]))
            r = scan_one(p, parse_id(ns.v[i]), ns.v[i], fn);
        else
            progs_logf(p, "program store: ignoring unknown entry '%s'", ns.v[i]);
    }
    free(ns.v);
    return r;
}
