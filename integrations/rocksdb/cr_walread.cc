// integrations/rocksdb/cr_walread.cc - WAL reads whose records the device
// checks before the bytes leave it (cisc_rocksdb.h, invariant 6).
//
// One fused op per read: READ of up to 1 MiB at a 32 KiB-aligned offset,
// then a BPF step running the WAL-check program (bpf/walcheck.c) over the
// bytes read in 32 KiB blocks - one invocation per log block - whose
// output is the bytes before the first record with a wrong CRC. The op's
// result comes back to the host as the program's output only. The program
// is linked into the library and loaded into the device on first use
// (cisc_rocksdb.h, invariant 6).
#include "integrations/rocksdb/cr_int.h"

// The WAL-check program's object (bpf/walcheck.c, compiled by the build),
// linked into the library so that it needs no file at run time.
extern "C" const unsigned char cr_walcheck_obj[], cr_walcheck_obj_end[];
asm(".section .rodata\n"
    ".balign 8\n"
    ".global cr_walcheck_obj\n"
    ".hidden cr_walcheck_obj\n"
    "cr_walcheck_obj:\n"
    ".incbin \"" CR_WALCHECK_OBJ "\"\n"
    ".global cr_walcheck_obj_end\n"
    ".hidden cr_walcheck_obj_end\n"
    "cr_walcheck_obj_end:\n"
    ".previous\n");

namespace cisc::rdb {
namespace {

constexpr uint32_t kLogBlock = 32768;   // RocksDB's log::kBlockSize

// The program's name in the device: versioned, because a stored program
// of the same name stays in the image across library upgrades.
constexpr const char *kWalProgName = "rocksdb-walcheck-1";

// One op READ [+ BPF]; sets *read to the READ step's bytes and returns
// the bytes delivered into buf, or -errno.
ssize_t ReadChecked(struct cisc_queue *q, uint64_t fh, char *buf, size_t len, uint64_t off,
                    uint32_t prog, ssize_t *read)
{
    struct cisc_vec v;
    int r = cisc_vec_init(&v, q);
    if (r)
        return r;
    int rd = cisc_vec_read(&v, cisc_vec_fh(&v, fh), off, len);
    int out = rd;
    if (prog) {
        struct cisc_bpf_opts o = {};
        o.block_size = kLogBlock;
        o.block_out = kLogBlock;
        o.offset = off;
        o.out_cap = len;
        out = cisc_vec_bpf(&v, prog, CISC_IN_STEP(rd), &o);
    }
    cisc_vec_out_to(&v, out, buf, len);
    int64_t st = cisc_vec_submit(&v);
    *read = st < 0 ? st : cisc_vec_ret(&v, rd);
    ssize_t got = st < 0 ? st : (ssize_t)cisc_vec_out_len(&v, out);
    cisc_vec_free(&v);
    return got;
}

}  // namespace

uint32_t Session::WalProg()
{
    std::call_once(prog_once_, [this] {
        struct cisc_prog_load_opts o = {};
        o.name = kWalProgName;
        struct cisc_prog_info info;
        size_t size = (size_t)(cr_walcheck_obj_end - cr_walcheck_obj);
        int r = cisc_prog_load(raw(), cr_walcheck_obj, size, &o, &info, nullptr, 0);
        if (r == 0)
            prog_ = info.id;
        else if (r == -EEXIST && cisc_prog_id(raw(), kWalProgName, &prog_) != 0)
            prog_ = 0;
    });
    return prog_;
}

ssize_t WalRead(Session &s, uint64_t fh, char *buf, size_t len, uint64_t off, uint32_t prog,
                bool *damaged)
{
    struct cisc_queue *q;
    s.Settle();   // a live WAL: what was flushed (integ invariant 5)
    int r = s.Queue(&q);
    if (r)
        return r;
    ssize_t read = 0;
    ssize_t got = ReadChecked(q, fh, buf, len, off, prog, &read);
    if (got < 0 && prog && got != -ENOTCONN) {   // the program failed (budget ...): read plainly
        prog = 0;
        got = ReadChecked(q, fh, buf, len, off, 0, &read);
    }
    if (got < 0)
        return got;
    s.wal_read_ops++;
    s.wal_checked_ops += prog != 0;
    if (got < read) {   // a damaged record at off + got: the caller reads on plainly
        *damaged = true;
        s.wal_damaged++;
    }
    return got;
}

}  // namespace cisc::rdb
