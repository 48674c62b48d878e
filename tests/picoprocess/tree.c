/* A tree of processes for crates/picos/tests/tree.rs.
 *
 * tree build DEPTH WIDTH
 *   Every process forks WIDTH children until DEPTH levels are below the
 *   first. One child of each process is forked by a short-lived thread
 *   (the host's parent-death signal fires when that thread ends, while
 *   its process lives on), and the processes of the last level exec this
 *   program again ("leaf"). Each process writes "pid P\n" once it is set
 *   up, then sleeps. The first process exits 0 on SIGUSR1.
 *   1 + WIDTH + ... + WIDTH^DEPTH lines in all.
 *
 * tree tick
 *   Forks one child; both write "root N\n" / "child N\n" about every
 *   10 ms with a growing N, forever.
 *
 * tree thread-exec N
 *   N times: a thread forks a child and ends at once while the child execs
 *   this program ("true", exit 0); waits for it. Prints "bad: K", K the
 *   children that did not exit 0 (the host's parent-death signal, sent when
 *   the thread ends, once killed children in the middle of their exec). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *self;

static void say(const char *what, long n) {
    char line[64];
    int len = snprintf(line, sizeof line, "%s %ld\n", what, n);
    /* One write per line: lines of different processes never mix. */
    if (write(1, line, len) != len)
        _exit(3);
}

static void sleep_forever(void) {
    for (;;)
        pause();
}

static void node(int depth, int width);

struct spawn {
    int depth, width;
    pid_t pid;
};

static void child_of(int depth, int width) {
    if (depth == 0) {
        execl(self, self, "leaf", (char *)NULL);
        perror("execl");
        _exit(4);
    }
    node(depth, width);
}

static void *fork_from_thread(void *arg) {
    struct spawn *s = arg;
    s->pid = fork();
    if (s->pid == 0) {
        child_of(s->depth, s->width);
        _exit(5);
    }
    return NULL;
}

/* A process of the tree with `depth` levels below it. */
static void node(int depth, int width) {
    for (int i = 0; i < width; i++) {
        if (i == 0) {
            /* The thread ends at once; its child stays ours. */
            struct spawn s = {depth - 1, width, -1};
            pthread_t th;
            if (pthread_create(&th, NULL, fork_from_thread, &s) != 0 ||
                pthread_join(th, NULL) != 0 || s.pid < 0) {
                perror("fork from a thread");
                _exit(6);
            }
            continue;
        }
        pid_t p = fork();
        if (p < 0) {
            perror("fork");
            _exit(7);
        }
        if (p == 0) {
            child_of(depth - 1, width);
            _exit(8);
        }
    }
    say("pid", getpid());
    sleep_forever();
}

static void *fork_exec_true(void *arg) {
    pid_t *pid = arg;
    *pid = fork();
    if (*pid == 0) {
        execl(self, self, "true", (char *)NULL);
        _exit(4);
    }
    return NULL;
}

static int thread_exec(int n) {
    int bad = 0;
    for (int i = 0; i < n; i++) {
        pid_t pid = -1;
        pthread_t th;
        if (pthread_create(&th, NULL, fork_exec_true, &pid) != 0 ||
            pthread_join(th, NULL) != 0 || pid < 0) {
            perror("fork from a thread");
            return 6;
        }
        int st;
        if (waitpid(pid, &st, 0) != pid) {
            perror("waitpid");
            return 7;
        }
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            if (bad++ == 0)
                fprintf(stderr, "child %d: status %#x\n", (int)pid, st);
        }
    }
    printf("bad: %d\n", bad);
    return 0;
}

static void on_usr1(int sig) {
    (void)sig;
    _exit(0);
}

static void tick(const char *who) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    for (long n = 0;; n++) {
        say(who, n);
        nanosleep(&ts, NULL);
    }
}

int main(int argc, char **argv) {
    self = argv[0];
    if (argc == 2 && strcmp(argv[1], "true") == 0)
        return 0;
    if (argc == 3 && strcmp(argv[1], "thread-exec") == 0)
        return thread_exec(atoi(argv[2]));
    if (argc == 2 && strcmp(argv[1], "leaf") == 0) {
        say("pid", getpid());
        sleep_forever();
    }
    if (argc == 4 && strcmp(argv[1], "build") == 0) {
        signal(SIGUSR1, on_usr1);
        node(atoi(argv[2]), atoi(argv[3]));
    }
    if (argc == 2 && strcmp(argv[1], "tick") == 0) {
        pid_t p = fork();
        if (p < 0) {
            perror("fork");
            return 9;
        }
        tick(p == 0 ? "child" : "root");
    }
    fprintf(stderr, "usage: tree build DEPTH WIDTH | tree tick | tree thread-exec N\n");
    return 2;
}
