/* For `picos run --profile` (picoprocess.rs profile_tells_where_the_time_went):
 * a known mix of system calls. 20,000 getppid (served by the library OS),
 * 2,000 one-byte writes to /dev/null (host calls), one 200 ms nanosleep
 * (the host's time), and a child that makes 10 getppid and exits. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
    for (int i = 0; i < 20000; i++)
        getppid();
    int fd = open("/dev/null", O_WRONLY);
    for (int i = 0; i < 2000; i++)
        if (write(fd, "x", 1) != 1)
            return 1;
    struct timespec ts = { 0, 200 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    pid_t c = fork();
    if (c == 0) {
        for (int i = 0; i < 10; i++)
            getppid();
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
