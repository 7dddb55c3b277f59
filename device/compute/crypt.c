/* device/compute/crypt.c - ENCRYPT / DECRYPT steps: XChaCha20-Poly1305
 * IETF with a key from the session's registry and a random 24-byte nonce
 * per encryption, stored in front of the ciphertext. */
#include "device/compute/compute.h"
#include "device/compute/keys.h"

#include <errno.h>
#include <sodium.h>

_Static_assert(CMP_NONCE_BYTES == crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, "nonce");
_Static_assert(CMP_TAG_BYTES == crypto_aead_xchacha20poly1305_ietf_ABYTES, "tag");
_Static_assert(CKEY_BYTES == crypto_aead_xchacha20poly1305_ietf_KEYBYTES, "key");

static int seal(const uint8_t key[CKEY_BYTES], void *arg)
{
    struct cmp_io *io = arg;
    uint8_t *nonce = io->out;
    unsigned long long clen = 0;
    randombytes_buf(nonce, CMP_NONCE_BYTES);
    crypto_aead_xchacha20poly1305_ietf_encrypt(io->out + CMP_NONCE_BYTES, &clen, io->in,
                                               io->in_len, NULL, 0, NULL, nonce, key);
    io->out_len = CMP_NONCE_BYTES + (size_t)clen;
    return 0;
}

static int open_box(const uint8_t key[CKEY_BYTES], void *arg)
{
    struct cmp_io *io = arg;
    unsigned long long mlen = 0;
    if (crypto_aead_xchacha20poly1305_ietf_decrypt(io->out, &mlen, NULL,
                                                   io->in + CMP_NONCE_BYTES,
                                                   io->in_len - CMP_NONCE_BYTES, NULL, 0,
                                                   io->in, key))
        return -EBADMSG;
    io->out_len = (size_t)mlen;
    return 0;
}

int cmp_encrypt(struct cmp_io *io)
{
    if (io->in_len > crypto_aead_xchacha20poly1305_ietf_MESSAGEBYTES_MAX ||
        io->out_cap < CMP_SEAL_BYTES || io->in_len > io->out_cap - CMP_SEAL_BYTES)
        return -EOVERFLOW;
    return ckey_with(io->keys, io->key_id, seal, io);
}

int cmp_decrypt(struct cmp_io *io)
{
    if (io->in_len < CMP_SEAL_BYTES)
        return -EBADMSG;
    if (io->in_len - CMP_SEAL_BYTES > io->out_cap)
        return -EOVERFLOW;
    return ckey_with(io->keys, io->key_id, open_box, io);
}
