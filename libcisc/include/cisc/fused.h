/*
 * cisc/fused.h - fused (CISC) operations: one command that opens, reads,
 * computes, writes and closes inside the device, with one round trip and
 * no system call. Included by <cisc/cisc.h>.
 *
 * A fused op is a vector of up to CISC_VEC_MAX steps, built with the
 * cisc_vec_* calls below and submitted as one command:
 *
 *   struct cisc_vec v;
 *   cisc_vec_init(&v, q);
 *   int f = cisc_vec_open(&v, "log", O_WRONLY | O_APPEND, 0);
 *   cisc_vec_append(&v, f, CISC_IN_BUF(rec, len));              data ...
 *   int c = cisc_vec_crc32c(&v, CISC_IN_BUF(rec, len), 0);
 *   cisc_vec_append(&v, f, CISC_IN_STEP(c));                     ... then its checksum
 *   int64_t st = cisc_vec_submit(&v);                            one round trip
 *   cisc_vec_free(&v);
 *
 * Steps. Every builder call appends one step and returns its index
 * (>= 0), or a negative errno for a bad argument; the first error sticks
 * in the vector and is what cisc_vec_submit() returns, without
 * submitting, so a sequence of calls needs only one check at the end.
 * A step's data input is either bytes in memory, CISC_IN_BUF(p, n) (zero-
 * copy when p is an arena buffer of the vector's queue, else copied into
 * the arena when the step is added), or the output of an earlier step,
 * CISC_IN_STEP(i): the device hands that buffer over in its own memory,
 * it never comes back to the host. File steps act on a file opened by an
 * earlier cisc_vec_open() step (pass its index) or on a handle of the
 * session (pass cisc_vec_fh(&v, fh)); a vector may touch several files.
 *
 * Execution. Steps run in order inside the device. Consecutive compute
 * steps marked cisc_vec_independent() that do not use each other's output
 * may run in parallel on free device cores. Before the first step runs,
 * the device checks every step's permissions against the session's
 * credentials: a fused op never stops halfway for lack of permission.
 *
 * All or nothing (MacroTx, the default). A fused op that changes files
 * commits as one journal transaction. If a step fails, none of the op's
 * changes are applied: the failing step's result is its -errno and every
 * later step reports -ECANCELED ("did not run"); the op's status is the
 * failing step's -errno. A crash of the device leaves each op entirely
 * applied or entirely absent.
 *
 * Step by step (MicroTx: `cisc up --tx micro`, or cisc_vec_set_tx()).
 * Each step that changes a file commits on its own, in step order (durably
 * when the op has an FSYNC step). A failing step's changes are undone and
 * it reports its -errno; every later step that takes its output or its
 * file (directly or through another step) reports -ECANCELED; the other
 * later steps still run; what committed stays. The op's status is the
 * first failure's -errno. A crash leaves a prefix of the op's steps
 * applied. Outputs asked for with cisc_vec_out_to() are copied
 * for every step that completed; after a failure the other output
 * buffers hold unspecified bytes.
 *
 * Results. After completion, cisc_vec_ret(&v, i) is step i's result
 * (bytes read or written, output bytes of a compute step, 0, or -errno)
 * and cisc_vec_out_len(&v, i) the length of its output (for an append:
 * the file offset where its data landed).
 *
 * Asynchronous use and batching. cisc_vec_submit_async() returns once the
 * op is in the submission ring; cisc_vec_wait() or cisc_vec_poll() reaps
 * it. cisc_vec_submit_batch() submits several vectors of one queue with a
 * single doorbell. A vector in flight must not be changed or freed.
 *
 * Keys. Encryption steps name a key registered once per session with
 * cisc_key_add(): key bytes never travel in commands.
 *
 * Thread safety: a vector belongs to its queue's thread.
 */
#ifndef CISC_FUSED_H
#define CISC_FUSED_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef CISC_API
#define CISC_API __attribute__((visibility("default")))
#endif

struct cisc_queue;
struct cisc_session;

#define CISC_VEC_MAX     64          /* steps per fused op */
#define CISC_VEC_MAX_FH  16          /* session handles one vector may name */
#define CISC_VEC_FH_BASE 0x10000     /* file ids from cisc_vec_fh() start here */
#define CISC_KEY_BYTES   32          /* XChaCha20-Poly1305 keys */
#define CISC_SEAL_BYTES  40          /* encryption adds nonce (24) + tag (16) */

#define CISC_SRC_BUF (-0x7fffffff - 1)   /* cisc_src.step of a buffer input */

/* A data input: an earlier step's output, or len bytes at buf. A negative
 * step (an error returned by an earlier builder call) makes the step that
 * uses it fail with that error. */
struct cisc_src {
    int step;                        /* >= 0: a step; CISC_SRC_BUF: buf */
    const void *buf;
    size_t len;
};

