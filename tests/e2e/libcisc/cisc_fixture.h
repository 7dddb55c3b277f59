// tests/e2e/libcisc/cisc_fixture.h - a real device (`cisc up`, the FUSE
// fixture's) with a libcisc session and queue open on it, and a raw
// queue-pair client that writes whatever it likes into its rings (for the
// hostile-client tests).
#pragma once

#include "tests/e2e/fuse/mount_fixture.h"

#include <cisc/cisc.h>

#include "common/le.h"
#include "device/control.h"
#include "proto/wire.h"

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <chrono>
#include <thread>

namespace e2e {

class CiscTest : public MountTest {
protected:
    struct cisc_session *s = nullptr;
    struct cisc_queue *q = nullptr;

    void SetUp() override
    {
        MountTest::SetUp();
        if (HasFatalFailure())
            return;
        ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
        ASSERT_EQ(cisc_queue_create(s, &q), 0);
    }

    void TearDown() override
    {
        cisc_session_close(s);   // closes q too
        s = nullptr;
        q = nullptr;
        MountTest::TearDown();
    }

    // Restarts the device with extra `cisc up` options; s and q on the
    // new one.
    void Restart(const std::string &extra)
    {
        cisc_session_close(s);
        s = nullptr;
        q = nullptr;
        Down();
        Up(extra);
        ASSERT_EQ(cisc_session_open(mnt.c_str(), &s), 0);
        ASSERT_EQ(cisc_queue_create(s, &q), 0);
    }

    // The device still answers a fresh client.
    void ExpectDeviceUp()
    {
        EXPECT_GT(DaemonPid(), 0);
        struct cisc_session *x;
        struct cisc_queue *y;
        ASSERT_EQ(cisc_session_open(mnt.c_str(), &x), 0);
        ASSERT_EQ(cisc_queue_create(x, &y), 0);
        EXPECT_EQ(cisc_nop(y), 0);
        cisc_session_close(x);
    }

    // A key of the device's `cisc status --raw` report ("qp" line fields).
    long long Status(const std::string &line, const std::string &key)
    {
        RunResult r = Sh(cisc + " status --raw " + mnt);
        size_t p = r.out.find("\n" + line + " ");
        if (p == std::string::npos)
            return -1;
        size_t e = r.out.find('\n', p + 1);
        std::string l = r.out.substr(p, e - p);
        size_t k = l.find(" " + key + " ");
        return k == std::string::npos ? -1 : atoll(l.c_str() + k + key.size() + 2);
    }

    // Waits up to 10 s for a status value (asynchronous session teardown).
    bool WaitStatus(const std::string &line, const std::string &key, long long want)
    {
        for (int i = 0; i < 200; i++) {
            if (Status(line, key) == want)
                return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return false;
    }

    // Creates path (through libcisc) with the given contents.
    void Put(const std::string &path, const std::string &data, struct cisc_queue *qq = nullptr)
    {
        uint64_t fh;
        qq = qq ? qq : q;
        ASSERT_EQ(cisc_open(qq, path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644, &fh), 0);
        ASSERT_EQ(cisc_pwrite(qq, fh, data.data(), data.size(), 0), (ssize_t)data.size());
        ASSERT_EQ(cisc_close(qq, fh), 0);
    }

    // Reads a whole file through libcisc ("<errno N>" on failure).
    std::string Get(const std::string &path, struct cisc_queue *qq = nullptr)
    {
        uint64_t fh;
        qq = qq ? qq : q;
        int r = cisc_open(qq, path.c_str(), O_RDONLY, 0, &fh);
        if (r)
            return "<errno " + std::to_string(-r) + ">";
        std::string out;
        char buf[65536];
        ssize_t n;
        while ((n = cisc_read(qq, fh, buf, sizeof(buf))) > 0)
            out.append(buf, (size_t)n);
        cisc_close(qq, fh);
        return n < 0 ? "<errno " + std::to_string(-n) + ">" : out;
    }
};

// A queue pair driven by hand: the test writes SQEs and indices itself.
struct RawQp {
    int fd = -1;                       // control connection (the session)
    uint8_t *map = nullptr;
    size_t size = 0;
    struct wire_qp_hdr *hdr = nullptr;
    struct wire_sqe *sq = nullptr;
    struct wire_cqe *cq = nullptr;
    uint8_t *arena = nullptr;
    uint32_t sq_tail = 0, cq_head = 0;
    int memfd = -1;

    // Connects to the device at mnt and creates a queue pair; 0 or -errno.
    int Open(const std::string &mnt, uint32_t sq_entries = 64, uint64_t arena_size = 1 << 20)
    {
        char sock[4096];
        if (ctl_socket_path(mnt.c_str(), sock, sizeof(sock)))
            return -ENAMETOOLONG;
        fd = ctl_connect(sock);
        if (fd < 0)
            return fd;
        uint8_t req[16], rep[4];
        le32_put(req, sq_entries);
        le32_put(req + 4, 0);
        le64_put(req + 8, arena_size);
        int32_t st = 0;
        ssize_t n = ctl_call_fd(fd, CTL_QP_CREATE, req, sizeof(req), &st, rep, sizeof(rep),
                                &memfd);
        if (n < 0 || st)
            return n < 0 ? (int)n : st;
        struct stat sb;
        fstat(memfd, &sb);
        size = (size_t)sb.st_size;
        void *m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
        if (m == MAP_FAILED)
            return -errno;
        map = (uint8_t *)m;
        hdr = (struct wire_qp_hdr *)m;
        sq = (struct wire_sqe *)(map + hdr->sq_off);
        cq = (struct wire_cqe *)(map + hdr->cq_off);
        arena = map + hdr->arena_off;
        return 0;
    }

    ~RawQp()
    {
        if (map)
            munmap(map, size);
        if (memfd >= 0)
            close(memfd);
        if (fd >= 0)
            close(fd);
    }

    // Writes e into the next slot (no publication).
    void Put(const struct wire_sqe &e) { sq[sq_tail++ & (hdr->sq_entries - 1)] = e; }

    // Publishes sq_tail (as given) and rings the doorbell.
    void Publish(uint32_t tail)
    {
        __atomic_store_n(&hdr->sq_tail, tail, __ATOMIC_RELEASE);
        __atomic_add_fetch(&hdr->sq_doorbell, 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, &hdr->sq_doorbell, FUTEX_WAKE, 1, nullptr, nullptr, 0);
    }
    void Publish() { Publish(sq_tail); }

    // Collects completions until `want` arrived or 10 s passed.
    std::vector<struct wire_cqe> Reap(size_t want)
    {
        std::vector<struct wire_cqe> out;
        auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (out.size() < want && std::chrono::steady_clock::now() < end) {
            uint32_t t = __atomic_load_n(&hdr->cq_tail, __ATOMIC_ACQUIRE);
            while (cq_head != t)
                out.push_back(cq[cq_head++ & (hdr->cq_entries - 1)]);
            __atomic_store_n(&hdr->cq_head, cq_head, __ATOMIC_RELEASE);
            if (out.size() < want)
                std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        return out;
    }

    // Submits one SQE and returns its completion's res (or 1 on timeout).
    int64_t Call(struct wire_sqe e)
    {
        Put(e);
        Publish();
        auto c = Reap(1);
        return c.size() == 1 ? c[0].res : 1;
    }
};

}  // namespace e2e
