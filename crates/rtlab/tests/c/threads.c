/*
 * librtlab's thread and fork rules, through the installed library (run by
 * crates/rtlab/tests/librtlab.rs under `rtlab exec serve`, $RTLAB_SOCKET):
 * the attachment is the calling thread's, once at a time; another thread
 * of the process is not attached until it attaches itself, and then runs
 * on its own; a child of fork() is not attached, and its exit does not
 * detach the parent. Prints "threads: every check passed" and exits 0, or
 * names the first check that failed and exits 1.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rtlab.h>

#define PERIOD_NS 10000000u

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "threads: check failed: %s (last error: %s)\n", what,
                rtlab_last_error());
        exit(1);
    }
}

/* `activations` activations; the count its statistics show. */
static uint64_t run(unsigned activations)
{
    struct rtlab_params params = RTLAB_PARAMS_INIT;
    struct rtlab_stats stats;
    unsigned i;

    params.period_ns = PERIOD_NS;
    check(rtlab_attach(&params) == RTLAB_OK, "a thread attaches");
    for (i = 0; i < activations; i++)
        check(rtlab_wait_next(NULL) == RTLAB_OK, "a thread waits");
    check(rtlab_detach(&stats) == RTLAB_OK, "a thread detaches");
    return stats.activations;
}

static void *second_thread(void *unused)
{
    static uint64_t activations;

    (void)unused;
    check(rtlab_wait_next(NULL) == RTLAB_E_NOT_ATTACHED,
          "the main thread's attachment is not the second thread's");
    activations = run(10);
    return &activations;
}

int main(void)
{
    struct rtlab_params params = RTLAB_PARAMS_INIT;
    struct rtlab_stats stats;
    pthread_t second;
    void *second_count;
    uint64_t at = 0, before;
    pid_t child;
    int status, i;

    check(rtlab_wait_next(NULL) == RTLAB_E_NOT_ATTACHED, "unattached: not attached");
    check(rtlab_stats(NULL) == RTLAB_E_INVALID, "stats(NULL) is invalid");

    params.period_ns = PERIOD_NS;
    check(rtlab_attach(&params) == RTLAB_OK, "the main thread attaches");
    check(rtlab_attach(&params) == RTLAB_E_INVALID, "attaching twice is invalid");
    check(strstr(rtlab_last_error(), "already attached") != NULL,
          "attaching twice says why");

    check(pthread_create(&second, NULL, second_thread, NULL) == 0, "pthread_create");
    for (i = 0; i < 20; i++) {
        before = at;
        check(rtlab_wait_next(&at) == RTLAB_OK, "the main thread waits");
        check(at > before, "activation instants grow");
    }
    check(pthread_join(second, &second_count) == 0, "pthread_join");
    check(*(uint64_t *)second_count == 10, "the second thread worked its 10 activations");

    child = fork();
    check(child >= 0, "fork");
    if (child == 0) {
        if (rtlab_wait_next(NULL) != RTLAB_E_NOT_ATTACHED)
            _exit(3);
        exit(0); /* exit(), not _exit(): thread-local destructors run */
    }
    check(waitpid(child, &status, 0) == child, "waitpid");
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child of fork() is not attached");

    for (i = 0; i < 10; i++)
        check(rtlab_wait_next(NULL) == RTLAB_OK, "the parent goes on after its child's exit");
    check(rtlab_detach(&stats) == RTLAB_OK, "the main thread detaches");
    check(stats.activations == 30, "the main thread worked its 30 activations");
    check(rtlab_wait_next(NULL) == RTLAB_E_NOT_ATTACHED, "detached: not attached");
    printf("threads: every check passed\n");
    return 0;
}
