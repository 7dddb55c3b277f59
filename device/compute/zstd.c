/* device/compute/zstd.c - zstd compress / decompress steps with one
 * compression and one decompression context per device core (thread),
 * freed when the thread exits. */
#include "device/compute/compute.h"

#include <errno.h>
#include <pthread.h>
#include <zstd.h>
#include <zstd_errors.h>

static pthread_key_t cctx_key, dctx_key;
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;

static void free_cctx(void *p)
{
    ZSTD_freeCCtx(p);
}

static void free_dctx(void *p)
{
    ZSTD_freeDCtx(p);
}

static void make_keys(void)
{
    pthread_key_create(&cctx_key, free_cctx);
    pthread_key_create(&dctx_key, free_dctx);
}

static ZSTD_CCtx *cctx(void)
{
    pthread_once(&keys_once, make_keys);
    ZSTD_CCtx *c = pthread_getspecific(cctx_key);
    if (!c && (c = ZSTD_createCCtx()) != NULL)
        pthread_setspecific(cctx_key, c);
    return c;
}

static ZSTD_DCtx *dctx(void)
{
    pthread_once(&keys_once, make_keys);
    ZSTD_DCtx *d = pthread_getspecific(dctx_key);
    if (!d && (d = ZSTD_createDCtx()) != NULL)
        pthread_setspecific(dctx_key, d);
    return d;
}

int cmp_zstd_compress(struct cmp_io *io)
{
    ZSTD_CCtx *c = cctx();
    if (!c)
        return -ENOMEM;
    size_t n = ZSTD_compressCCtx(c, io->out, io->out_cap, io->in, io->in_len,
                                 (int)(int64_t)io->arg[0]);
    if (ZSTD_isError(n))
        return ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall ? -EOVERFLOW : -EINVAL;
    io->out_len = n;
    return 0;
}

int cmp_zstd_decompress(struct cmp_io *io)
{
    ZSTD_DCtx *d = dctx();
    if (!d)
        return -ENOMEM;
    /* A frame that declares more content than fits is refused before any
     * work; frames without a declared size are bounded by out_cap anyway. */
    unsigned long long decl = ZSTD_getFrameContentSize(io->in, io->in_len);
    if (decl == ZSTD_CONTENTSIZE_ERROR)
        return -EBADMSG;
    if (decl != ZSTD_CONTENTSIZE_UNKNOWN && decl > io->out_cap)
        return -EOVERFLOW;
    size_t n = ZSTD_decompressDCtx(d, io->out, io->out_cap, io->in, io->in_len);
    if (ZSTD_isError(n)) {
        ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
        return ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall ? -EOVERFLOW : -EBADMSG;
    }
    io->out_len = n;
    return 0;
}
