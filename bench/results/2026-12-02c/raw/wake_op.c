// Two sleepers woken by one process, two ways: `gcc -O2 -o wake_op wake_op.c`, then
// `./wake_op 0 WORK_US REST_US 0 0` and `./wake_op 1 WORK_US 0 PRE_US POST_US`.
// Two waiter processes sleep on a futex word each (a consumer, which then works WORK_US, and a
// producer, which works 30 us); every 2 ms the waker (the broker) wakes both, then sleeps:
//   mode 0 (what the session agent does): FUTEX_WAKE the first, spin REST_US (the rest of its
//     cycle), FUTEX_WAKE the second;
//   mode 1: spin PRE_US (the second answer's offer), then one FUTEX_WAKE_OP wakes both in one
//     system call, then spin POST_US.
// Printed: each waiter's wake-up after the first ring (p50, p90) and how often it ran on the
// waker's CPU; 400 rounds. See ../round.md.
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <stdatomic.h>
static long fx(void *a, int op, int v, void *t, void *a2, int v3){return syscall(SYS_futex,a,op,v,t,a2,v3);}
static uint64_t now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000ull+t.tv_nsec;}
typedef struct { _Atomic int word[2]; _Atomic uint64_t woke_at[2]; _Atomic int cpu[2]; _Atomic int ready[2]; _Atomic uint64_t rang_at; _Atomic uint64_t waker_back; _Atomic int stop; } S;
#define ROUNDS 400
int main(int argc,char**argv){
  int mode=atoi(argv[1]); int work_us=atoi(argv[2]); int REST=atoi(argv[3]), PRE=atoi(argv[4]), POST=atoi(argv[5]);
  S*s=mmap(0,4096,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0); memset(s,0,sizeof*s);
  for(int w=0;w<2;w++) if(!fork()){
    for(int r=0;r<ROUNDS;r++){
      int seq=atomic_load(&s->word[w]);
      atomic_store(&s->ready[w],r+1);
      while(atomic_load(&s->word[w])==seq) fx(&s->word[w],FUTEX_WAIT,seq,0,0,0);
      atomic_store(&s->woke_at[w],now()); atomic_store(&s->cpu[w],sched_getcpu());
      uint64_t end=now()+(w==0?work_us:30)*1000ull; while(now()<end);
    }
    _exit(0);
  }
  double lat[2][ROUNDS], back[ROUNDS]; int same[2]={0,0};
  for(int r=0;r<ROUNDS;r++){
    while(atomic_load(&s->ready[0])!=r+1||atomic_load(&s->ready[1])!=r+1) usleep(100);
    usleep(2000);
    uint64_t t0=now();
    atomic_fetch_add(&s->word[0],1); atomic_fetch_add(&s->word[1],1);
    int mycpu=sched_getcpu();
    if(mode==0){ fx(&s->word[0],FUTEX_WAKE,1,0,0,0); { uint64_t e=now()+REST*1000ull; while(now()<e);} fx(&s->word[1],FUTEX_WAKE,1,0,0,0);} 
    else { { uint64_t e=now()+PRE*1000ull; while(now()<e);} fx(&s->word[0],FUTEX_WAKE_OP,1,(void*)1,&s->word[1],FUTEX_OP(FUTEX_OP_ADD,0,FUTEX_OP_CMP_NE,0x7ff)); { uint64_t e=now()+POST*1000ull; while(now()<e);} }
    uint64_t t1=now();
    back[r]=(t1-t0)/1000.0;
    usleep(3000+2*work_us);
    for(int w=0;w<2;w++){ lat[w][r]=(atomic_load(&s->woke_at[w])-t0)/1000.0; if(atomic_load(&s->cpu[w])==mycpu) same[w]++; }
  }
  while(wait(0)>0);
  int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
  for(int w=0;w<2;w++){qsort(lat[w],ROUNDS,sizeof(double),cmp);printf("mode %d waiter %d: wake p50 %.1f p90 %.1f us, on waker's cpu %d/%d\n",mode,w,lat[w][ROUNDS/2],lat[w][ROUNDS*9/10],same[w],ROUNDS);}
  qsort(back,ROUNDS,sizeof(double),cmp); printf("mode %d waker's wake call(s) p50 %.1f p90 %.1f us\n",mode,back[ROUNDS/2],back[ROUNDS*9/10]);
}
