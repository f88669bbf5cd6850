#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <x86intrin.h>
#include <unistd.h>
struct sh { _Alignas(64) _Atomic uint32_t arrived; _Alignas(64) _Atomic uint32_t gen; _Alignas(64) _Atomic uint64_t slot[8]; };
static struct sh *S; static uint32_t g;
static void sep(int n){ uint32_t a=atomic_fetch_add(&S->arrived,1)+1; g++; if(a==g*n) atomic_store(&S->gen,g); else while(atomic_load_explicit(&S->gen,memory_order_acquire)<g) __builtin_ia32_pause(); }
static int cmp(const void*a,const void*b){long x=*(long*)a,y=*(long*)b;return x<y?-1:x>y;}
volatile uint64_t local[4096];
int main(int argc,char**argv){ int K=atoi(argv[1]); int N=20000;
 S=mmap(0,4096,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0); memset(S,0,4096);
 int r = fork()==0 ? 1 : 0;
 cpu_set_t c; CPU_ZERO(&c); CPU_SET(r,&c); sched_setaffinity(0,sizeof c,&c);
 long *t=malloc(N*sizeof(long));
 for(int i=0;i<N;i++){ sep(2); unsigned long a=__rdtsc();
   if(r==1){ atomic_store_explicit(&S->slot[0],i+1,memory_order_release);
     for(int k=0;k<K;k++) local[k*8]=k;   /* K stores to distinct local lines */
   } else { while(atomic_load_explicit(&S->slot[0],memory_order_acquire)!=(uint64_t)(i+1)) __builtin_ia32_pause(); }
   t[i]=__rdtsc()-a; }
 qsort(t,N,sizeof(long),cmp); if(r==1) printf("K=%d sender median %ld cycles\n",K,t[N/2]);
 if(r==1) return 0; wait(0); return 0; }
