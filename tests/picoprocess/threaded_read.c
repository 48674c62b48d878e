/* Four threads each write and read back a byte through a pipe 100,000
 * times while an interval timer fires every 50 us. With threads, glibc's read
 * goes through its cancellable path (mov 0x8(%rsp),%edi; xor %eax,%eax;
 * syscall), which picos patches with a punned jump (see patch.rs). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/time.h>
static volatile long hits;
static void h(int s){ hits++; }
static void *w(void *a){ int p[2]; pipe(p); long bad=0; char c='a'+(long)a, d;
  for(int i=0;i<100000;i++){ if(write(p[1],&c,1)!=1) bad++; if(read(p[0],&d,1)!=1||d!=c) bad++; }
  close(p[0]); close(p[1]); return (void*)bad; }
int main(){ struct sigaction sa={0}; sa.sa_handler=h; sa.sa_flags=SA_RESTART; sigaction(SIGALRM,&sa,0);
  struct itimerval it={{0,50},{0,50}}; setitimer(ITIMER_REAL,&it,0);
  pthread_t t[4]; for(long i=0;i<4;i++) pthread_create(&t[i],0,w,(void*)i);
  long bad=0; for(int i=0;i<4;i++){ void*r; pthread_join(t[i],&r); bad+=(long)r; }
  struct itimerval z={0}; setitimer(ITIMER_REAL,&z,0); printf("bad %ld hits>0 %d\n", bad, hits>0); }
