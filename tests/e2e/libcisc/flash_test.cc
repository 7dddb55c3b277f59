// `cisc up --media flash`: the device over the NAND model. Data is the
// image's as with the file media; `cisc status` reports the model (WAF,
// GC, wear, utilisation); freed blocks reach it as TRIM; a geometry that
// does not fit the image is refused with a reason, the image untouched.
#include "cisc_fixture.h"

namespace e2e {

class Flash : public CiscTest {
protected:
    void UpFlash(const std::string &extra)
    {
        cisc_session_close(s);
        s = nullptr;
        q = nullptr;
        Down();
        Up("--media flash " + extra);
        ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
        ASSERT_EQ(cisc_queue_create(s, &q), 0);
    }
};

TEST_F(Flash, DataStatusAndTrimThroughTheModel)
{
    UpFlash("--flash-channels 2 --flash-dies 2 --flash-op 200 --flash-members 2");
    std::string data(1 << 20, '\0');
    for (size_t i = 0; i < data.size(); i++)
        data[i] = (char)(i * 7 + 3);
    Put("big", data);
    EXPECT_EQ(Get("big"), data);
    EXPECT_EQ(Status("flash", "channels"), 2);
    EXPECT_EQ(Status("flash", "dies"), 2);
    EXPECT_EQ(Status("flash", "op_permille"), 200);
    RunResult sync = Sh(cisc + " status --raw " + mnt);
    ASSERT_EQ(sync.status, 0);
    EXPECT_NE(sync.out.find("flash_ftl member 0 waf "), std::string::npos) << sync.out;
    EXPECT_NE(sync.out.find("flash member 1 channels 2 "), std::string::npos) << sync.out;
    EXPECT_NE(sync.out.find("flash_chan member 0 channel 1 util "), std::string::npos) << sync.out;
    // The file's blocks were written through the model (at the latest by
    // the commit that the unlink below waits for).
    ASSERT_EQ(cisc_unlink(q, "big"), 0);
    long long writes = Status("flash_ftl", "host_writes");
    EXPECT_GE(writes, 96);   // member 0's share of 16 64 KiB stripes
    bool trimmed = false;
    for (int i = 0; i < 200 && !trimmed; i++) {   // the next commit frees them
        trimmed = Status("flash_ftl", "trims") >= 96;
        if (!trimmed)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(trimmed);
}

TEST_F(Flash, AGeometryThatDoesNotFitIsRefused)
{
    cisc_session_close(s);
    s = nullptr;
    q = nullptr;
    Down();
    RunResult r = Sh(UpCmd("--media flash --flash-blocks 3"));
    EXPECT_NE(r.status, 0);
    EXPECT_NE((r.out + ReadFile(log)).find("too small"), std::string::npos) << r.out;
    EXPECT_FALSE(IsCiscMount(mnt));
    RunResult z = Sh(UpCmd("--media flash --flash-read-ns 0 --flash-channels 0"));
    EXPECT_EQ(z.status, 0) << z.out;   // zeros are "scale to the image"
    up = z.status == 0;
}

}  // namespace e2e
