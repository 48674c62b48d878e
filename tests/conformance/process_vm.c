/* process_vm_readv/writev between processes of one tree. picos lets the
 * writes through once they miss the target's runtime (its image and its
 * reservation): a write there is EFAULT, as for memory the program does
 * not have. The last check finds the target runtime's image in
 * /proc/PID/maps: natively there is none, and nothing to refuse. */
#include "conformance.h"

#include <signal.h>
#include <stdint.h>
#include <sys/uio.h>

static volatile uint64_t box = 1;

int main(void)
{
    conf_init();
    int ready[2], go[2];
    if (pipe(ready) != 0 || pipe(go) != 0)
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        char c = 'r';
        if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
            _exit(90);
        _exit(box == 0x1122334455667788ull ? 0 : 91);
    }
    char c;
    if (read(ready[0], &c, 1) != 1)
        return 1;

    uint64_t v = 0x1122334455667788ull, back = 0;
    struct iovec local = {&v, sizeof v}, remote = {(void *)&box, sizeof box};
    ssize_t n = process_vm_writev(pid, &local, 1, &remote, 1, 0);
    checkf("process_vm_writev_child", n == (ssize_t)sizeof v, "n %zd errno %s", n,
           errno_name(errno));
    struct iovec in = {&back, sizeof back};
    n = process_vm_readv(pid, &in, 1, &remote, 1, 0);
    check("process_vm_readv_child", n == (ssize_t)sizeof back && back == v);
    errno = 0;
    n = process_vm_writev(pid, &local, 1, &remote, 1, 1);
    check_errno("process_vm_writev_flags_einval", n, errno, EINVAL);
    struct iovec huge_l = {&v, (size_t)-1}, huge_r = {(void *)&box, (size_t)-1};
    errno = 0;
    n = process_vm_writev(pid, &huge_l, 1, &huge_r, 1, 0);
    check_errno("process_vm_writev_overflow_einval", n, errno, EINVAL);
    struct iovec bad = {(void *)8, 8};
    errno = 0;
    n = process_vm_writev(pid, &local, 1, &bad, 1, 0);
    check_errno("process_vm_writev_unmapped_efault", n, errno, EFAULT);

    /* The target's runtime image, if it has one. */
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    unsigned long start = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (strstr(line, "/memfd:picos-rt-") || strstr(line, "/picos-rt-")) {
            sscanf(line, "%lx-", &start);
            break;
        }
    }
    if (f)
        fclose(f);
    int refused = 1;
    if (start) {
        struct iovec rt = {(void *)start, 8};
        errno = 0;
        n = process_vm_writev(pid, &local, 1, &rt, 1, 0);
        refused = n == -1 && errno == EFAULT;
    }
    check("process_vm_writev_target_runtime_refused", refused);

    if (write(go[1], &c, 1) != 1)
        return 1;
    int st = wait_status(pid);
    checkf("process_vm_child_saw_write", WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
    errno = 0;
    n = process_vm_writev(pid, &local, 1, &remote, 1, 0);
    check_errno("process_vm_writev_gone_esrch", n, errno, ESRCH);
    return conf_finish("process_vm");
}
