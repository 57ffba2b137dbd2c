/*
 * periodic: a C program that runs periodically under rtlab's executive
 * (docs/librtlab.md). It attaches, works a little at each of its
 * activations, detaches and prints its statistics.
 *
 *   gcc -std=c99 -Wall -Wextra -O2 periodic.c -o periodic $(pkg-config --cflags --libs rtlab)
 *   ./periodic [PERIOD_MS [ACTIVATIONS]]       every 10 ms, 100 times by default
 *
 * It needs `rtlab exec serve` running (its socket: $RTLAB_SOCKET, else
 * /run/rtlab/exec.sock). Exit code 0 when every call succeeded, 1 when one
 * failed (the reason on stderr), 2 for bad arguments.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <rtlab.h>

#define USAGE "usage: periodic [PERIOD_MS [ACTIVATIONS]]\n"

static uint64_t now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* The periodic work: spins for `ns` (a real program computes here). */
static void work(uint64_t ns)
{
    uint64_t end = now_ns() + ns;
    while (now_ns() < end) {
    }
}

/* Says which call failed, its code's text and the detailed reason. */
static int failed(const char *call, int code)
{
    fprintf(stderr, "periodic: %s: %s (%s)\n", call, rtlab_strerror(code),
            rtlab_last_error());
    return 1;
}

/* A whole number from 1 to max, or -1 with the reason on stderr. */
static int parse(const char *text, const char *what, unsigned long max,
                 unsigned long *value)
{
    char *end;
    errno = 0;
    *value = strtoul(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || errno != 0 || *end != '\0' ||
        *value == 0 || *value > max) {
        fprintf(stderr, "periodic: %s '%s' is not a whole number from 1 to %lu\n" USAGE,
                what, text, max);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long period_ms = 10, activations = 100, i;
    struct rtlab_params params = RTLAB_PARAMS_INIT;
    struct rtlab_stats stats;
    uint64_t work_ns;
    int rc;

    if (argc > 3) {
        fprintf(stderr, "periodic: too many arguments\n" USAGE);
        return 2;
    }
    if ((argc > 1 && parse(argv[1], "PERIOD_MS", 60000, &period_ms) != 0) ||
        (argc > 2 && parse(argv[2], "ACTIVATIONS", 100000000, &activations) != 0))
        return 2;

    params.period_ns = (uint64_t)period_ms * 1000000u;
    /* A tenth of the period, at most 100 us. */
    work_ns = params.period_ns / 10 < 100000 ? params.period_ns / 10 : 100000;

    rc = rtlab_attach(&params);
    if (rc != RTLAB_OK)
        return failed("rtlab_attach", rc);
    printf("periodic: attached, every %lu ms for %lu activations\n", period_ms, activations);
    fflush(stdout);

    for (i = 0; i < activations; i++) {
        rc = rtlab_wait_next(NULL);
        if (rc != RTLAB_OK)
            return failed("rtlab_wait_next", rc);
        work(work_ns);
    }

    rc = rtlab_detach(&stats);
    if (rc != RTLAB_OK)
        return failed("rtlab_detach", rc);
    printf("activations      %" PRIu64 "\n", stats.activations);
    printf("missed           %" PRIu64 "\n", stats.missed_activations);
    printf("deadline misses  %" PRIu64 "\n", stats.deadline_misses);
    printf("budget overruns  %" PRIu64 "\n", stats.budget_overruns);
    printf("lateness p50     %" PRIu64 " ns\n", stats.lateness_p50_ns);
    printf("lateness p99     %" PRIu64 " ns\n", stats.lateness_p99_ns);
    printf("lateness max     %" PRIu64 " ns\n", stats.lateness_max_ns);
    return 0;
}
