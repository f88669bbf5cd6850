/*
 * t_stall_report: a rank whose executions make no progress says what they
 * wait for, whichever call drives it (GOAL_STALL_REPORT).
 *
 * Rank 0 runs a schedule whose receive from rank 1 (tag 7) cannot finish
 * until rank 1 runs its side, which rank 1 does only after a pause
 * (2.5 s). Rank 0 drives goal with GOAL_Test alone in phase 1 (the call
 * of a polling loop, which never sleeps in goal) and with GOAL_Wait in
 * phase 2. With GOAL_STALL_REPORT=1 (set before GOAL_Init) and rank 0's
 * stderr sent to a file while it waits, its report must appear in each
 * phase, naming the schedule's execution and the receive it waits for
 * ("Recv from 1, tag 7"). Every execution still succeeds and the bytes
 * arrive.
 *
 * (A hung case of the other tests then shows each rank's state in its log:
 * ctests/run.sh sets GOAL_STALL_REPORT, see there.)
 */
// ranks: 2
// modes: 2
#include "helpers.h"

#include <fcntl.h>

#define PAUSE_MS 2500

static char report_path[64];

/* Whether the file stderr went to holds a line with both `a` and `b`, from
 * byte `from` on. */
static int report_has(long from, const char *a, const char *b)
{
    FILE *f = fopen(report_path, "r");
    CHECKM(f != NULL, "cannot read back %s", report_path);
    CHECK(fseek(f, from, SEEK_SET) == 0);
    char line[1024];
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, a) && strstr(line, b))
            found = 1;
    fclose(f);
    return found;
}

/* Copies the file to stderr, for a failure. */
static void show_report(void)
{
    FILE *f = fopen(report_path, "r");
    char line[1024];
    while (f && fgets(line, sizeof line, f))
        fprintf(stderr, "    %s", line);
    if (f)
        fclose(f);
}

int main(int argc, char **argv)
{
    CHECK(setenv("GOAL_STALL_REPORT", "1", 1) == 0);
    h_init(argc, argv);
    if (h_size != 2)
        h_skip("needs 2 ranks");
    int file = -1, err = -1;
    if (h_rank == 0) {
        snprintf(report_path, sizeof report_path, "t_stall_report.%d.err", (int)getpid());
        file = open(report_path, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND, 0644);
        CHECKM(file >= 0, "cannot create %s", report_path);
        err = dup(2);
        CHECK(err >= 0);
    }

    char buf[64];
    GOAL_Graph g = h_graph();
    if (h_rank == 0)
        V(GOAL_Recv(g, buf, sizeof buf, 1, 7, GOAL_USERSPACE));
    else
        V(GOAL_Send(g, buf, sizeof buf, 0, 7, GOAL_USERSPACE));
    GOAL_Schedule s = h_compile(g);

    for (int phase = 1; phase <= 2; phase++) {
        memset(buf, h_rank == 0 ? 0 : 0x40 + phase, sizeof buf);
        if (h_rank == 1) {
            h_sleep_ms(PAUSE_MS);
            GOAL_Handle h = GOAL_Run(s);
            CHECK(h != NULL);
            CHECK_OK(GOAL_Wait(h));
            continue;
        }
        /* Only while rank 0 waits does its stderr go to the file. */
        fflush(stderr);
        long from = lseek(file, 0, SEEK_END);
        CHECK(from >= 0 && dup2(file, 2) == 2);
        GOAL_Handle h = GOAL_Run(s);
        int rc = h == NULL ? GOAL_ERR_INTERNAL : 0;
        double t0 = h_now();
        if (h != NULL && phase == 1)
            while ((rc = GOAL_Test(h)) == 0 && h_now() - t0 < 30.0) {
            }
        else if (h != NULL)
            rc = GOAL_Wait(h) == GOAL_SUCCESS ? 1 : -1;
        fflush(stderr);
        CHECK(dup2(err, 2) == 2);
        const char *how = phase == 1 ? "GOAL_Test" : "GOAL_Wait";
        CHECKM(rc == 1, "phase %d: %s returned %d after %.1f s (%s)", phase, how, rc, h_now() - t0, h_strerr(rc));
        for (size_t i = 0; i < sizeof buf; i++)
            CHECKM(buf[i] == 0x40 + phase, "phase %d: byte %zu is 0x%02x", phase, i, (unsigned char)buf[i]);
        if (!report_has(from, "no operation has finished for", "in flight") ||
            !report_has(from, "execution", "Recv from 1, tag 7")) {
            fprintf(stderr, "rank 0's stderr while it waited:\n");
            show_report();
            FAILF("phase %d (%s): rank 0 waited %.1f s without a stall report naming its receive",
                  phase, how, PAUSE_MS / 1000.0);
        }
    }
    h_free_schedule(s);
    if (h_rank == 0) {
        close(file);
        unlink(report_path);
        printf("t_stall_report: both stalls reported\n");
    }
    return h_finish();
}
