/*
 * device/storagefs/acl.h - POSIX ACLs (POSIX.1e draft 17, as Linux): the
 * value format of system.posix_acl_access / system.posix_acl_default, the
 * mode <-> ACL rules, inheritance, and evaluation.
 *
 * On the image an ACL is an xattr of namespace 4 (SFS_XNS_SYSTEM) named
 * "posix_acl_access" or "posix_acl_default"; its value is Linux's xattr
 * form (docs/FORMAT.md): u32 version 2, then 8-byte entries (u16 tag,
 * u16 perm, u32 id), little-endian, sorted by tag then id.
 *
 * Invariants:
 *   1. An inode's mode and its access ACL agree: the owner bits are
 *      ACL_USER_OBJ, the group bits are ACL_MASK (ACL_GROUP_OBJ when there
 *      is no mask), the other bits ACL_OTHER. sfs_setattr (chmod) rewrites
 *      the ACL and setting an ACL rewrites the mode, in one transaction.
 *   2. An access ACL that the mode says entirely (three entries) is not
 *      stored: the mode is the ACL.
 *   3. Only directories hold a default ACL; a new inode in a directory with
 *      one gets it as its access ACL (masked by the create mode), a new
 *      directory also as its default, in the creating transaction.
 *   4. Every stored value decodes (acl_decode); the first one sets
 *      SFS_FEAT_INCOMPAT_XACL, so images without ACLs stay readable by
 *      older code (which would ignore the ACL and grant the mask).
 */
#ifndef CISC_SFS_ACL_H
#define CISC_SFS_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sfs;

#define SFS_ACL_VERSION 2u
#define SFS_ACL_MAX     128u                   /* entries per ACL */
#define SFS_ACL_SIZE(n) (4u + 8u * (unsigned)(n))

/* Entry tags (the values are Linux's). */
#define SFS_ACL_USER_OBJ  0x01u
#define SFS_ACL_USER      0x02u
#define SFS_ACL_GROUP_OBJ 0x04u
#define SFS_ACL_GROUP     0x08u
#define SFS_ACL_MASK      0x10u
#define SFS_ACL_OTHER     0x20u

/* Which ACL of an inode. */
enum sfs_acl_type { SFS_ACL_ACCESS = 0, SFS_ACL_DEFAULT = 1 };

struct sfs_acl_entry {
    uint16_t tag, perm;    /* perm: 4 read, 2 write, 1 execute */
    uint32_t id;           /* uid or gid for ACL_USER / ACL_GROUP */
};

struct sfs_acl {
    unsigned n;
    struct sfs_acl_entry e[SFS_ACL_MAX];
};

/* The ACL type an xattr name stands for: 0 access, 1 default, -EOPNOTSUPP
 * for any other name. name is the full name ("system.posix_acl_access"). */
int acl_type_of(const char *name);

/* Decodes and validates an xattr value: version 2, one USER_OBJ, GROUP_OBJ
 * and OTHER, a MASK when there is a named entry, named ids sorted and
 * unique, perms within 7. Returns 0 or -EINVAL. */
int acl_decode(const void *value, size_t size, struct sfs_acl *a);

/* Encodes a into out (SFS_ACL_SIZE(a->n) bytes); returns the size. The
 * ids of unnamed entries are written as 0xffffffff, as Linux does. */
size_t acl_encode(const struct sfs_acl *a, void *out);

/* The permission bits (0777) a says for the mode; *minimal is set when a
 * has only the three entries the mode can express (invariant 2). */
uint32_t acl_mode(const struct sfs_acl *a, bool *minimal);

/* chmod: sets ACL_USER_OBJ, ACL_MASK (else ACL_GROUP_OBJ) and ACL_OTHER
 * from mode's permission bits; named entries stay. */
void acl_chmod(struct sfs_acl *a, uint32_t mode);

/* Inheritance: turns a copy of the parent's default ACL into the new
 * inode's access ACL, masked by the create mode, and the mode's
 * permission bits into what that ACL says. Returns true when the ACL has
 * more than the mode can say (it must be stored). */
bool acl_inherit(struct sfs_acl *a, uint32_t *mode);

/* Group membership of the caller, for acl_permits. */
typedef bool (*acl_in_group_fn)(void *arg, uint32_t gid);

/* The POSIX.1e access check of uid (not root) against a on an inode owned
 * by owner:group: the owner entry, else a named user (masked), else the
 * owning group and named groups the caller is in (masked; granted if one
 * of them grants all of want, denied if some match and none do), else
 * other. want: 4 read, 2 write, 1 execute. Returns true if granted. */
bool acl_permits(const struct sfs_acl *a, uint32_t uid, uint32_t owner, uint32_t group,
                 acl_in_group_fn in_group, void *arg, unsigned want);

/* Reads inode ino's ACL of the given type into *a. Returns 0, -ENODATA
 * when it has none, -EUCLEAN for a stored value that does not decode,
 * or -errno. Cheap for an inode with no xattrs (no block is read). */
int sfs_acl_get(struct sfs *fs, uint64_t ino, enum sfs_acl_type type, struct sfs_acl *a);

#ifdef __cplusplus
}
#endif

#endif
