/*
 * rtlab.h: periodic real-time processes under rtlab's executive.
 *
 * A thread attaches to `rtlab exec serve` with its timing (paper 002's
 * set_rtparams), waits for each of its activations (rt_suspend), works,
 * reads its statistics (get_rtstats) and detaches. The executive releases
 * it at its planned instants; the library measures how late each release
 * was and how long each activation took.
 *
 *     struct rtlab_params params = RTLAB_PARAMS_INIT;
 *     params.period_ns = 10000000;               10 ms
 *     if (rtlab_attach(&params) != 0) ...        rtlab_last_error() says why
 *     for (i = 0; i < 100; i++) {
 *         rtlab_wait_next(NULL);                 returns at the activation
 *         ... the periodic work ...
 *     }
 *     rtlab_detach(&stats);
 *
 * Build: gcc prog.c $(pkg-config --cflags --libs rtlab)
 * Documentation: docs/librtlab.md of rtlab.
 *
 * Every function but rtlab_params_init, rtlab_strerror and rtlab_last_error
 * returns RTLAB_OK (0) or a negative RTLAB_E_* code. The attachment belongs
 * to the calling thread: each thread attaches (at most once at a time),
 * waits and detaches on its own; the other threads of the process are not
 * released. A child of fork() is not attached.
 *
 * ABI: the library's soname is librtlab.so.RTLAB_ABI_VERSION. Within one ABI
 * version no function, struct field or code changes meaning; fields are
 * never added to these structs (that is a new ABI version).
 */
#ifndef RTLAB_H
#define RTLAB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version: the number in the library's soname, librtlab.so.0. */
#define RTLAB_ABI_VERSION 0

/* Success. */
#define RTLAB_OK 0
/* The parameters are wrong, or a pointer that may not be NULL is NULL, or
 * the thread is already attached (rtlab_last_error names the field). */
#define RTLAB_E_INVALID (-1)
/* No executive answers at the socket (rtlab_last_error names it). */
#define RTLAB_E_CONNECT (-2)
/* The executive refused the registration (permission, limits, task set). */
#define RTLAB_E_REFUSED (-3)
/* The executive said something this library does not understand. */
#define RTLAB_E_PROTOCOL (-4)
/* The executive is gone (killed, stopped): the thread is back to the
 * scheduling it had before attaching. */
#define RTLAB_E_GONE (-5)
/* The executive dropped this thread (it overran its activation far beyond
 * its period, or never yielded). */
#define RTLAB_E_DROPPED (-6)
/* The calling thread is not attached. */
#define RTLAB_E_NOT_ATTACHED (-7)
/* A system call failed, or the library failed inside (its name and errno
 * text, or what failed, in rtlab_last_error). */
#define RTLAB_E_SYSTEM (-8)

/* What a thread asks the executive for (paper 002's rtparams). Start from
 * RTLAB_PARAMS_INIT or rtlab_params_init(), then set period_ns. */
struct rtlab_params {
    /* Period, ns (required, > 0). */
    uint64_t period_ns;
    /* Phase: activations fall at the executive's epoch + offset + k period. */
    uint64_t offset_ns;
    /* Relative deadline, ns; 0: the period. */
    uint64_t deadline_ns;
    /* Execution budget per activation, ns; 0: no budget. */
    uint64_t budget_ns;
    /* CPU to run on; -1: the executive chooses among its CPUs. */
    int32_t cpu;
    /* SCHED_FIFO priority; 0: the executive's default for its tasks. */
    int32_t priority;
    /* Name of the task (UTF-8; a task of the executive's task set, when it
     * has one); NULL: the process's command name. */
    const char *name;
    /* The executive's socket; NULL: $RTLAB_SOCKET, else
     * /run/rtlab/exec.sock. */
    const char *socket;
};

/* Every default (the period is still to set). */
#define RTLAB_PARAMS_INIT { 0, 0, 0, 0, -1, 0, NULL, NULL }

/* A thread's statistics (paper 002's rtstats), all times in ns. Lateness:
 * the return of rtlab_wait_next minus the activation instant. Response: the
 * next call of rtlab_wait_next (or rtlab_detach) minus the activation
 * instant. */
struct rtlab_stats {
    /* Activations the thread was released for and worked. */
    uint64_t activations;
    /* Activations that came while the thread was still working on an
     * earlier one (never released, never skipped silently). */
    uint64_t missed_activations;
    /* Activations whose response was later than the relative deadline. */
    uint64_t deadline_misses;
    /* Activations whose work exceeded the budget. */
    uint64_t budget_overruns;
    uint64_t lateness_p50_ns;
    uint64_t lateness_p99_ns;
    uint64_t lateness_p999_ns;
    uint64_t lateness_max_ns;
    uint64_t response_p50_ns;
    uint64_t response_p99_ns;
    uint64_t response_p999_ns;
    uint64_t response_max_ns;
};

/* Sets *params to every default, as RTLAB_PARAMS_INIT. NULL: nothing. */
void rtlab_params_init(struct rtlab_params *params);

/* Registers the calling thread with the executive: it is pinned to its CPU
 * and given its SCHED_FIFO priority; its first activation is the first
 * instant of its grid at least a few ms away. RTLAB_E_INVALID when params is
 * NULL, a field is wrong (period_ns 0, cpu below -1, priority below 0, name
 * not UTF-8 or empty, socket empty) or the thread is already attached. */
int rtlab_attach(const struct rtlab_params *params);

/* Ends the current activation (if any) and returns at the next one (paper
 * 002's rt_suspend), storing its instant (CLOCK_MONOTONIC, ns) in
 * *activation_ns unless activation_ns is NULL. Never blocks forever:
 * RTLAB_E_GONE once the executive is gone, RTLAB_E_DROPPED once it dropped
 * the thread. After such an error the thread stays attached until
 * rtlab_detach, so that rtlab_stats still reads its figures. */
int rtlab_wait_next(uint64_t *activation_ns);

/* Stores the statistics so far in *stats (RTLAB_E_INVALID when NULL); works
 * after the executive is gone too. */
int rtlab_stats(struct rtlab_stats *stats);

/* Ends the current activation, tells the executive (which stores the
 * thread's statistics as a run) and puts the thread back to the scheduling
 * and CPUs it had before attaching. Stores the final statistics in *stats
 * unless stats is NULL; when it fails (the executive is gone), the thread
 * is detached all the same and *stats holds the statistics so far. */
int rtlab_detach(struct rtlab_stats *stats);

/* A static text for a code ("the executive is gone"); never NULL. */
const char *rtlab_strerror(int code);

/* The calling thread's detailed message of its last failure ("" when none
 * failed yet); never NULL. Valid until the thread's next rtlab_ call. */
const char *rtlab_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* RTLAB_H */
