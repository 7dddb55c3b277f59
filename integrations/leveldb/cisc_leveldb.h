// integrations/leveldb/cisc_leveldb.h - a leveldb::Env that serves the
// files of a database under a ciscfs mount through libcisc, directly over
// shared-memory queue pairs, instead of through system calls and the FUSE
// mount (libcisc-leveldb.so; docs/APPS.md, "LevelDB").
//
//   std::unique_ptr<leveldb::Env> env;
//   leveldb::Status st = cisc::NewLevelDbEnv("/mnt/cisc", &env);
//   leveldb::Options o;  o.env = env.get();  o.create_if_missing = true;
//   leveldb::DB::Open(o, "/mnt/cisc/db", &db);      // the Env outlives db
//
// Invariants:
//  1. Only files under the mount point are served through libcisc; every
//     other path, and everything that is not a file (locks, threads,
//     background work, time, the info LOG), goes to leveldb::Env::Default(),
//     so a database outside the mount works as with the default Env.
//  2. The Env holds one libcisc session; each thread that touches a file
//     gets its own queue pair, made on its first call and destroyed when the
//     thread exits (or with the session, whichever comes first). File
//     handles belong to the session, so a file may be used from any thread.
//  3. WritableFile appends are buffered in the process (64 KiB) and reach
//     the device on Flush, Sync, Close or a full buffer, as one WRITE step
//     at the file's end (a Flush is never deferred: what LevelDB flushed
//     survives the process dying; a write without checks, a table's, is
//     submitted without waiting for it: write-behind, its failure reported
//     by the file's next call, reads wait for it). Sync sends the
//     buffered bytes and the FSYNC as ONE fused op. LevelDB flushes each
//     log record before it syncs it, so once a file's flushes were twice
//     followed by a Sync, its flushes are sent WITH an FSYNC step and the
//     Sync that follows returns at once: a synced put costs one round
//     trip. Three flushes without a Sync end that (an FSYNC is only ever
//     added, never left out).
//  4. For LevelDB's log files (*.log, MANIFEST-*), the device verifies each
//     whole record a flush carries against the record's own checksum
//     (CRC-32C of type and payload, computed by a device step and compared
//     with the unmasked header checksum) in the same fused op as the write:
//     a record damaged between LevelDB and the media fails the write with
//     Status::Corruption, and nothing of that op is written. LevelDB's
//     format puts a masked CRC before the payload, so the device cannot
//     produce it; the host still computes it and the device checks it.
//  5. A table file LevelDB opens for random reads is read whole into memory
//     at open (tables never change once written), up to 256 MiB of them per
//     Env, the rest read with one pread per block: the default Env mmaps
//     tables, and a round trip per block read would lose to the page cache.
//  6. The Env's files see the same bytes as the FUSE mount at all times
//     (both doors reach the same engine): the database may be opened by the
//     default Env on the mount afterwards, and the other way round.
#pragma once

#include <leveldb/env.h>

#include <cstdint>
#include <memory>
#include <string>

namespace cisc {

// Makes an Env serving files under `mountpoint` (a running ciscfs mount)
// through libcisc. On success *out owns it; it must outlive every DB that
// uses it. Returns OK, or IOError naming libcisc's reason (not a ciscfs
// mount, device gone ...).
leveldb::Status NewLevelDbEnv(const std::string &mountpoint, std::unique_ptr<leveldb::Env> *out);

// Counters of one Env, for tests and benchmarks.
struct LevelDbEnvStats {
    uint64_t write_ops;        // fused ops that wrote (WRITE, optionally FSYNC)
    uint64_t sync_ops;         // of those, ops that carried an FSYNC step
    uint64_t verified_records; // log records the device checked (invariant 4)
    uint64_t queues;           // queue pairs made so far (one per thread)
    uint64_t syncs_answered;   // Syncs answered by the flush's WRITE + FSYNC op
    uint64_t behind_ops;       // write ops submitted without waiting (invariant 3)
};

// The counters of env, which must come from NewLevelDbEnv (else all zero).
LevelDbEnvStats LevelDbEnvStatsOf(leveldb::Env *env);

}  // namespace cisc
