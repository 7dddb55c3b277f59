// tests/e2e/apps/ldb_writer.cc - the writer the LevelDB crash test kills:
// opens DBPATH through the ciscfs Env of MOUNT and puts keys with sync=1
// forever (writer_loop.h).
#include "integrations/leveldb/cisc_leveldb.h"
#include "tests/e2e/apps/writer_loop.h"

#include <leveldb/db.h>

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
    return e2e::apps::WriterLoop("ldb_writer", st.ok() ? "" : st.ToString(),
                                 [&](const std::string &k, const std::string &v) {
                                     leveldb::Status p = db->Put(wo, k, v);
                                     return p.ok() ? std::string() : p.ToString();
                                 });
}
