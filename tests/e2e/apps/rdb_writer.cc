// tests/e2e/apps/rdb_writer.cc - the writer the RocksDB crash test kills:
// opens DBPATH through the ciscfs FileSystem of MOUNT and puts key i =
// value of i with sync=1 for i = 0, 1, ... forever, printing i on stdout
// once the put returned (so the parent knows it is durable).
#include "integrations/rocksdb/cisc_rocksdb.h"

#include <rocksdb/db.h>
#include <rocksdb/env.h>

#include <cstdio>
#include <string>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: rdb_writer MOUNT DBPATH\n");
        return 2;
    }
    std::shared_ptr<rocksdb::FileSystem> fs;
    rocksdb::Status st = cisc::NewRocksDbFileSystem(argv[1], &fs);
    if (!st.ok()) {
        fprintf(stderr, "rdb_writer: %s\n", st.ToString().c_str());
        return 1;
    }
    std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
    rocksdb::Options o;
    o.env = env.get();
    o.create_if_missing = true;
    o.write_buffer_size = 64 << 10;   // small memtables: flushes and compactions happen
    rocksdb::DB *db = nullptr;
    st = rocksdb::DB::Open(o, argv[2], &db);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    for (long i = 0; st.ok(); i++) {
        std::string k = "key" + std::to_string(i);
        st = db->Put(wo, k, "value of " + k + std::string((size_t)(i % 300), 'v'));
        if (st.ok() && printf("%ld\n", i) > 0)
            fflush(stdout);
    }
    fprintf(stderr, "rdb_writer: %s\n", st.ToString().c_str());
    return 1;
}
