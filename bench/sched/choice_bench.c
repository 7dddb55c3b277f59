/* bench/sched/choice_bench.c - what one scheduling choice costs with many
 * queues: each policy driven in process (no threads, no device), queues
 * spread over tenants, every queue kept busy; times push + pop + start +
 * charge per item. Prints "POLICY queues N tenants T ns_per_choice X". */
#include "common/clock.h"
#include "device/sched/sched_int.h"

#include <stdio.h>
#include <stdlib.h>

static double measure(const struct sched_policy *pol, unsigned queues, unsigned tenants)
{
    struct sched_accts a;
    struct sched_env env = { 4, 1ull << 30 };
    sched_acct_init(&a, env.cores, env.mem_budget);
    void *q = pol->create(&env);
    struct sched_item *it = calloc(queues * 2, sizeof(*it));
    for (unsigned i = 0; i < queues * 2; i++) {
        it[i].tenant = i % queues % tenants;
        it[i].queue = i % queues;
        it[i].mem = (i % 7) << 16;
        sched_acct_resolve(&a, &it[i]);
        pol->push(q, &it[i]);
        sched_acct_queued(&a, &it[i]);
    }
    const unsigned rounds = 200000;
    uint64_t t0 = now_ns();
    for (unsigned r = 0; r < rounds; r++) {
        struct sched_item *x = pol->pop(q, r % 16 == 0);
        sched_acct_start(&a, x, true, t0);
        if (pol->start)
            pol->start(q, x);
        uint64_t ns = 1000 + (x->queue * 37 + r) % 2000;   /* fake charges */
        sched_acct_finish(&a, x, ns);
        pol->charge(q, x, ns);
        pol->push(q, x);
        sched_acct_queued(&a, x);
    }
    double per = (double)(now_ns() - t0) / rounds;
    pol->destroy(q);
    sched_acct_free(&a);
    free(it);
    return per;
}

int main(void)
{
    const char *names[] = { "fifo", "rr", "cfs", "drf" };
    const unsigned shapes[][2] = { { 10, 2 }, { 1000, 10 }, { 1000, 1000 } };
    for (unsigned p = 0; p < 4; p++)
        for (unsigned s = 0; s < 3; s++)
            printf("%s queues %u tenants %u ns_per_choice %.0f\n", names[p], shapes[s][0],
                   shapes[s][1], measure(sched_policy_find(names[p]), shapes[s][0], shapes[s][1]));
    return 0;
}
