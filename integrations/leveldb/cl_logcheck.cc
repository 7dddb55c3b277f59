// integrations/leveldb/cl_logcheck.cc - the device checks LevelDB log
// records next to the data it writes (cisc_leveldb.h, invariant 4).
//
// LevelDB's log (db/log_format.h) is a sequence of 32 KiB blocks; a block
// holds records and, when fewer than 7 bytes are left, a zero trailer. A
// record is a 7-byte header - masked CRC-32C (4, little-endian), payload
// length (2, little-endian), type (1) - then the payload; the CRC covers
// type and payload, and is stored masked: rotated right by 15 bits plus
// 0xa282ead8. The device computes plain CRC-32C, so the host unmasks the
// stored value and the device compares: CRC32C step over bytes [6, 7+len)
// of the record, VERIFY step against the unmasked value.
#include "integrations/leveldb/cl_int.h"

namespace cisc::ldb {
namespace {

constexpr uint64_t kBlock = 32768;
constexpr uint64_t kHeader = 7;
constexpr uint32_t kMaskDelta = 0xa282ead8u;

uint32_t Unmask(uint32_t masked)
{
    uint32_t rot = masked - kMaskDelta;
    return (rot >> 17) | (rot << 15);
}

uint32_t Le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

// Adds the two steps that check the record whose header is at h.
int AddCheck(struct cisc_vec *v, const unsigned char *h, size_t payload)
{
    uint32_t want = Unmask(Le32(h));
    unsigned char le[4] = { (unsigned char)want, (unsigned char)(want >> 8),
                            (unsigned char)(want >> 16), (unsigned char)(want >> 24) };
    int c = cisc_vec_crc32c(v, CISC_IN_BUF(h + 6, 1 + payload), 0);
    int r = cisc_vec_verify(v, c, CISC_IN_BUF(le, sizeof(le)));
    return r < 0 ? r : 0;
}

}  // namespace

bool IsLogName(const std::string &fname)
{
    size_t slash = fname.rfind('/');
    std::string base = fname.substr(slash == std::string::npos ? 0 : slash + 1);
    bool log = base.size() > 4 && base.compare(base.size() - 4, 4, ".log") == 0;
    return log || base.rfind("MANIFEST-", 0) == 0;
}

int LogCheckAdd(struct cisc_vec *v, LogCursor *c, const char *buf, size_t len, uint64_t off,
                unsigned max_records)
{
    const uint64_t end = off + len;
    int n = 0;
    for (;;) {
        uint64_t left = kBlock - c->next % kBlock;
        if (left < kHeader) {
            c->next += left;   // the block's zero trailer
            continue;
        }
        if (c->next + kHeader > end)
            return n;
        if (c->next < off) {   // its header began in an earlier flush
            c->lost = true;
            return n;
        }
        const unsigned char *h = (const unsigned char *)buf + (c->next - off);
        size_t payload = (size_t)h[4] | (size_t)h[5] << 8;
        uint64_t rec_end = c->next + kHeader + payload;
        if (rec_end <= end && (unsigned)n < max_records) {
            int r = AddCheck(v, h, payload);
            if (r)
                return r;
            n++;
        }
        c->next = rec_end;
    }
}

}  // namespace cisc::ldb
