#define _GNU_SOURCE
#include <sched.h>
#include <goal.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>
#include "/work/main/bench/separator.h"
static int cmp(const void*a,const void*b){long x=*(long*)a,y=*(long*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  GOAL_Init(); int rank=GOAL_MyRank(), n=GOAL_GroupSize();
  cpu_set_t c; CPU_ZERO(&c); CPU_SET(rank,&c); sched_setaffinity(0,sizeof c,&c);
  sep_open(argv[1], n);
  static char buf[64];
  GOAL_Graph g=GOAL_CreateGraph();
  if(rank==1) GOAL_Send(g,buf,8,0,0,GOAL_USERSPACE); else GOAL_Recv(g,buf,8,1,0,GOAL_USERSPACE);
  GOAL_Schedule s=GOAL_Compile(g);
  int N=20000; long *tr=malloc(N*8),*tw=malloc(N*8);
  for(int i=0;i<N;i++){ sep_wait(); unsigned long a=__rdtsc(); GOAL_Handle h=GOAL_Run(s); unsigned long b=__rdtsc(); GOAL_Wait(h); unsigned long d=__rdtsc(); tr[i]=b-a; tw[i]=d-b; }
  qsort(tr,N,8,cmp); qsort(tw,N,8,cmp);
  printf("rank %d: run %ld cycles, wait %ld cycles (median)\n",rank,tr[N/2],tw[N/2]);
  GOAL_Finalize(); return 0; }
