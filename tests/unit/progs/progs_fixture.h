// A program registry on a RAM-disk StorageFS (tests/unit/storagefs's
// fixture), with helpers to read compiled objects and load them.
#pragma once

#include "tests/unit/storagefs/sfs_fixture.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" {
#include "device/progs/progs_int.h"
#include "device/engine/sysdir.h"
}

inline std::string ReadObj(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

inline std::string DevObj(const char *name) { return ReadObj(std::string(DEVICE_OBJS) + "/" + name + ".o"); }
inline std::string CorpusObj(const char *name) { return ReadObj(std::string(CORPUS_OBJS) + "/" + name + ".o"); }

class ProgsFixture : public SfsFixture {
  protected:
    struct progs *reg = nullptr;
    struct progs_limits lim = {};
    std::vector<std::string> log;

    static void LogLine(void *arg, const char *line)
    {
        static_cast<ProgsFixture *>(arg)->log.push_back(line);
    }

    void SetUp() override
    {
        Format(16384);
        Open();
    }

    void TearDown() override
    {
        progs_close(reg);
        reg = nullptr;
        SfsFixture::TearDown();
    }

    void Open()
    {
        char err[256] = "";
        struct progs_config c = {};
        c.lim = lim;
        c.log = LogLine;
        c.log_arg = this;
        ASSERT_EQ(progs_open(fs, &c, &reg, err, sizeof(err)), 0) << err;
    }

    // Closes the registry, remounts the file system, opens it again.
    void Reopen()
    {
        progs_close(reg);
        reg = nullptr;
        Remount();
        Open();
    }

    int Load(const std::string &obj, const char *name, uint32_t uid, bool shared = false,
             const char *func = nullptr, struct progs_info *info = nullptr,
             std::string *msg = nullptr)
    {
        struct progs_load_req rq = { obj.data(), obj.size(), name, func, shared, uid };
        struct progs_info i;
        char m[1400] = "";
        int r = progs_load(reg, &rq, info ? info : &i, m, sizeof(m));
        if (msg)
            *msg = m;
        return r;
    }

    // Info of program name; false when absent.
    bool Show(const char *name, struct progs_info *info, std::string *text = nullptr)
    {
        char t[4096] = "";
        int r = progs_show(reg, 0, 0, name, info, t, sizeof(t));
        if (text)
            *text = t;
        return r == 0;
    }

    std::vector<struct progs_info> List()
    {
        std::vector<struct progs_info> v;
        EXPECT_EQ(progs_list(reg, 0, [](void *a, const struct progs_info *i) {
            static_cast<std::vector<struct progs_info> *>(a)->push_back(*i);
            return 0;
        }, &v), 0);
        return v;
    }
};