static inline struct cisc_src cisc_in_step(int step)
{
    struct cisc_src s = { step, NULL, 0 };
    return s;
}

static inline struct cisc_src cisc_in_buf(const void *buf, size_t len)
{
    struct cisc_src s = { CISC_SRC_BUF, buf, len };
    return s;
}

#define CISC_IN_STEP(i)   cisc_in_step(i)
#define CISC_IN_BUF(p, n) cisc_in_buf((p), (n))

/* A fused op being built or in flight. The fields are private to the
 * library: use the calls below. */
struct cisc_vec {
    struct cisc_queue *q;
    unsigned n;                      /* steps so far */
    int err;                         /* first builder error */
    int state;                       /* 0 building, 1 in flight, 2 done */
    uint64_t area;                   /* arena offset: steps, then results */
    void *steps, *res;
    uint64_t token;
    int64_t status;
    unsigned ran;
    unsigned nfh, nout, ntmp;
    uint64_t fh[CISC_VEC_MAX_FH];
    struct {
        unsigned step;
        void *dst;                   /* caller's buffer (not in the arena) */
        uint64_t aoff;               /* arena staging of the output */
        size_t cap;
    } out[CISC_VEC_MAX];
    uint64_t tmp[2 * CISC_VEC_MAX];  /* arena space staged for this op */
    unsigned tx;                     /* enum cisc_tx asked for */
};

/* Transaction modes (see "All or nothing" and "Step by step" above). The
 * device runs an op in the stronger of the mode it asks for and the
 * device's default (`cisc up --tx`). */
enum cisc_tx {
    CISC_TX_DEFAULT = 0,             /* the device's default */
    CISC_TX_MACRO = 1,               /* all or nothing */
    CISC_TX_MICRO = 2,               /* each mutating step commits on its own */
    CISC_TX_AUTOREC = 3,             /* micro, logged first, finished by the device after
                                        a crash (docs/LIBCISC.md: what it covers) */
};

/* ---- building ---------------------------------------------------------- */

/* Prepares v for building an op on queue q (reserves arena space for
 * the step and result arrays). v is the caller's (often on the stack);
 * release it with cisc_vec_free(). Returns 0 or -errno (-ENOMEM: arena
 * full, -EINVAL). */
CISC_API int cisc_vec_init(struct cisc_vec *v, struct cisc_queue *q);

/* Releases v's arena space. v must not be in flight (wait for it first).
 * v may be reused only after cisc_vec_init. */
CISC_API void cisc_vec_free(struct cisc_vec *v);

/* Empties v for a new op on the same queue (keeps its arena space).
 * v must not be in flight. */
CISC_API void cisc_vec_reset(struct cisc_vec *v);

/* A file id for session handle fh (from cisc_open on the same session),
 * to pass where a file step expects a file. Returns the id or -errno
 * (-E2BIG: more than CISC_VEC_MAX_FH handles). */
CISC_API int cisc_vec_fh(struct cisc_vec *v, uint64_t fh);

/* OPEN step: path (relative to the device root), flags O_RDONLY /
 * O_WRONLY / O_RDWR plus O_CREAT, O_EXCL, O_TRUNC, O_APPEND, O_NOFOLLOW;
 * mode for a new file. The file stays open for later steps of the op and
 * is closed when the op ends. Returns the step index (a file for later
 * steps) or -errno. */
CISC_API int cisc_vec_open(struct cisc_vec *v, const char *path, int flags, mode_t mode);

/* CLOSE step (a session handle's id closes that handle when the op
 * succeeds; later steps may not use it). Returns the index or -errno. */
CISC_API int cisc_vec_close(struct cisc_vec *v, int file);

/* READ step: up to len bytes at off; its output (<= len bytes) is an
 * input for later steps. Returns the index or -errno. */
CISC_API int cisc_vec_read(struct cisc_vec *v, int file, uint64_t off, size_t len);

/* WRITE step: in at offset off (at the end for O_APPEND files).
 * Result: bytes written. Returns the index or -errno. */
CISC_API int cisc_vec_write(struct cisc_vec *v, int file, uint64_t off, struct cisc_src in);

/* APPEND step: in at the end of the file, atomically; out_len tells the
 * offset where it landed. Returns the index or -errno. */
CISC_API int cisc_vec_append(struct cisc_vec *v, int file, struct cisc_src in);

/* TRUNCATE step: sets the size. Returns the index or -errno. */
CISC_API int cisc_vec_truncate(struct cisc_vec *v, int file, uint64_t size);

/* FSYNC step: the op commits durably (data and metadata; datasync is
 * accepted for symmetry). Returns the index or -errno. */
CISC_API int cisc_vec_fsync(struct cisc_vec *v, int file, int datasync);

