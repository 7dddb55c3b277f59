// tests/e2e/apps/ldb_writer.cc - the writer the LevelDB crash test kills:
// opens DBPATH through the ciscfs Env of MOUNT and puts key i = value of i
// with sync=1 for i = 0, 1, ... forever, printing i on stdout once the put
// returned (so the parent knows it is durable).
#include "integrations/leveldb/cisc_leveldb.h"

#include <leveldb/db.h>

#include <cstdio>
#include <string>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: ldb_writer MOUNT DBPATH\n");
        return 2;
    }
    std::unique_ptr<leveldb::Env> env;
    leveldb::Status st = cisc::NewLevelDbEnv(argv[1], &env);
    leveldb::Options o;
    o.env = env.get();
    o.create_if_missing = true;
    o.write_buffer_size = 64 << 10;   // small memtables: flushes and compactions happen
    leveldb::DB *db = nullptr;
    if (st.ok())
        st = leveldb::DB::Open(o, argv[2], &db);
    leveldb::WriteOptions wo;
    wo.sync = true;
    for (long i = 0; st.ok(); i++) {
        std::string k = "key" + std::to_string(i);
        st = db->Put(wo, k, "value of " + k + std::string((size_t)(i % 300), 'v'));
        if (st.ok() && printf("%ld\n", i) > 0)
            fflush(stdout);
    }
    fprintf(stderr, "ldb_writer: %s\n", st.ToString().c_str());
    return 1;
}
