// integrations/rocksdb/cisc_rocksdb.h - a rocksdb::FileSystem that serves
// the files of a database under a ciscfs mount through libcisc, directly
// over shared-memory queue pairs, instead of through system calls and the
// FUSE mount (libcisc-rocksdb.so; docs/APPS.md, "RocksDB").
//
//   std::shared_ptr<rocksdb::FileSystem> fs;
//   rocksdb::Status st = cisc::NewRocksDbFileSystem("/mnt/cisc", &fs);
//   std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
//   rocksdb::Options o;  o.env = env.get();  o.create_if_missing = true;
//   rocksdb::DB::Open(o, "/mnt/cisc/db", &db);        // env outlives db
//
// Loading the library also registers the URI scheme "ciscfs://MOUNT" with
// RocksDB's object registry, so an unmodified program that takes a file
// system URI uses it:
//
//   LD_PRELOAD=libcisc-rocksdb.so db_bench --fs_uri=ciscfs:///mnt/cisc
//       --db=/mnt/cisc/db --benchmarks=fillrandom        (one command line)
//
// Invariants:
//  1. Only files under the mount point are served through libcisc: opening,
//     reading and writing files, listing, removing, renaming, sizes and
//     existence. Every other path, and everything else (locks, the info
//     LOG, directory fsync, links, modification times), goes to
//     rocksdb::FileSystem::Default(), i.e. through the FUSE mount for
//     paths under it: both doors reach the same engine, so they always see
//     the same files.
//  2. The file system holds one libcisc session; each thread that touches
//     a file gets its own queue pair, made on its first call and destroyed
//     when the thread exits (or with the session). File handles belong to
//     the session, so a file may be used from any thread.
//  3. Writable files buffer appends (64 KiB) and send them on Flush, Sync,
//     Close or a full buffer as ONE fused op: WRITE at the file's end, with
//     an FSYNC step for Sync. Once a file's flushes were twice followed by
//     a Sync (RocksDB's synced WAL writes: Append, Flush, Sync), each flush
//     carries the FSYNC and the Sync returns at once: a synced put is one
//     round trip. A flush is never held back; one that carries no FSYNC
//     and no hand-off check is not waited for (write-behind, on the file's
//     own queue pair: an unsynced put costs no round trip). It survives
//     the process dying once submitted; the next call on the file reports
//     its failure, a Sync covers it, and reads wait for it. A file's Sync
//     may be called beside its appends from another thread
//     (IsSyncThreadSafe: DB::SyncWAL, FlushWAL(true)); it makes durable
//     everything appended before it.
//  4. Checksum hand-off: when RocksDB passes the CRC-32C of an Append
//     (Options::checksum_handoff_file_types), the device computes the CRC
//     of those bytes and compares it in the op that writes them; a
//     mismatch fails the write as Corruption and nothing of it is written.
//  5. A table file (*.sst) RocksDB opens for random reads is read whole
//     into memory at open (tables never change once written), up to 256
//     MiB of them per file system, the rest read with one pread per block:
//     the default file system's table reads hit the page cache, and a round
//     trip per block read would lose to it.
//  6. WAL reads (files named *.log) come in 1 MiB fused ops; when the
//     device has the WAL-check program (loaded by the library on first
//     use), the same op runs it over the bytes read, so the device checks
//     every record's CRC before the bytes leave it. It returns the bytes
//     up to the first damaged record; the rest is then read plainly, so
//     RocksDB's own reader still sees the damage and reports it exactly as
//     with the default file system (wal_recovery_mode decides).
#pragma once

#include <rocksdb/file_system.h>

#include <cstdint>
#include <memory>
#include <string>

namespace cisc {

// Makes a FileSystem serving files under `mountpoint` (a running ciscfs
// mount) through libcisc. Returns OK, or IOError naming libcisc's reason
// (not a ciscfs mount, device gone ...).
rocksdb::Status NewRocksDbFileSystem(const std::string &mountpoint,
                                     std::shared_ptr<rocksdb::FileSystem> *out);

// Counters of one such file system, for tests and benchmarks.
struct RocksDbFsStats {
    uint64_t write_ops;         // fused ops that wrote (WRITE, optionally FSYNC)
    uint64_t sync_ops;          // of those, ops that carried an FSYNC step
    uint64_t syncs_answered;    // Syncs answered by the flush's WRITE + FSYNC op
    uint64_t handoff_checks;    // appends whose CRC the device checked (invariant 4)
    uint64_t queues;            // queue pairs made so far (one per thread)
    uint64_t wal_read_ops;      // fused ops that read a WAL (invariant 6)
    uint64_t wal_checked_ops;   // of those, ops that ran the WAL check in the device
    uint64_t wal_damaged;       // WAL reads where the device found a damaged record
    uint64_t flushes_held;      // Flushes that sent nothing (RocksDbFsSetHoldFlush)
    uint64_t behind_ops;        // write ops submitted without waiting (invariant 3)
};

// The counters of fs, which must come from NewRocksDbFileSystem (else all
// zero).
RocksDbFsStats RocksDbFsStatsOf(const rocksdb::FileSystem *fs);

// Turns the in-device WAL check (invariant 6) on or off for fs (on by
// default; off: WAL reads are plain 1 MiB reads). For measurements.
void RocksDbFsSetWalCheck(rocksdb::FileSystem *fs, bool on);

// Holds unsynced flushes in the process (off by default; on at start when
// CISC_ROCKSDB_HOLD_FLUSH=1): a Flush not followed by a Sync then costs
// no round trip; its bytes go with the next Sync (one WRITE + FSYNC op),
// a full 64 KiB buffer or Close. The price is RocksDB's manual_wal_flush
// one: a process that dies loses the unsynced writes it flushed since
// (with it off, only a machine crash does), and a reader of a live file
// (a checkpoint or backup copying the WAL) misses the held tail unless it
// syncs first (DB::SyncWAL).
void RocksDbFsSetHoldFlush(rocksdb::FileSystem *fs, bool on);

}  // namespace cisc