/* UNLINK step. Returns the index or -errno. */
CISC_API int cisc_vec_unlink(struct cisc_vec *v, const char *path);

/* Compute steps. Each returns its index or -errno. */
/* CRC-32C (Castagnoli) of in, continued from seed: 4 bytes, little-endian. */
CISC_API int cisc_vec_crc32c(struct cisc_vec *v, struct cisc_src in, uint32_t seed);
/* XXH3-64 of in with seed: 8 bytes, little-endian. */
CISC_API int cisc_vec_xxh3(struct cisc_vec *v, struct cisc_src in, uint64_t seed);
/* One zstd frame of in at level (zstd's range, negative = fast). */
CISC_API int cisc_vec_compress(struct cisc_vec *v, struct cisc_src in, int level);
/* The content of zstd data in, at most max_out bytes (-EOVERFLOW beyond,
 * -EBADMSG for corrupt input). */
CISC_API int cisc_vec_decompress(struct cisc_vec *v, struct cisc_src in, size_t max_out);
/* nonce || ciphertext || tag (CISC_SEAL_BYTES more than in) with key. */
CISC_API int cisc_vec_encrypt(struct cisc_vec *v, struct cisc_src in, uint32_t key_id);
/* The plaintext of what cisc_vec_encrypt made (-EBADMSG if forged). */
CISC_API int cisc_vec_decrypt(struct cisc_vec *v, struct cisc_src in, uint32_t key_id);
/* Fails the op with -EBADMSG unless step a's output equals b. */
CISC_API int cisc_vec_verify(struct cisc_vec *v, int a, struct cisc_src b);
/* Step base's output with patch copied over it at offset at (growing
 * it, zero gap, if needed). */
CISC_API int cisc_vec_patch(struct cisc_vec *v, int base, uint64_t at, struct cisc_src patch);
/* Step a's output followed by b. */
CISC_API int cisc_vec_concat(struct cisc_vec *v, int a, struct cisc_src b);

/* Marks step i independent: it may run in parallel with neighbouring
 * independent compute steps. Returns 0 or -errno. */
CISC_API int cisc_vec_independent(struct cisc_vec *v, int i);

/* Recovery records (autorec): after a crash, the device finishes the
 * autorec ops it had accepted at its next start and keeps one record per
 * op, owned by the op's uid, until acknowledged. cisc_recovery_list()
 * copies the session uid's records (root: everyone's) into buf, NUL-
 * terminated when it fits: one line "recovery op NAME uid U steps N
 * committed C status S" per op (S: 0 or -errno; C: steps that had
 * committed before the crash), then "recovery op NAME step I error TEXT"
 * per step that failed during recovery. Returns the text's length or
 * -errno. cisc_recovery_ack() removes record NAME: 0, or -ENOENT when
 * the session's uid has none of that name. */
CISC_API ssize_t cisc_recovery_list(struct cisc_session *s, char *buf, size_t size);
CISC_API int cisc_recovery_ack(struct cisc_session *s, const char *name);

/* Asks for transaction mode tx (enum cisc_tx) for this op; a mode weaker
 * than the device's default changes nothing. Kept across
 * cisc_vec_reset(). Returns 0 or -EINVAL (unknown mode; sticks in v like
 * a builder error). */
CISC_API int cisc_vec_set_tx(struct cisc_vec *v, int tx);

/* Asks for step i's output in buf (cap bytes, at least what the step can
 * produce: its READ length, 4 for crc32c ...). Zero-copy when buf is an
 * arena buffer of the queue; otherwise copied after completion.
 * Returns 0 or -errno (-EINVAL: no output, -ENOSPC: cap too small). */
CISC_API int cisc_vec_out_to(struct cisc_vec *v, int i, void *buf, size_t cap);

/* ---- submitting ----------------------------------------------------------- */

/* Submits v and waits for it. Returns the op's status: 0, or the failing
 * step's -errno (or the builder's first error, or a transport error such
 * as -ENOTCONN; then no step ran). */
CISC_API int64_t cisc_vec_submit(struct cisc_vec *v);

/* Submits v without waiting. Returns 0 or -errno (nothing submitted). */
CISC_API int cisc_vec_submit_async(struct cisc_vec *v);

/* Submits n vectors built on the same queue with one doorbell, without
 * waiting. Returns 0 or -errno (then none was submitted). */
CISC_API int cisc_vec_submit_batch(struct cisc_vec *const *vs, unsigned n);

/* Waits for an op submitted asynchronously. Returns its status. */
CISC_API int64_t cisc_vec_wait(struct cisc_vec *v);

/* Checks once: returns -EAGAIN while in flight, else the op's status. */
CISC_API int64_t cisc_vec_poll(struct cisc_vec *v);

/* ---- results -------------------------------------------------------------- */

/* Step i's result: >= 0, or -errno (-ECANCELED: did not run). */
CISC_API int64_t cisc_vec_ret(const struct cisc_vec *v, int i);

