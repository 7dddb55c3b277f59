// tests/e2e/apps/rdb_writer.cc - the writer the RocksDB crash tests kill:
// opens DBPATH through the ciscfs FileSystem of MOUNT and puts keys with
// sync=1 forever (writer_loop.h); sync=0 with RDB_WRITER_NOSYNC=1 in its
// environment (each put still flushed to the device before it returns).
#include "integrations/rocksdb/cisc_rocksdb.h"
#include "tests/e2e/apps/writer_loop.h"

#include <rocksdb/db.h>
#include <rocksdb/env.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: rdb_writer MOUNT DBPATH\n");
        return 2;
    }
    std::shared_ptr<rocksdb::FileSystem> fs;
    rocksdb::Status st = cisc::NewRocksDbFileSystem(argv[1], &fs);
    std::unique_ptr<rocksdb::Env> env = st.ok() ? rocksdb::NewCompositeEnv(fs) : nullptr;
    rocksdb::Options o;
    o.env = env.get();
    o.create_if_missing = true;
    o.write_buffer_size = 64 << 10;   // small memtables: flushes and compactions happen
    rocksdb::DB *db = nullptr;
    if (st.ok())
        st = rocksdb::DB::Open(o, argv[2], &db);
    rocksdb::WriteOptions wo;
    wo.sync = getenv("RDB_WRITER_NOSYNC") == nullptr;
    return e2e::apps::WriterLoop("rdb_writer", st.ok() ? "" : st.ToString(),
                                 [&](const std::string &k, const std::string &v) {
                                     rocksdb::Status p = db->Put(wo, k, v);
                                     return p.ok() ? std::string() : p.ToString();
                                 });
}
