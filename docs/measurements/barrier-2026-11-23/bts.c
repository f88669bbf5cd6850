/* goal: medians of consecutive windows of 2-rank barriers, one process, to see the host state change under a running job.
 *
 *   cc -O2 bts.c $(pkg-config --cflags --libs goal) -o bts && GOAL_PROGRESS=manual goalrun -n 2 ./bts 25 40000
 *
 * Prints rank 0's median (us) of each window of N iterations, W windows. */
#define _GNU_SOURCE
#include <goal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  if(GOAL_Init())return 1; int rank=GOAL_MyRank();
  cpu_set_t c;CPU_ZERO(&c);CPU_SET(rank%2,&c);sched_setaffinity(0,sizeof c,&c);
  GOAL_Schedule s=GOAL_Barrier_init(GOAL_ALG_AUTO);
  int W=atoi(argv[1]), N=atoi(argv[2]);
  double *t=malloc(sizeof(double)*N);
  for(int w=0;w<W;w++){
    for(int i=0;i<N;i++){double a=now();GOAL_Handle h=GOAL_Run(s);GOAL_Wait(h);t[i]=now()-a;}
    qsort(t,N,sizeof(double),cmp);
    if(rank==0)printf("%.3f ",t[N/2]);fflush(stdout);
  }
  if(rank==0)printf("\n");
  GOAL_Finalize();
}