/* Step i's output length (APPEND: the offset its data landed at). */
CISC_API uint64_t cisc_vec_out_len(const struct cisc_vec *v, int i);

/* Number of steps that completed (all of them when the status is 0). */
CISC_API unsigned cisc_vec_ran(const struct cisc_vec *v);

/* ---- keys ------------------------------------------------------------------ */

/* Registers a CISC_KEY_BYTES-byte key with the device for this session
 * (it is wiped there when the session ends) and sets *id for
 * cisc_vec_encrypt/decrypt. The caller keeps (and should wipe) its copy.
 * Returns 0 or -errno (-ENOSPC: too many keys). */
CISC_API int cisc_key_add(struct cisc_session *s, const uint8_t key[CISC_KEY_BYTES],
                          uint32_t *id);

/* Removes key id from the session's registry. Returns 0 or -ENOKEY. */
CISC_API int cisc_key_remove(struct cisc_session *s, uint32_t id);

/* ---- convenience calls: FusionFS Table 2, each ONE fused op ------------------ */

/* open(path, O_WRONLY | flags, mode) -> pwrite(buf, len, off) -> close.
 * Returns bytes written or -errno. */
CISC_API ssize_t cisc_open_write_close(struct cisc_queue *q, const char *path, int flags,
                                       mode_t mode, const void *buf, size_t len, uint64_t off);

/* open(path, O_RDONLY) -> pread(buf, len, off) -> close.
 * Returns bytes read or -errno. */
CISC_API ssize_t cisc_open_read_close(struct cisc_queue *q, const char *path, void *buf,
                                      size_t len, uint64_t off);

/* pwrite(fh, buf, len, off) -> fsync: durable when it returns.
 * Returns bytes written or -errno. */
CISC_API ssize_t cisc_write_fsync(struct cisc_queue *q, uint64_t fh, const void *buf,
                                  size_t len, uint64_t off);

/* Reads len bytes of fh at off, copies patch (plen bytes) over them at
 * offset `at` inside that block, writes the block back: one atomic
 * read-modify-write. Returns the bytes written or -errno. */
CISC_API ssize_t cisc_read_modify_write(struct cisc_queue *q, uint64_t fh, uint64_t off,
                                        size_t len, const void *patch, size_t plen,
                                        size_t at);

/* Appends buf, then its CRC-32C (4 bytes, little-endian), to fh - the
 * record format of LevelDB's log. *off (may be NULL) receives where the
 * record starts. Returns len or -errno. */
CISC_API ssize_t cisc_append_crc_write(struct cisc_queue *q, uint64_t fh, const void *buf,
                                       size_t len, uint64_t *off);

/* Reads a record written by cisc_append_crc_write (len data bytes at
 * off, then 4 checksum bytes) and verifies it in the device: copies the
 * data into buf and returns len, or -EBADMSG when the checksum does not
 * match (or the record is short), or -errno. */
CISC_API ssize_t cisc_read_verify_crc(struct cisc_queue *q, uint64_t fh, uint64_t off,
                                      void *buf, size_t len);

/* Reads len bytes of in_fh at in_off, compresses them (zstd level) and
 * appends the frame to out_fh; *out_off (may be NULL) receives where it
 * landed. Returns the frame's size or -errno. */
CISC_API ssize_t cisc_read_compress_write(struct cisc_queue *q, uint64_t in_fh,
                                          uint64_t in_off, size_t len, uint64_t out_fh,
                                          int level, uint64_t *out_off);

/* Reads the zstd frame of len bytes at off in fh and decompresses it
 * into buf (at most cap bytes). Returns the content's size or -errno
 * (-EBADMSG: corrupt, -EOVERFLOW: larger than cap). */
CISC_API ssize_t cisc_read_decompress(struct cisc_queue *q, uint64_t fh, uint64_t off,
                                      size_t len, void *buf, size_t cap);

/* Reads len bytes of in_fh at in_off, encrypts them with key_id and
 * appends nonce || ciphertext || tag (len + CISC_SEAL_BYTES) to out_fh;
 * *out_off (may be NULL) receives where it landed. Returns the sealed
 * size or -errno. */
CISC_API ssize_t cisc_read_encrypt_write(struct cisc_queue *q, uint64_t in_fh,
                                         uint64_t in_off, size_t len, uint64_t out_fh,
                                         uint32_t key_id, uint64_t *out_off);

/* Reads len sealed bytes at off in fh and decrypts them into buf (at
 * most cap bytes). Returns the plaintext size or -errno (-EBADMSG:
 * forged, truncated or the wrong key). */
CISC_API ssize_t cisc_read_decrypt(struct cisc_queue *q, uint64_t fh, uint64_t off,
                                   size_t len, uint32_t key_id, void *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
